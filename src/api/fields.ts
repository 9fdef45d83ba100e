// `?fields=` (NGINX Plus's parameter): a comma-separated list of member names; the answer
// keeps only those members of the object the path reaches, in the object's own order,
// in JSON and in the text format alike. A name the object does not have is simply absent,
// as NGINX Plus has it. It is the API's, so that every transport honours it the same way.
import { ObjectNode, type StatusNode } from '../metrics/tree.js';

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

/** The object `inner` with only the members `keep` names: an object node like any other,
 * whose members are the inner object's, filtered, so that it is written, walked and
 * exported as every object is. */
export function keepFields(inner: StatusNode, keep: ReadonlySet<string>): StatusNode {
  return new ObjectNode(
    (ctx) => inner.members(ctx).filter(([name]) => keep.has(name)),
    (name, ctx) => (keep.has(name) ? inner.child(name, ctx) : undefined),
    inner.label,
    inner.flat,
    inner.textOnly,
    // Visited rather than listed: a collection's member is valid only during its visit.
    (ctx, fn) =>
      inner.visit(ctx, (name, node) => {
        if (keep.has(name)) fn(name, node);
      }),
  );
}
