// format=prometheus. Below a zone (or anything flat: connections, a slab zone) the text
// is the old flat form, one `group_field value` line per leaf, `responses_<code>` for
// response counters, and for the server branch only `generation`. Elsewhere it is
// the Prometheus exposition format that a Prometheus server scrapes: one family per
// field with HELP and TYPE, instances as labels, counters named `..._total`:
// zonal_http_server_zones_requests_total{zone="site"} 10. A branch that holds instances
// (an upstream and its peers, a sharded cache) is not flat: any branch in this form
// has the whole tree's names, and the labels of the path it is under.
//
// A histogram (zonal's `histograms` extension) is a Prometheus histogram named after its
// path with `_seconds` added: cumulative `_bucket{le="..."}` lines, `_sum` and `_count`,
// in seconds as Prometheus's conventions want, where the JSON has milliseconds.
//
// A field may carry a name of its own (shape.ts TextName), which replaces the one its path
// makes: a worker's runtime metrics are exported under prom-client's default names
// (`process_cpu_user_seconds_total{worker="0"}`), which existing dashboards query.
import type { HistogramSnapshot } from '../engine/index.js';
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

/** A histogram's sample lines, each `<suffix>{labels} value` to follow the family's
 * name: cumulative buckets with `le` in seconds, then the sum (seconds) and the count. */
function histogramSamples(h: HistogramSnapshot, labels: string): string[] {
  const pre = labels ? `${labels},` : '';
  const out: string[] = [];
  let cumulative = 0;
  for (let i = 0; i < h.buckets.length; i++) {
    cumulative += h.buckets[i];
    const le = i < h.bounds.length ? String(h.bounds[i] / 1000) : '+Inf';
    out.push(`_bucket{${pre}le="${le}"} ${cumulative}`);
  }
  const braces = labels ? `{${labels}}` : '';
  out.push(`_sum${braces} ${h.sum / 1000}`, `_count${braces} ${h.count}`);
  return out;
}

function flatLines(node: StatusNode, parts: string[], ctx: RenderContext, out: string[], only?: readonly string[]): void {
  if (node.histogram) {
    if (!only) for (const sample of histogramSamples(node.histogram, '')) out.push(`${flatName(parts)}_seconds${sample}`);
    return;
  }
  if (node.kind === 'leaf') {
    const v = node.json(ctx);
    const n = v === undefined ? undefined : numeric(node, v as Scalar);
    if (n !== undefined && (!only || only.includes(parts[parts.length - 1]))) out.push(`${flatName(parts)} ${n}`);
    return;
  }
  for (const [name, child] of node.members(ctx)) flatLines(child, [...parts, name], ctx, out, only);
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

interface Family {
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly help: string;
  readonly samples: string[];
}

// Metric names by path, shared by every instance on that path (every peer's
// selected/total is the same family): a render looks names up one segment at a time
// rather than building and cleaning a string per sample.
class NameNode {
  private readonly children = new Map<string, NameNode>();
  family?: Family;
  constructor(readonly name: string) {}

  child(segment: string): NameNode {
    let c = this.children.get(segment);
    if (!c) this.children.set(segment, (c = new NameNode(`${this.name}_${segment.replace(/[^A-Za-z0-9_:]/g, '_')}`)));
    return c;
  }
}

function labelled(node: StatusNode, at: NameNode, labels: string, ctx: RenderContext, families: Map<string, Family>): void {
  if (node.histogram) {
    let family = at.family;
    if (!family) {
      const name = node.text?.name ?? `${at.name}_seconds`;
      const help = node.text ? (node.help ?? name) : `${node.help ?? name} In seconds.`;
      family = families.get(name);
      if (!family) families.set(name, (family = { type: 'histogram', help, samples: [] }));
      at.family = family;
    }
    family.samples.push(...histogramSamples(node.histogram, labels));
    return;
  }
  if (node.kind === 'leaf') {
    if (!node.metric) return;
    // A leaf with a name of its own exports its value before rendering (a time's epoch
    // milliseconds), in the name's unit.
    const text = node.text;
    const v = text && node.raw ? node.raw(ctx) : node.json(ctx);
    let n = v === undefined ? undefined : numeric(node, v as Scalar);
    if (n === undefined) return;
    // The tree's figures have at most three decimals (thousandths of a millisecond):
    // rounded there, 827.494 ms is 0.827494 s rather than 0.8274940000000001.
    if (text?.per) n = Math.round(n * 1000) / (text.per * 1000);
    let family = at.family;
    if (!family) {
      const own = text?.name ?? at.name;
      const name = node.metric === 'counter' && !own.endsWith('_total') ? `${own}_total` : own;
      family = families.get(name);
      if (!family) families.set(name, (family = { type: node.metric, help: node.help ?? name, samples: [] }));
      at.family = family;
    }
    family.samples.push(labels ? `{${labels}} ${n}` : ` ${n}`);
    return;
  }
  const label = node.label;
  node.visit(ctx, (name, child) => {
    if (label) labelled(child, at, `${labels ? labels + ',' : ''}${label}="${escapeLabel(name)}"`, ctx, families);
    else labelled(child, at.child(name), labels, ctx, families);
  });
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
  let at = new NameNode('zonal');
  const labels: string[] = [];
  for (let i = 1; i < trail.length; i++) {
    const parent = trail[i - 1].node;
    if (parent.label) labels.push(`${parent.label}="${escapeLabel(trail[i].name)}"`);
    else at = at.child(trail[i].name);
  }
  const families = new Map<string, Family>();
  labelled(target, at, labels.join(','), ctx, families);
  const out: string[] = [];
  for (const [name, f] of families) {
    out.push(`# HELP ${name} ${escapeHelp(f.help)}\n# TYPE ${name} ${f.type}\n`);
    for (const sample of f.samples) out.push(name, sample, '\n');
  }
  return out.join('');
}
