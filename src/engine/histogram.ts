// Histograms as counter blocks: one counter per bucket and one for the sum, sharded like
// every other counter (each worker adds to its own shard, readers sum the shards), so a
// histogram is exact across workers, outlives a worker that dies, and costs an
// observation a bucket search and two plain float adds: no atomics, no IPC.
//
// Buckets are non-cumulative: bucket i counts observations v with bounds[i-1] < v <=
// bounds[i] (Prometheus's `le`), the last one everything above the last bound. The sum
// is kept in whole microseconds, so that it stays an integer, which a shard's counter
// keeps exact however long it runs (see counters.ts).
import type { CounterBlock } from './counters.js';

/** Counters a histogram of these bounds takes in its block. */
export const histogramLength = (bounds: readonly number[]): number => bounds.length + 2;

export interface HistogramSnapshot {
  /** Upper bounds in milliseconds, ascending; +Inf is implied after the last. */
  readonly bounds: readonly number[];
  /** Non-cumulative counts, bounds.length + 1 of them. */
  readonly buckets: ArrayLike<number>;
  readonly count: number;
  /** Sum of the observations, in milliseconds. */
  readonly sum: number;
}

// Whole-millisecond bounds up to this: the bucket of each whole millisecond is looked up
// in a table (a byte per millisecond) instead of searched, which costs a search's
// mispredicted branches when times vary from one request to the next.
const TABLE_MAX_MS = 65_536;
const tables = new Map<string, Uint8Array>();

/** The bucket of every whole millisecond 0..last bound, or undefined when a bound is not
 * a whole number of milliseconds (or too large): those bounds are searched. */
function tableOf(bounds: readonly number[]): Uint8Array | undefined {
  const last = bounds[bounds.length - 1] ?? 0;
  if (bounds.length === 0 || bounds.length > 255 || last > TABLE_MAX_MS || !bounds.every(Number.isInteger)) return undefined;
  const key = bounds.join(',');
  let table = tables.get(key);
  if (!table) {
    table = new Uint8Array(last + 1);
    for (let ms = 0, b = 0; ms <= last; ms++) {
      while (ms > bounds[b]) b++;
      table[ms] = b;
    }
    tables.set(key, table);
  }
  return table;
}

export class Histogram {
  readonly bounds: readonly number[];
  private readonly limits: Float64Array;
  private readonly sumIndex: number;
  /** See tableOf(); an empty array when the bounds are searched. */
  private readonly table: Uint8Array;
  /** The last bound when there is a table, else -1. */
  private readonly tableMax: number;

  constructor(
    readonly block: CounterBlock,
    bounds: readonly number[],
  ) {
    if (block.length !== histogramLength(bounds)) throw new RangeError(`a histogram of ${bounds.length} bounds needs a block of ${histogramLength(bounds)} counters, not ${block.length}`);
    this.bounds = bounds;
    this.limits = Float64Array.from(bounds);
    this.sumIndex = bounds.length + 1;
    const table = tableOf(bounds);
    this.table = table ?? new Uint8Array(0);
    this.tableMax = table ? table.length - 1 : -1;
  }

  /** Counts one observation of `ms` milliseconds (negative ones as 0). */
  observe(ms: number): void {
    // With whole-millisecond bounds, v in (k - 1, k] is in the bucket of k: ceil(v)'s.
    // The search is a method of its own so that this stays small: V8 inlines only so much
    // bytecode into the recorder that calls it, and a call with a time (a double) costs
    // more than the observation (bench/engine.ts).
    const i = ms <= this.tableMax ? (ms > 0 ? this.table[Math.ceil(ms)] : 0) : this.search(ms);
    this.block.add(i);
    // Beyond 2^52 microseconds (143 years) a time is no time: it would only spoil the sum.
    if (ms > 0 && ms < 4.5e12) this.block.add(this.sumIndex, Math.round(ms * 1000));
  }

  /** The bucket of `ms` among bounds that have no table, or above them. */
  private search(ms: number): number {
    const limits = this.limits;
    const n = limits.length;
    let i = 0;
    while (i < n && ms > limits[i]) i++;
    return i;
  }

  /** The sums of every worker's shard, read at once (consistent within each shard). */
  snapshot(): HistogramSnapshot {
    const now = this.current();
    return { bounds: this.bounds, buckets: Array.from(now.buckets), count: now.count, sum: now.sum };
  }

  /** snapshot() into this histogram's own memory, which its next current() overwrites:
   * for renderers, which write it out at once, ten thousand per answer. */
  current(): HistogramSnapshot {
    const v = this.block.sums();
    let count = 0;
    for (let i = 0; i <= this.bounds.length; i++) count += v[i];
    let s = this.reused;
    // sums() fills the same array every time: a view of it made once stays good. The
    // array itself is compared, not its `.buffer`, which V8 reads through a call.
    if (!s || this.reusedOf !== v) {
      this.reused = s = { bounds: this.bounds, buckets: v.subarray(0, this.bounds.length + 1), count: 0, sum: 0 };
      this.reusedOf = v;
    }
    s.count = count;
    s.sum = v[this.sumIndex] / 1000;
    return s;
  }

  private reused: { readonly bounds: readonly number[]; readonly buckets: Float64Array; count: number; sum: number } | undefined = undefined;
  /** The array `reused` views. */
  private reusedOf: Float64Array | undefined = undefined;
}

/**
 * The q-quantile (0 < q < 1) in milliseconds, by linear interpolation within the bucket
 * the rank falls in, the first bucket starting at 0: what Prometheus's
 * histogram_quantile() computes, so the JSON and a PromQL query agree. A rank in the +Inf
 * bucket gives the last bound (nothing better is known). Undefined when count is 0.
 */
export function quantile(s: HistogramSnapshot, q: number): number | undefined {
  if (s.count === 0) return undefined;
  const rank = q * s.count;
  let below = 0;
  for (let i = 0; i < s.buckets.length; i++) {
    const n = s.buckets[i];
    if (below + n >= rank && n > 0) {
      if (i === s.bounds.length) return s.bounds[i - 1] ?? 0;
      const low = i === 0 ? 0 : s.bounds[i - 1];
      return low + (s.bounds[i] - low) * ((rank - below) / n);
    }
    below += n;
  }
  return s.bounds[s.bounds.length - 1] ?? 0;
}
