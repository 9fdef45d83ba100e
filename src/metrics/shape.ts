// How a metric family declares its part of the status tree: each field once, with its
// JSON name, where its value comes from, whether it is present, and its metric type and
// help. The path walker, the JSON renderer and both text formats derive from these
// declarations and know nothing of any one family.
import { quantile, type Histogram, type HistogramSnapshot } from '../engine/index.js';

export type Json = number | string | boolean | null | Json[] | { [key: string]: Json };

/** What a request asks of rendering. */
export interface RenderContext {
  /** Times as epoch milliseconds instead of ISO 8601 (`date=epoch`). */
  readonly dateEpoch: boolean;
  /** The address that accepted the API request (`/status/server/address`). */
  readonly address: string;
  /** Whether the serving location has `api_config_files on`. */
  readonly configFiles: boolean;
  /** Now, in epoch milliseconds, the same for the whole response. */
  readonly now: number;
}

export type MetricType = 'counter' | 'gauge';
export type Scalar = number | string | boolean;

/**
 * A field the text format exports under a name of its own rather than the one its path
 * makes (`zonal_...`): a worker's runtime metrics (metrics/runtime.ts) take prom-client's
 * default names, which existing dashboards query. The name is the whole family name
 * (`process_cpu_user_seconds_total`); instances keep the labels of their path.
 */
export interface TextName {
  readonly name: string;
  /** JSON units per unit of the name: 1000 where the JSON has milliseconds and the name
   * seconds. */
  readonly per?: number;
}

export interface Leaf<S> {
  readonly kind: 'leaf';
  readonly name: string;
  /** The text format's own name for it (see TextName). */
  readonly text?: TextName;
  /** The value, or undefined when the field is absent for this instance. */
  value(source: S, ctx: RenderContext): Scalar | undefined;
  /** How the text format exports it; strings are exported only through `numeric`. */
  readonly metric?: MetricType;
  readonly help: string;
  /** For a Time field: the value is epoch milliseconds, rendered as ISO 8601. */
  readonly time?: boolean;
  /** For a string exported as a number (a peer's state). */
  numeric?(value: Scalar): number;
  /** The value already encoded as JSON, when the family keeps it so (a configured name
   * rendered for every one of ten thousand peers): what the byte writer uses first. */
  encoded?(source: S): Uint8Array | undefined;
}

/** An object whose keys are data, such as `responses` (codes) or cache `shards`. */
export interface Entries<S> {
  readonly kind: 'entries';
  readonly name: string;
  /** Calls `emit` for each entry now, in order. */
  entries(source: S, ctx: RenderContext, emit: (key: string, value: number) => void): void;
  readonly metric: MetricType;
  readonly help: string;
  /** The label the keys become in the text format. */
  readonly label: string;
}

export interface Group<S> {
  readonly kind: 'group';
  readonly name: string;
  readonly fields: ReadonlyArray<Field<S>>;
  /** Absent when this says so (an `ssl` object of a server that does not listen with SSL). */
  present?(source: S): boolean;
  /** Its members are instances, which the text format shows as this label's values
   * (`kind="minor"`) rather than as parts of the name: a worker's GC kinds. */
  readonly label?: string;
  /** The text format exports the group whole as this one histogram, instead of its
   * leaves: a GC kind's `{ count, time }`, which the text has with its buckets. */
  readonly histogram?: GroupHistogram<S>;
}

/** What a group's text is, when it is a histogram (see Group.histogram). */
export interface GroupHistogram<S> {
  readonly text: TextName;
  readonly help: string;
  /** Bounds in milliseconds, as every histogram's; exported in seconds. */
  snapshot(source: S): HistogramSnapshot;
}

/**
 * zonal's extension to the spec: `histograms`, an object keyed by the measured quantity
 * (`response_time`, `connect_time`, `session_time`), each a histogram in milliseconds
 * that the text format exports as a Prometheus histogram in seconds.
 */
export interface Histograms<S> {
  readonly kind: 'histograms';
  readonly name: string;
  /** Each quantity's histogram, in order; undefined when the instance has none. */
  list(source: S): ReadonlyArray<readonly [string, Histogram]> | undefined;
}

export type Field<S> = Leaf<S> | Entries<S> | Group<S> | Histograms<S>;

/** What each measured quantity is, for the text format's HELP. */
export const HISTOGRAM_HELP: Readonly<Record<string, string>> = {
  response_time: 'Response time: a zone\'s from the request\'s arrival to its last byte sent, a peer\'s as its health.response_time.',
  connect_time: 'Time to connect to the peer.',
  session_time: 'Time from connecting to the peer to the end of the session.',
};

const ms = (v: number) => Math.round(v * 1000) / 1000;

/** The percentile estimates a histogram's JSON has, by member name. */
export const HISTOGRAM_PERCENTILES: ReadonlyArray<readonly [string, number]> = [
  ['p50', 0.5],
  ['p90', 0.9],
  ['p99', 0.99],
];

/** A histogram's JSON: bounds and non-cumulative buckets, count, sum and percentile
 * estimates in milliseconds (null while empty). */
export function histogramJson(s: HistogramSnapshot): { [key: string]: Json } {
  const out: { [key: string]: Json } = { bounds: [...s.bounds], buckets: Array.from(s.buckets), count: s.count, sum: ms(s.sum) };
  for (const [name, q] of HISTOGRAM_PERCENTILES) {
    const v = quantile(s, q);
    out[name] = v === undefined ? null : ms(v);
  }
  return out;
}

export function group<S>(name: string, fields: ReadonlyArray<Field<S>>, present?: (source: S) => boolean): Group<S> {
  return { kind: 'group', name, fields, present };
}

/** A counter or gauge read from the instance's sums by index. */
export function counter<S extends { sums: Float64Array }>(name: string, index: number, help: string): Leaf<S> {
  return { kind: 'leaf', name, metric: 'counter', help, value: (s) => s.sums[index] };
}

export function gauge<S extends { sums: Float64Array }>(name: string, index: number, help: string): Leaf<S> {
  return { kind: 'leaf', name, metric: 'gauge', help, value: (s) => s.sums[index] };
}

/** Any other leaf: a configured value, a derived number, a string. */
export function leaf<S>(
  name: string,
  help: string,
  value: (source: S, ctx: RenderContext) => Scalar | undefined,
  metric?: MetricType,
): Leaf<S> {
  return { kind: 'leaf', name, help, value, metric };
}

/** A Time field: epoch milliseconds, absent while 0. */
export function time<S>(name: string, help: string, ms: (source: S, ctx: RenderContext) => number): Leaf<S> {
  return { kind: 'leaf', name, help, time: true, value: (s, ctx) => ms(s, ctx) || undefined };
}

/** An entries field's entries as a list. */
export function entryList<S>(field: Entries<S>, source: S, ctx: RenderContext): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  field.entries(source, ctx, (key, value) => out.push([key, value]));
  return out;
}

export function entries<S>(
  name: string,
  label: string,
  metric: MetricType,
  help: string,
  list: (source: S, ctx: RenderContext, emit: (key: string, value: number) => void) => void,
): Entries<S> {
  return { kind: 'entries', name, label, metric, help, entries: list };
}

/** A time as the request wants it: ISO 8601 in UTC with milliseconds, or epoch ms. */
export function renderTime(ms: number, ctx: RenderContext): Scalar {
  if (ctx.dateEpoch) return Math.round(ms);
  // Times in one response fall in a few seconds: each second is formatted once (a slot
  // per second modulo 16, as JsonWriter.isoTime keeps them).
  const t = Math.round(ms);
  const second = Math.floor(t / 1000);
  const slot = second & 15;
  if (secondOf[slot] !== second) {
    secondOf[slot] = second;
    secondText[slot] = new Date(second * 1000).toISOString().slice(0, 20);
  }
  return secondText[slot] + String(t - second * 1000).padStart(3, '0') + 'Z';
}
const secondOf = new Float64Array(16).fill(NaN);
const secondText: string[] = new Array<string>(16).fill('');

/** What an instance renders from when its fields live in a counter block. */
export interface Counted {
  /** The block's sums, read once when the instance's node is made. */
  readonly sums: Float64Array;
}

/** Lays a family's counters out in its block in declaration order: each field is
 * declared once, and its index, JSON name, type and help come from that one place. */
export class Layout<S extends Counted> {
  /** Counters the block holds. */
  size = 0;
  /** Indices of the gauges: what a process that takes over a worker slot sets to zero,
   * since the connections and requests its predecessor counted there went with it. */
  readonly gauges: number[] = [];

  counter(name: string, help: string): Leaf<S> & { readonly index: number } {
    const index = this.size++;
    return { kind: 'leaf', name, metric: 'counter', help, index, value: (s) => s.sums[index] };
  }

  gauge(name: string, help: string): Leaf<S> & { readonly index: number } {
    const index = this.size++;
    this.gauges.push(index);
    return { kind: 'leaf', name, metric: 'gauge', help, index, value: (s) => s.sums[index] };
  }

  /** `count` consecutive counters, for a field with its own way of rendering them. */
  reserve(count: number): number {
    const first = this.size;
    this.size += count;
    return first;
  }
}
