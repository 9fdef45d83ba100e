// Shared by every benchmark: timing, readable tables for people, and one JSON line for
// machines. The JSON object is always the last line of output so that a script can take
// `tail -n 1` without parsing the tables.
import { createRequire } from 'node:module';

export type Cell = string | number;

/** Wall-clock nanoseconds as a Number: exact for about 104 days, plenty for a run. */
export function nowNs(): number {
  return Number(process.hrtime.bigint());
}

/** Nanoseconds one call of `run` takes. */
export function timeNs(run: () => void): number {
  const start = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - start);
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The value at quantile q (nearest rank): p99 of 200 samples is the 198th smallest. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) throw new RangeError('quantile of no values');
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

/** Median nanoseconds of `rounds` timed calls of `run`, after `warmup` untimed ones that
 * give V8 the chance to optimise it. The median, not the mean: on a shared machine one
 * round that loses its core to another process says nothing about the code. */
export function medianNs(run: () => void, rounds: number, warmup = 2): number {
  for (let i = 0; i < warmup; i++) run();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) times.push(timeNs(run));
  return median(times);
}

/** Rounds to 2 decimals, which is all the precision a noisy benchmark has. */
export function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

/** Formats a number for a table: thousands separated; whole numbers without decimals,
 * others with exactly `digits`, so that a column's decimal points line up. */
export function fmt(x: number, digits = 2): string {
  const decimals = Number.isInteger(x) ? 0 : digits;
  return x.toLocaleString('en-US', { maximumFractionDigits: decimals, minimumFractionDigits: decimals });
}

/** Prints a titled table with aligned columns: numbers right-aligned, text left. */
export function table(title: string, columns: readonly string[], rows: readonly (readonly Cell[])[]): void {
  const text = rows.map((row) => row.map((c) => (typeof c === 'number' ? fmt(c) : c)));
  const widths = columns.map((c, i) => Math.max(c.length, ...text.map((row) => (row[i] ?? '').length)));
  const numeric = columns.map((_, i) => rows.length > 0 && rows.every((row) => typeof row[i] === 'number'));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (numeric[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  console.log(`\n${title}`);
  console.log(line(columns));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of text) console.log(line(row));
}

/** Prints the machine-readable result as the last line of output. Numbers are rounded
 * to 2 decimals; call this once, after everything else has been printed. */
export function finish(name: string, results: Record<string, number>): void {
  const rounded: Record<string, number> = {};
  for (const [key, value] of Object.entries(results)) rounded[key] = round2(value);
  console.log(JSON.stringify({ bench: name, results: rounded }));
}

/** Prints the message to stderr and ends the run as a failure: for a benchmark whose
 * measured code turned out to be wrong, whose figures would then be meaningless. */
export function fail(message: string): never {
  console.error(`FAILED: ${message}`);
  process.exit(1);
}

// autocannon 8 has no typings; what the benchmarks use of it.
export interface AutocannonResult {
  /** Seconds. */
  duration: number;
  errors: number;
  timeouts: number;
  /** Responses that failed an `expectBody` check. */
  mismatches: number;
  non2xx: number;
  '2xx': number;
  /** `sent` also counts the requests in flight when the run stopped. */
  requests: { total: number; sent: number };
  /** Response bytes read. */
  throughput: { total: number };
  latency: { p50: number; p99: number };
}
export const autocannon = createRequire(import.meta.url)('autocannon') as (options: Record<string, unknown>) => Promise<AutocannonResult>;
