// /status/workers/<slot>: zonal's extension after the spec's members, as `histograms` is
// one after a zone's fields. Each worker process samples its own Node runtime on an
// unref'd timer (runtimeMetrics()) and publishes the sample in its own shard of one gauge
// block of the status zone (GaugeBlock.publish(): plain stores into the copy no reader
// reads, then one atomic add makes it current): nothing on the request path, no lock, no
// IPC, and a reader never sees half of one sample and half of another. A reader shows one
// member per worker slot whose last sample comes from a process that is still alive.
//
// JSON has milliseconds and bytes, as the spec's fields do; the text format exports each
// field under prom-client's default metric name (collectDefaultMetrics()), in seconds and
// bytes, labelled with the worker slot, so that dashboards made for prom-client work:
// process_cpu_user_seconds_total{worker="0"}, nodejs_gc_duration_seconds_bucket{worker="0",kind="major",le="0.001"}.
// docs/runtime-metrics.md lists every field.
import { constants, monitorEventLoopDelay, performance, PerformanceObserver, type EventLoopUtilization, type IntervalHistogram } from 'node:perf_hooks';
import type { GaugeBlock, HistogramSnapshot } from '../engine/index.js';
import { group, time, type Field, type Group, type Leaf, type MetricType, type TextName } from './shape.js';
import { STATUS_ZONE, type StatusStore } from './store.js';
import { collection, FieldNode, type StatusNode } from './tree.js';

/** One worker's last sample: its shard of the block, read whole. */
interface Sample {
  readonly slot: number;
  readonly v: Float64Array;
}

// The block's layout: one number each, in this order.
let size = 0;
const next = (n = 1) => ((size += n), size - n);
const PID = next();
const STARTED = next();
const SAMPLED = next();
// Event-loop delay over the last interval (monitorEventLoopDelay), NaN without a tick.
const DELAY = { min: next(), mean: next(), max: next(), stddev: next(), p50: next(), p90: next(), p99: next() };
const LAG = next();
const UTILIZATION = next();
const HEAP_USED = next();
const HEAP_TOTAL = next();
const EXTERNAL = next();
const RSS = next();
const CPU_USER = next();
const CPU_SYSTEM = next();
const HANDLES = next();
const REQUESTS = next();
const RESOURCES = next();

/** prom-client's default GC buckets (0.001 ... 5 seconds), in milliseconds. */
export const GC_BOUNDS: readonly number[] = [1, 10, 100, 1000, 2000, 5000];
/** GC kinds as prom-client names them, by perf_hooks' constant. */
const GC_KINDS: ReadonlyArray<readonly [string, number]> = [
  ['minor', constants.NODE_PERFORMANCE_GC_MINOR],
  ['major', constants.NODE_PERFORMANCE_GC_MAJOR],
  ['incremental', constants.NODE_PERFORMANCE_GC_INCREMENTAL],
  ['weakcb', constants.NODE_PERFORMANCE_GC_WEAKCB],
];
// Per kind: non-cumulative buckets (GC_BOUNDS.length + 1), then the sum in milliseconds.
const GC_STRIDE = GC_BOUNDS.length + 2;
const GC = next(GC_KINDS.length * GC_STRIDE);
/** Numbers in a worker's sample. */
export const RUNTIME_SIZE = size;

const KEY = 'runtime';
// Two copies of a sample (see GaugeBlock.publish()).
const block = (status: StatusStore, own?: readonly number[]): GaugeBlock => status.gauges(STATUS_ZONE, KEY, 2 * RUNTIME_SIZE, own);

const thousandths = (v: number) => Math.round(v * 1000) / 1000;

/** A number of the sample; absent while NaN (a delay before the loop's first tick). */
function num(name: string, help: string, i: number, metric: MetricType, text: TextName, round = (v: number) => v): Leaf<Sample> {
  return { kind: 'leaf', name, help, metric, text, value: (s) => (Number.isNaN(s.v[i]) ? undefined : round(s.v[i])) };
}
/** Milliseconds in JSON, seconds in the text format. */
const ms = (name: string, help: string, i: number, metric: MetricType, textName: string) => num(name, help, i, metric, { name: textName, per: 1000 }, thousandths);
const bytes = (name: string, help: string, i: number, textName: string) => num(name, help, i, 'gauge', { name: textName });
const count = (name: string, help: string, i: number, textName: string) => num(name, help, i, 'gauge', { name: textName });

/** A time of the sample, epoch milliseconds: ISO 8601 in JSON as every time of the tree,
 * seconds since the epoch in the text format when it has a name there. */
function when(name: string, help: string, i: number, textName?: string): Leaf<Sample> {
  const t = time<Sample>(name, help, (s) => s.v[i]);
  return textName ? { ...t, metric: 'gauge', text: { name: textName, per: 1000 } } : t;
}

const lag = (name: keyof typeof DELAY, help: string) => ms(name, help, DELAY[name], 'gauge', `nodejs_eventloop_lag_${name}_seconds`);

const GC_HELP = 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.';

function gcKind(name: string, k: number): Group<Sample> {
  const first = GC + k * GC_STRIDE;
  const buckets = GC_BOUNDS.length + 1;
  const countOf = (s: Sample) => {
    let n = 0;
    for (let i = 0; i < buckets; i++) n += s.v[first + i];
    return n;
  };
  return {
    kind: 'group',
    name,
    fields: [
      { kind: 'leaf', name: 'count', help: 'Collections of this kind.', value: countOf },
      { kind: 'leaf', name: 'time', help: 'Time spent in collections of this kind, in milliseconds.', value: (s) => thousandths(s.v[first + buckets]) },
    ],
    histogram: {
      text: { name: 'nodejs_gc_duration_seconds' },
      help: GC_HELP,
      snapshot: (s): HistogramSnapshot => ({ bounds: GC_BOUNDS, buckets: s.v.subarray(first, first + buckets), count: countOf(s), sum: thousandths(s.v[first + buckets]) }),
    },
  };
}

const delayFields = group<Sample>(
  'delay',
  [
    lag('min', 'The minimum recorded event loop delay.'),
    lag('mean', 'The mean of the recorded event loop delays.'),
    lag('max', 'The maximum recorded event loop delay.'),
    lag('stddev', 'The standard deviation of the recorded event loop delays.'),
    lag('p50', 'The 50th percentile of the recorded event loop delays.'),
    lag('p90', 'The 90th percentile of the recorded event loop delays.'),
    lag('p99', 'The 99th percentile of the recorded event loop delays.'),
  ],
  (s) => !Number.isNaN(s.v[DELAY.max]),
);

/** A worker's member, as declared once for the JSON and the text format. HELP texts are
 * prom-client's where the name is. */
export const workerFields: Group<Sample> = group('', [
  { kind: 'leaf', name: 'pid', help: 'Process ID of the worker.', value: (s) => s.v[PID] },
  when('started', 'Start time of the process since unix epoch in seconds.', STARTED, 'process_start_time_seconds'),
  group('event_loop', [
    delayFields,
    ms('lag', 'Lag of event loop in seconds.', LAG, 'gauge', 'nodejs_eventloop_lag_seconds'),
    num('utilization', 'Event loop utilization over the last sampling interval, 0 to 1 (performance.eventLoopUtilization()).', UTILIZATION, 'gauge', { name: 'nodejs_eventloop_utilization' }, (v) => Math.round(v * 10_000) / 10_000),
  ]),
  { ...group('gc', GC_KINDS.map(([name], k) => gcKind(name, k))), label: 'kind' } satisfies Field<Sample>,
  group('heap', [
    bytes('used', 'Process heap size used from Node.js in bytes.', HEAP_USED, 'nodejs_heap_size_used_bytes'),
    bytes('total', 'Process heap size from Node.js in bytes.', HEAP_TOTAL, 'nodejs_heap_size_total_bytes'),
    bytes('external', 'Node.js external memory size in bytes.', EXTERNAL, 'nodejs_external_memory_bytes'),
  ]),
  bytes('rss', 'Resident memory size in bytes.', RSS, 'process_resident_memory_bytes'),
  group('cpu', [
    ms('user', 'Total user CPU time spent in seconds.', CPU_USER, 'counter', 'process_cpu_user_seconds_total'),
    ms('system', 'Total system CPU time spent in seconds.', CPU_SYSTEM, 'counter', 'process_cpu_system_seconds_total'),
    {
      kind: 'leaf',
      name: 'total',
      help: 'Total user and system CPU time spent in seconds.',
      metric: 'counter',
      text: { name: 'process_cpu_seconds_total', per: 1000 },
      value: (s) => thousandths(s.v[CPU_USER] + s.v[CPU_SYSTEM]),
    },
  ]),
  // prom-client's `nodejs_active_handles_total` (and _requests_, _resources_) are gauges
  // named `_total`, which `promtool check metrics` refuses: these are its by-type families
  // without the type, whose sum over `type` is that total.
  count('handles', 'Number of active libuv handles.', HANDLES, 'nodejs_active_handles'),
  count('requests', 'Number of active libuv requests.', REQUESTS, 'nodejs_active_requests'),
  count('resources', 'Number of active resources that are currently keeping the event loop alive.', RESOURCES, 'nodejs_active_resources'),
  when('sampled', 'Time of the sample shown.', SAMPLED),
]);

/** Whether process `pid` is alive: a worker killed without stopping its sampler leaves its
 * last sample behind, which no reader should show as a worker. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The workers' samples now: slots whose last sample was written by a live process. */
function samples(status: StatusStore): Sample[] {
  const b = block(status);
  const out: Sample[] = [];
  const slots = b.writtenSlots();
  for (let i = 0; i < slots.length; i++) {
    const v = b.published(slots[i]);
    if (v[PID] > 0 && alive(v[PID])) out.push({ slot: slots[i], v });
  }
  return out;
}

/** /status/workers: one member per sampling worker, named by its slot (label `worker`). */
export function workersNode(status: StatusStore): StatusNode {
  return collection(
    'worker',
    () => samples(status),
    (s) => String(s.slot),
    (s) => new FieldNode(workerFields, s),
    { fields: workerFields, fill: (s) => s },
  );
}

export interface RuntimeMetricsOptions {
  /** Milliseconds between samples: what `delay` and `utilization` cover (default 1000). */
  intervalMs?: number;
  /** monitorEventLoopDelay()'s resolution in milliseconds (default 10, prom-client's):
   * the delays include it, as prom-client's do. */
  resolutionMs?: number;
}

export interface RuntimeMetrics {
  /** Takes a sample now (the timer takes one every interval). */
  sample(): void;
  /** Stops sampling, and takes this worker's member out of the tree. */
  stop(): void;
}

// Blocks sampled by this process: two samplers would write one shard.
const sampling = new WeakSet<GaugeBlock>();

/**
 * Samples this process's Node runtime every `intervalMs` on an unref'd timer, into its
 * own shard of the status zone's runtime block, where `/status/workers/<slot>` shows it
 * when the catalog has `runtime: true`. Each worker calls it once, after attaching to the
 * status (it needs a worker slot: `writer: true`). Nothing runs on the request path: the
 * event-loop delay histogram and the GC observer are Node's, and the timer reads them.
 */
export function runtimeMetrics(status: StatusStore, options: RuntimeMetricsOptions = {}): RuntimeMetrics {
  const intervalMs = options.intervalMs ?? 1000;
  const resolution = options.resolutionMs ?? 10;
  if (!(Number.isFinite(intervalMs) && intervalMs >= 1)) throw new RangeError(`intervalMs must be a number of milliseconds of at least 1, not ${intervalMs}`);
  if (!(Number.isInteger(resolution) && resolution >= 1)) throw new RangeError(`resolutionMs must be a whole number of milliseconds of at least 1, not ${resolution}`);
  // Both copies start from zero: a worker killed in this slot left its last sample.
  const all = Array.from({ length: 2 * RUNTIME_SIZE }, (_, i) => i);
  const b = block(status, all);
  if (b.slot < 0) throw new Error('runtime metrics need a worker slot: attach to the status with writer: true');
  if (sampling.has(b)) throw new Error('runtime metrics are sampled in this process already: stop() the first sampler before starting another');
  sampling.add(b);

  const v = new Float64Array(RUNTIME_SIZE);
  v[PID] = process.pid;
  v[STARTED] = performance.timeOrigin;
  v[LAG] = NaN;
  const gc = v.subarray(GC, GC + GC_KINDS.length * GC_STRIDE);
  const kindAt = new Map(GC_KINDS.map(([, constant], k) => [constant, k]));

  const delay: IntervalHistogram = monitorEventLoopDelay({ resolution });
  delay.enable();
  // Utilisation since the last sample; the first sample's is since the loop started, as
  // its interval is none.
  let elu: EventLoopUtilization | undefined;
  // GC entries as Node reports them (a little after each collection), counted here until
  // the next sample: prom-client's histogram, per kind.
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const k = kindAt.get(((entry as { detail?: { kind?: number } }).detail)?.kind ?? -1);
      if (k === undefined) continue;
      const first = k * GC_STRIDE;
      let i = 0;
      while (i < GC_BOUNDS.length && entry.duration > GC_BOUNDS[i]) i++;
      gc[first + i]++;
      gc[first + GC_BOUNDS.length + 1] += entry.duration;
    }
  });
  observer.observe({ entryTypes: ['gc'] });

  // Node's own internals, as prom-client reads them; typed here since @types/node does not.
  const internals = process as unknown as { _getActiveHandles?: () => unknown[]; _getActiveRequests?: () => unknown[] };
  let lagFrom = 0n;
  const lagged = () => (v[LAG] = Number(process.hrtime.bigint() - lagFrom) / 1e6);

  const sample = () => {
    v[SAMPLED] = Date.now();
    if (delay.count > 0) {
      v[DELAY.min] = delay.min / 1e6;
      v[DELAY.mean] = delay.mean / 1e6;
      v[DELAY.max] = delay.max / 1e6;
      v[DELAY.stddev] = delay.stddev / 1e6;
      v[DELAY.p50] = delay.percentile(50) / 1e6;
      v[DELAY.p90] = delay.percentile(90) / 1e6;
      v[DELAY.p99] = delay.percentile(99) / 1e6;
    } else for (const i of Object.values(DELAY)) v[i] = NaN;
    delay.reset();
    const now = performance.eventLoopUtilization();
    v[UTILIZATION] = (elu ? performance.eventLoopUtilization(now, elu) : now).utilization || 0;
    elu = now;
    const mem = process.memoryUsage();
    v[HEAP_USED] = mem.heapUsed;
    v[HEAP_TOTAL] = mem.heapTotal;
    v[EXTERNAL] = mem.external;
    v[RSS] = mem.rss;
    const cpu = process.cpuUsage();
    v[CPU_USER] = cpu.user / 1000;
    v[CPU_SYSTEM] = cpu.system / 1000;
    const resources = process.getActiveResourcesInfo().length;
    v[HANDLES] = internals._getActiveHandles?.().length ?? resources;
    v[REQUESTS] = internals._getActiveRequests?.().length ?? 0;
    v[RESOURCES] = resources;
    b.publish(v);
    // prom-client's lag: how long an immediate waits from here, shown with the next sample.
    lagFrom = process.hrtime.bigint();
    setImmediate(lagged).unref();
  };

  sample();
  const timer = setInterval(sample, intervalMs).unref();
  let stopped = false;
  return {
    sample: () => {
      if (!stopped) sample();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      delay.disable();
      observer.disconnect();
      // pid 0: no member for this slot until another sampler writes one.
      b.publish(new Float64Array(RUNTIME_SIZE));
      sampling.delete(b);
    },
  };
}
