// format=prometheus. Below a zone (or anything flat: connections, a slab zone) the text
// is the old flat form, one `group_field value` line per leaf, `responses_<code>` for
// response counters, and for the server branch only `generation`. Above zones it is
// the Prometheus exposition format that a Prometheus server scrapes: one family per
// field with HELP and TYPE, instances as labels, counters named `..._total`:
// zonal_http_server_zones_requests_total{zone="site"} 10.
import type { RenderContext, Scalar } from '../metrics/shape.js';
import type { StatusNode } from '../metrics/tree.js';

export const TEXT_CONTENT_TYPE = 'text/plain; version=0.0.4';

export interface Step {
  readonly name: string;
  readonly node: StatusNode;
}

function numeric(node: StatusNode, value: Scalar): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  return node.numeric ? node.numeric(value) : undefined;
}

function flatName(parts: readonly string[]): string {
  return parts.join('_').replace(/[^A-Za-z0-9_:]/g, '_');
}

function flatLines(node: StatusNode, parts: string[], ctx: RenderContext, out: string[], only?: readonly string[]): void {
  if (node.kind === 'leaf') {
    const v = node.json(ctx);
    const n = v === undefined ? undefined : numeric(node, v as Scalar);
    if (n !== undefined && (!only || only.includes(parts[parts.length - 1]))) out.push(`${flatName(parts)} ${n}`);
    return;
  }
  for (const [name, child] of node.members(ctx)) flatLines(child, [...parts, name], ctx, out, only);
}

interface Family {
  readonly type: 'counter' | 'gauge';
  readonly help: string;
  readonly samples: string[];
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function labelled(node: StatusNode, parts: string[], labels: Array<[string, string]>, ctx: RenderContext, families: Map<string, Family>): void {
  if (node.kind === 'leaf') {
    if (!node.metric) return;
    const v = node.json(ctx);
    const n = v === undefined ? undefined : numeric(node, v as Scalar);
    if (n === undefined) return;
    let name = 'zonal_' + parts.join('_').replace(/[^A-Za-z0-9_:]/g, '_');
    if (node.metric === 'counter' && !name.endsWith('_total')) name += '_total';
    let family = families.get(name);
    if (!family) families.set(name, (family = { type: node.metric, help: node.help ?? name, samples: [] }));
    const set = labels.length ? `{${labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}` : '';
    family.samples.push(`${name}${set} ${n}`);
    return;
  }
  for (const [name, child] of node.members(ctx)) {
    if (node.label) labelled(child, parts, [...labels, [node.label, name]], ctx, families);
    else labelled(child, [...parts, name], labels, ctx, families);
  }
}

/** The text of the node at the end of `trail` (trail[0] is the /status root). */
export function exposition(trail: readonly Step[], ctx: RenderContext): string {
  const flatAt = trail.findIndex((s) => s.node.flat);
  const target = trail[trail.length - 1].node;
  if (flatAt >= 0) {
    const lines: string[] = [];
    const rel = trail.slice(flatAt + 1).map((s) => s.name);
    flatLines(target, rel, ctx, lines, trail[flatAt].node.textOnly);
    return lines.length ? lines.join('\n') + '\n' : '';
  }
  const parts: string[] = [];
  const labels: Array<[string, string]> = [];
  for (let i = 1; i < trail.length; i++) {
    const parent = trail[i - 1].node;
    if (parent.label) labels.push([parent.label, trail[i].name]);
    else parts.push(trail[i].name);
  }
  const families = new Map<string, Family>();
  labelled(target, parts, labels, ctx, families);
  let out = '';
  for (const [name, f] of families)
    out += `# HELP ${name} ${escapeHelp(f.help)}\n# TYPE ${name} ${f.type}\n${f.samples.join('\n')}\n`;
  return out;
}
