// `?fields=` (NGINX Plus's parameter): a comma-separated list of member names; the answer
// keeps only those members of the object the path reaches, in the object's own order,
// in JSON and in the text format alike. A name the object does not have is simply absent,
// as NGINX Plus has it. It is the API's, so that every transport honours it the same way.
import type { JsonWriter } from '../metrics/json.js';
import type { Json, RenderContext } from '../metrics/shape.js';
import { FieldNode, type StatusNode } from '../metrics/tree.js';

/** Longer lists are no one's query: the longest member names are zone names. */
export const FIELDS_MAX_CHARS = 4096;
export const FIELDS_MAX_NAMES = 256;

/** The names of a `fields` value, or why it is refused. */
export function parseFields(value: string): ReadonlySet<string> | { error: string } {
  if (value.length > FIELDS_MAX_CHARS) return { error: `The "fields" argument is ${value.length} characters long: at most ${FIELDS_MAX_CHARS} are taken.` };
  const names = value.split(',').filter((n) => n !== '');
  if (names.length === 0) return { error: 'The "fields" argument names no member: give a comma-separated list of member names, such as "fields=state,selected".' };
  if (names.length > FIELDS_MAX_NAMES) return { error: `The "fields" argument names ${names.length} members: at most ${FIELDS_MAX_NAMES} are taken.` };
  return new Set(names);
}

/** The object `inner` with only the members `keep` names. */
export class FieldsNode implements StatusNode {
  readonly kind = 'object';
  readonly label?: string;
  readonly flat?: boolean;
  readonly textOnly?: readonly string[];

  constructor(
    private readonly inner: StatusNode,
    private readonly keep: ReadonlySet<string>,
  ) {
    this.label = inner.label;
    this.flat = inner.flat;
    this.textOnly = inner.textOnly;
  }

  members(ctx: RenderContext): Array<[string, StatusNode]> {
    return this.inner.members(ctx).filter(([name]) => this.keep.has(name));
  }

  child(name: string, ctx: RenderContext): StatusNode | undefined {
    return this.keep.has(name) ? this.inner.child(name, ctx) : undefined;
  }

  visit(ctx: RenderContext, fn: (name: string, node: StatusNode) => void): void {
    this.inner.visit(ctx, (name, node) => {
      if (this.keep.has(name)) fn(name, node);
    });
  }

  json(ctx: RenderContext): Json {
    const out: { [key: string]: Json } = {};
    for (const [name, node] of this.members(ctx)) {
      const v = node.json(ctx);
      if (v !== undefined) out[name] = v;
    }
    return out;
  }

  write(w: JsonWriter, depth: number, ctx: RenderContext): boolean {
    w.open();
    let first = true;
    // Members are written as they are visited: a collection's member is valid only then.
    this.visit(ctx, (name, node) => {
      if (node instanceof FieldNode && !node.present(ctx)) return;
      w.key(name, depth + 1, first);
      node.write(w, depth + 1, ctx);
      first = false;
    });
    w.close(depth, first);
    return true;
  }
}
