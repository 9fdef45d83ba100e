// npm run bench -- engine: what one "full request record" costs with zonal's counters,
// next to a plain Float64Array (the floor), Atomics (the obvious shared-memory way) and
// prom-client (what a Node server typically uses), and how the record rate scales from
// one worker process to two writing the same zone. Then what a histogram observation
// costs (a response time into zonal's sharded buckets, against prom-client's
// Histogram.observe), and a full record with the three observations a proxied request
// makes (server zone, location zone, peer) against one without.
//
// A full request record is 12 counter updates: for the server zone and the location
// zone each, requests +1, responses[code] +1, received +bytes, sent +bytes; for the
// upstream peer, selected +1, responses[code] +1, received +bytes, sent +bytes.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import client from 'prom-client';
import { Histogram, histogramLength, Zone, WORKER_SLOT_ENV, type CounterBlock } from '../src/engine/index.js';
import { fail, finish, fmt, median, medianNs, nowNs, table } from './report.js';

// ---- The record, shared by every implementation -------------------------------------

// Six codes, so that consecutive records hit different counters.
const CODES = [200, 204, 301, 304, 404, 502];
// Block layout: requests (or selected) first, one counter per code, then the bytes.
const TOTAL = 0;
const FIRST_CODE = 1;
const RECEIVED = FIRST_CODE + CODES.length;
const SENT = RECEIVED + 1;
const K = SENT + 1;

// code → counter index, as a server would map a status it has just sent.
const CODE_INDEX = new Int32Array(600);
CODES.forEach((code, i) => (CODE_INDEX[code] = FIRST_CODE + i));
const CODE_OF = Int32Array.from(CODES);

// Status and sizes derived from the loop index, so V8 cannot fold any of them into a
// constant. These are tiny and V8 inlines them into each loop alike.
function indexOfCode(i: number): number {
  return CODE_INDEX[CODE_OF[i % CODES.length]];
}
function receivedBytes(i: number): number {
  return Math.imul(i, 40503) & 0xffff;
}
function sentBytes(i: number): number {
  return Math.imul(i ^ 0x5bd1, 31337) & 0xffff;
}

/** The three blocks one record writes, whatever they are made of. */
interface Blocks<B> {
  server: B;
  location: B;
  upstream: B;
}

/** What a loop of n records must have added to each block, counter by counter. */
const expectedCache = new Map<number, Float64Array>();
function expectedFor(n: number): Float64Array {
  let sums = expectedCache.get(n);
  if (sums) return sums;
  sums = new Float64Array(K);
  for (let i = 0; i < n; i++) {
    sums[TOTAL] += 1;
    sums[indexOfCode(i)] += 1;
    sums[RECEIVED] += receivedBytes(i);
    sums[SENT] += sentBytes(i);
  }
  expectedCache.set(n, sums);
  return sums;
}

/** Expected sums after `runs` loops of n records each. */
function expectedAfter(n: number, runs: number): Float64Array {
  return expectedFor(n).map((x) => x * runs);
}

/** Exits 1 unless every counter of every block holds what the loops added. `wrap`
 * maps an expected sum to what a counter of limited width can hold. */
function verify(impl: string, actual: Blocks<ArrayLike<number>>, expected: Float64Array, wrap = (x: number) => x): void {
  for (const part of ['server', 'location', 'upstream'] as const)
    for (let i = 0; i < K; i++)
      if (actual[part][i] !== wrap(expected[i]))
        fail(`${impl}: ${part} counter ${i} is ${actual[part][i]}, the loop added ${wrap(expected[i])}`);
}

// ---- The implementations: one loop each, identical in shape -------------------------
// Each loop is its own function so that V8 optimises (and, if it must, deoptimises)
// each one on its own type feedback.

function recordZonal(b: Blocks<CounterBlock>, n: number): void {
  const { server, location, upstream } = b;
  for (let i = 0; i < n; i++) {
    const code = indexOfCode(i);
    const rx = receivedBytes(i);
    const tx = sentBytes(i);
    server.add(TOTAL);
    server.add(code);
    server.add(RECEIVED, rx);
    server.add(SENT, tx);
    location.add(TOTAL);
    location.add(code);
    location.add(RECEIVED, rx);
    location.add(SENT, tx);
    upstream.add(TOTAL);
    upstream.add(code);
    upstream.add(RECEIVED, rx);
    upstream.add(SENT, tx);
  }
}

function recordPlain(b: Blocks<Float64Array>, n: number): void {
  const { server, location, upstream } = b;
  for (let i = 0; i < n; i++) {
    const code = indexOfCode(i);
    const rx = receivedBytes(i);
    const tx = sentBytes(i);
    server[TOTAL] += 1;
    server[code] += 1;
    server[RECEIVED] += rx;
    server[SENT] += tx;
    location[TOTAL] += 1;
    location[code] += 1;
    location[RECEIVED] += rx;
    location[SENT] += tx;
    upstream[TOTAL] += 1;
    upstream[code] += 1;
    upstream[RECEIVED] += rx;
    upstream[SENT] += tx;
  }
}

// Int32Array, the cheapest width Atomics.add takes: a BigInt64Array would add a BigInt
// allocation per byte count and measure BigInt rather than atomics. The byte sums wrap
// at 2^32, which the verification allows for.
function recordAtomics(b: Blocks<Int32Array>, n: number): void {
  const { server, location, upstream } = b;
  for (let i = 0; i < n; i++) {
    const code = indexOfCode(i);
    const rx = receivedBytes(i);
    const tx = sentBytes(i);
    Atomics.add(server, TOTAL, 1);
    Atomics.add(server, code, 1);
    Atomics.add(server, RECEIVED, rx);
    Atomics.add(server, SENT, tx);
    Atomics.add(location, TOTAL, 1);
    Atomics.add(location, code, 1);
    Atomics.add(location, RECEIVED, rx);
    Atomics.add(location, SENT, tx);
    Atomics.add(upstream, TOTAL, 1);
    Atomics.add(upstream, code, 1);
    Atomics.add(upstream, RECEIVED, rx);
    Atomics.add(upstream, SENT, tx);
  }
}

/** prom-client children bound to their labels once, as a careful server would. */
interface PromBlock {
  requests: client.Counter.Internal;
  /** By counter index minus FIRST_CODE. */
  responses: client.Counter.Internal[];
  received: client.Counter.Internal;
  sent: client.Counter.Internal;
}

function recordPromClient(b: Blocks<PromBlock>, n: number): void {
  const { server, location, upstream } = b;
  for (let i = 0; i < n; i++) {
    const code = indexOfCode(i);
    const rx = receivedBytes(i);
    const tx = sentBytes(i);
    server.requests.inc();
    server.responses[code - FIRST_CODE].inc();
    server.received.inc(rx);
    server.sent.inc(tx);
    location.requests.inc();
    location.responses[code - FIRST_CODE].inc();
    location.received.inc(rx);
    location.sent.inc(tx);
    upstream.requests.inc();
    upstream.responses[code - FIRST_CODE].inc();
    upstream.received.inc(rx);
    upstream.sent.inc(tx);
  }
}

// ---- Setting each one up, and reading its totals back -------------------------------

function zonalBlocks(zone: Zone): Blocks<CounterBlock> {
  return {
    server: zone.counters('server:site', K),
    location: zone.counters('location:site/api', K),
    upstream: zone.counters('upstream:backend/10.0.0.1:8080', K),
  };
}

function zonalTotals(b: Blocks<CounterBlock>): Blocks<Float64Array> {
  return { server: b.server.values(), location: b.location.values(), upstream: b.upstream.values() };
}

function plainBlocks(): Blocks<Float64Array> {
  return { server: new Float64Array(K), location: new Float64Array(K), upstream: new Float64Array(K) };
}

function atomicBlocks(): Blocks<Int32Array> {
  const shared = () => new Int32Array(new SharedArrayBuffer(K * 4));
  return { server: shared(), location: shared(), upstream: shared() };
}

const ZONE_LABELS = ['zone'] as const;
const PEER_LABELS = ['upstream', 'peer'] as const;

/** Counters named and labelled as a Prometheus exporter of the same figures would. */
function promClientBlocks(registry: client.Registry): Blocks<PromBlock> {
  const counter = (name: string, labelNames: readonly string[]) =>
    new client.Counter({ name, help: name, labelNames, registers: [registry] });
  const zone = {
    requests: counter('zonal_zone_requests_total', ZONE_LABELS),
    responses: counter('zonal_zone_responses_total', [...ZONE_LABELS, 'code']),
    received: counter('zonal_zone_received_bytes_total', ZONE_LABELS),
    sent: counter('zonal_zone_sent_bytes_total', ZONE_LABELS),
  };
  const peer = {
    requests: counter('zonal_upstream_selected_total', PEER_LABELS),
    responses: counter('zonal_upstream_responses_total', [...PEER_LABELS, 'code']),
    received: counter('zonal_upstream_received_bytes_total', PEER_LABELS),
    sent: counter('zonal_upstream_sent_bytes_total', PEER_LABELS),
  };
  const bind = (metrics: typeof zone, labels: Record<string, string>): PromBlock => ({
    requests: metrics.requests.labels(labels),
    responses: CODES.map((code) => metrics.responses.labels({ ...labels, code: String(code) })),
    received: metrics.received.labels(labels),
    sent: metrics.sent.labels(labels),
  });
  return {
    server: bind(zone, { zone: 'site' }),
    location: bind(zone, { zone: 'site/api' }),
    upstream: bind(peer, { upstream: 'backend', peer: '10.0.0.1:8080' }),
  };
}

/** The registry's own view of the counters, the way a scrape would read them. */
async function promClientTotals(registry: client.Registry): Promise<Blocks<Float64Array>> {
  const metrics = await registry.getMetricsAsJSON();
  const read = (prefix: string, match: Record<string, string>): Float64Array => {
    const sums = new Float64Array(K);
    const value = (suffix: string, extra: Record<string, string> = {}): number => {
      const metric = metrics.find((m) => m.name === `${prefix}_${suffix}`);
      const want = { ...match, ...extra };
      const found = metric?.values.find((v) => Object.entries(want).every(([k, x]) => v.labels[k] === x));
      return found?.value ?? Number.NaN;
    };
    sums[TOTAL] = value(prefix === 'zonal_zone' ? 'requests_total' : 'selected_total');
    CODES.forEach((code, i) => (sums[FIRST_CODE + i] = value('responses_total', { code: String(code) })));
    sums[RECEIVED] = value('received_bytes_total');
    sums[SENT] = value('sent_bytes_total');
    return sums;
  };
  return {
    server: read('zonal_zone', { zone: 'site' }),
    location: read('zonal_zone', { zone: 'site/api' }),
    upstream: read('zonal_upstream', { upstream: 'backend', peer: '10.0.0.1:8080' }),
  };
}

// ---- Single-process cost per record -------------------------------------------------

const ROUNDS = 7;
const WARMUP = 2;
// Every loop run, warm-up or timed, adds to the counters that are verified afterwards.
const RUNS = ROUNDS + WARMUP;
// Records per timed round: enough for tens of milliseconds or more per round, few enough
// that the slow implementations do not take the whole time budget.
const RECORDS = { zonal: 10_000_000, plain: 10_000_000, atomics: 2_000_000, promclient: 200_000 };

/** Median ns per record of `loop` over the timed rounds. */
function nsPerRecord(n: number, loop: (n: number) => void): number {
  return medianNs(() => loop(n), ROUNDS, WARMUP) / n;
}

function measureZonal(zone: Zone): number {
  const blocks = zonalBlocks(zone);
  const ns = nsPerRecord(RECORDS.zonal, (n) => recordZonal(blocks, n));
  verify('zonal', zonalTotals(blocks), expectedAfter(RECORDS.zonal, RUNS));
  return ns;
}

function measurePlain(): number {
  const blocks = plainBlocks();
  const ns = nsPerRecord(RECORDS.plain, (n) => recordPlain(blocks, n));
  verify('plain', blocks, expectedAfter(RECORDS.plain, RUNS));
  return ns;
}

function measureAtomics(): number {
  const blocks = atomicBlocks();
  const ns = nsPerRecord(RECORDS.atomics, (n) => recordAtomics(blocks, n));
  verify('atomics', blocks, expectedAfter(RECORDS.atomics, RUNS), (x) => x | 0);
  return ns;
}

async function measurePromClient(): Promise<number> {
  const registry = new client.Registry();
  const blocks = promClientBlocks(registry);
  const ns = nsPerRecord(RECORDS.promclient, (n) => recordPromClient(blocks, n));
  verify('prom-client', await promClientTotals(registry), expectedAfter(RECORDS.promclient, RUNS));
  return ns;
}

// ---- Histograms ---------------------------------------------------------------------

// zonal's default bounds (ms), and the same in seconds for prom-client.
const BOUNDS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];
const BOUNDS_S = BOUNDS_MS.map((b) => b / 1000);
const OBSERVATIONS = { zonal: 10_000_000, promclient: 1_000_000 };

/** A response time in ms from the loop index, spread over 0-300 ms: most buckets. */
function responseMs(i: number): number {
  return ((Math.imul(i, 40503) & 0xffff) / 65536) * 300;
}

function observeZonal(h: Histogram, n: number): void {
  for (let i = 0; i < n; i++) h.observe(responseMs(i));
}

function observePromClient(h: client.Histogram.Internal<string>, n: number): void {
  for (let i = 0; i < n; i++) h.observe(responseMs(i) / 1000);
}

// The full record as the server makes it, a call per zone (HttpZone.responseSent,
// Peer.responded), with and without the zone's response time observed. (Written as one
// function of 12 adds and 3 observations, the loop outgrows what V8 inlines into one
// function, and the calls it then makes cost several times the observations.)
function recordOneZone(block: CounterBlock, code: number, rx: number, tx: number): void {
  block.add(TOTAL);
  block.add(code);
  block.add(RECEIVED, rx);
  block.add(SENT, tx);
}

function recordOneZoneObserved(block: CounterBlock, h: Histogram, code: number, rx: number, tx: number, ms: number): void {
  block.add(TOTAL);
  block.add(code);
  block.add(RECEIVED, rx);
  block.add(SENT, tx);
  h.observe(ms);
}

function recordZonalByZone(b: Blocks<CounterBlock>, n: number): void {
  const { server, location, upstream } = b;
  for (let i = 0; i < n; i++) {
    const code = indexOfCode(i);
    const rx = receivedBytes(i);
    const tx = sentBytes(i);
    recordOneZone(server, code, rx, tx);
    recordOneZone(location, code, rx, tx);
    recordOneZone(upstream, code, rx, tx);
  }
}

function recordZonalWithHistograms(b: Blocks<CounterBlock>, h: Blocks<Histogram>, n: number): void {
  const { server, location, upstream } = b;
  const hs = h.server;
  const hl = h.location;
  const hu = h.upstream;
  for (let i = 0; i < n; i++) {
    const code = indexOfCode(i);
    const rx = receivedBytes(i);
    const tx = sentBytes(i);
    const ms = responseMs(i);
    recordOneZoneObserved(server, hs, code, rx, tx, ms);
    recordOneZoneObserved(location, hl, code, rx, tx, ms);
    recordOneZoneObserved(upstream, hu, code, rx, tx, ms);
  }
}

interface HistogramCosts {
  observeZonal: number;
  observePromClient: number;
  recordWith: number;
  /** The record without histograms, measured beside recordWith (same blocks, same run). */
  recordWithout: number;
}

async function measureHistograms(zone: Zone): Promise<HistogramCosts> {
  const zonalHistogram = (key: string) => new Histogram(zone.counters(key, histogramLength(BOUNDS_MS)), BOUNDS_MS);
  const one = zonalHistogram('histogram:bench');
  const observeZonalNs = nsPerRecord(OBSERVATIONS.zonal, (n) => observeZonal(one, n));
  if (one.snapshot().count !== OBSERVATIONS.zonal * RUNS) fail(`zonal histogram: ${one.snapshot().count} observations, the loops made ${OBSERVATIONS.zonal * RUNS}`);

  const registry = new client.Registry();
  const prom = new client.Histogram({ name: 'zonal_response_seconds', help: 'x', labelNames: ['zone'], buckets: BOUNDS_S, registers: [registry] });
  const child = prom.labels({ zone: 'site' });
  const observePromNs = nsPerRecord(OBSERVATIONS.promclient, (n) => observePromClient(child, n));
  const count = (await prom.get()).values.find((v) => v.metricName === 'zonal_response_seconds_count')?.value;
  if (count !== OBSERVATIONS.promclient * RUNS) fail(`prom-client histogram: ${count} observations, the loops made ${OBSERVATIONS.promclient * RUNS}`);

  // With and without, on blocks of their own, alternating rounds so that a slow spell of
  // the machine falls on both.
  const plainBlocks = zonalBlocksNamed(zone, 'nohist');
  const histBlocks = zonalBlocksNamed(zone, 'hist');
  const h = { server: zonalHistogram('histogram:server'), location: zonalHistogram('histogram:location'), upstream: zonalHistogram('histogram:upstream') };
  const without: number[] = [];
  const withHist: number[] = [];
  const n = RECORDS.zonal;
  for (let round = 0; round < ROUNDS + WARMUP; round++) {
    const a = nowNs();
    recordZonalByZone(plainBlocks, n);
    const b = nowNs();
    recordZonalWithHistograms(histBlocks, h, n);
    const c = nowNs();
    if (round >= WARMUP) {
      without.push((b - a) / n);
      withHist.push((c - b) / n);
    }
  }
  verify('zonal with histograms', zonalTotals(histBlocks), expectedAfter(n, ROUNDS + WARMUP));
  if (h.upstream.snapshot().count !== n * (ROUNDS + WARMUP)) fail('zonal with histograms: the peer histogram missed observations');
  return { observeZonal: observeZonalNs, observePromClient: observePromNs, recordWith: median(withHist), recordWithout: median(without) };
}

function zonalBlocksNamed(zone: Zone, tag: string): Blocks<CounterBlock> {
  return {
    server: zone.counters(`${tag}:server:site`, K),
    location: zone.counters(`${tag}:location:site/api`, K),
    upstream: zone.counters(`${tag}:upstream:backend/10.0.0.1:8080`, K),
  };
}

// ---- Scaling across worker processes ------------------------------------------------

// Records per worker per round: a few hundred milliseconds, long enough that the fraction
// of a millisecond between the two workers' starts does not matter.
const WORKER_RECORDS = 30_000_000;
const WORKER_WARMUP = 5_000_000;
const SCALING_ROUNDS = 5;

/** What a worker records: into its shard of the shared zone, or into arrays of its own
 * (`plain`, the reference: the same loop with nothing shared, which says how well the
 * machine runs two such loops at once at that moment). */
type Kind = 'zonal' | 'plain';
type ToWorker = { type: 'go'; n: number; kind: Kind } | { type: 'exit' };
/** `cpuNs`: the worker's own CPU time for the loop. Records per CPU second fall when the
 * workers get in each other's way in the memory system (shards sharing cache lines);
 * records per wall second fall too when another process takes one of the cores. */
type FromWorker = { type: 'ready'; records: number } | { type: 'done'; records: number; ns: number; cpuNs: number };

/** The child side: attach, warm up on its own shard and arrays, then run a loop per 'go'. */
function worker(): void {
  const blocks = zonalBlocks(Zone.attach('bench-engine-scale'));
  const own = plainBlocks();
  // What the plain loops must have added to `own`, checked after each.
  const expected = expectedFor(WORKER_WARMUP).slice();
  const send = (m: FromWorker) => process.send!(m);
  recordZonal(blocks, WORKER_WARMUP);
  recordPlain(own, WORKER_WARMUP);
  process.on('message', (m: ToWorker) => {
    if (m.type === 'exit') return process.disconnect();
    const cpu = process.cpuUsage();
    const start = nowNs();
    if (m.kind === 'zonal') recordZonal(blocks, m.n);
    else recordPlain(own, m.n);
    const ns = nowNs() - start;
    const used = process.cpuUsage(cpu);
    if (m.kind === 'plain') {
      const added = expectedFor(m.n);
      for (let i = 0; i < K; i++) expected[i] += added[i];
      verify('plain in a worker', own, expected);
    }
    send({ type: 'done', records: m.n, ns, cpuNs: (used.user + used.system) * 1000 });
  });
  // Without the parent there is nobody to report to.
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready', records: WORKER_WARMUP });
}

function nextMessage(child: ChildProcess): Promise<FromWorker> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`worker ${child.pid} exited with ${code} before answering`));
    child.once('exit', onExit);
    child.once('message', (m: FromWorker) => {
      child.off('exit', onExit);
      resolve(m);
    });
  });
}

interface Round {
  /** Records per second of all the workers together: all records over the longest
   * elapsed time. */
  rate: number;
  /** CPU ns per record, the workers' CPU time over their records. */
  cpuNs: number;
  /** The workers' CPU time over their elapsed time: below 1 when they waited for a core. */
  onCpu: number;
}

/** One round: each of `children`, warm and waiting, runs a loop of n records of `kind`,
 * all started at once. The zonal records each reports go to `reported`, which the zone's
 * counts are checked against. */
async function runTogether(children: ChildProcess[], n: number, kind: Kind, reported: number[]): Promise<Round> {
  const answers = children.map(nextMessage);
  for (const child of children) child.send({ type: 'go', n, kind } satisfies ToWorker);
  const done = await Promise.all(answers);
  let records = 0;
  let ns = 0;
  let elapsed = 0;
  let cpuNs = 0;
  done.forEach((m, i) => {
    if (m.type !== 'done') fail(`worker ${i} answered ${m.type} to go`);
    if (kind === 'zonal') reported.push(m.records);
    records += m.records;
    ns = Math.max(ns, m.ns);
    elapsed += m.ns;
    cpuNs += m.cpuNs;
  });
  return { rate: (records / ns) * 1e9, cpuNs: cpuNs / records, onCpu: cpuNs / elapsed };
}

interface Scaling {
  one: number;
  two: number;
  /** The same loop on each worker's own arrays, in the same rounds: the machine's scaling. */
  plainOne: number;
  plainTwo: number;
  /** CPU ns per record with two workers over the same with one: 1 when the workers do not
   * slow each other down, whatever else runs on the machine. */
  cpuCost: number;
  /** How much of their elapsed time the workers were on a CPU, one and two. */
  onCpuOne: number;
  onCpuTwo: number;
}

async function measureScaling(): Promise<Scaling> {
  // A zone of its own: the parent's zone has a shard claimed by the parent already.
  const zone = Zone.create('bench-engine-scale', { size: 1 << 20, workers: 2, writer: false });
  const blocks = zonalBlocks(zone);
  const script = fileURLToPath(import.meta.url);
  const children = [0, 1].map((slot) => fork(script, ['worker'], { env: { ...process.env, [WORKER_SLOT_ENV]: String(slot) } }));
  const reported: number[] = [];
  for (const m of await Promise.all(children.map(nextMessage))) {
    if (m.type !== 'ready') fail(`worker answered ${m.type} instead of ready`);
    reported.push(m.records);
  }
  const one: Round[] = [];
  const two: Round[] = [];
  const plainOne: Round[] = [];
  const plainTwo: Round[] = [];
  const steps: Array<() => Promise<void>> = [
    async () => void one.push(await runTogether(children.slice(0, 1), WORKER_RECORDS, 'zonal', reported)),
    async () => void two.push(await runTogether(children, WORKER_RECORDS, 'zonal', reported)),
    async () => void plainOne.push(await runTogether(children.slice(0, 1), WORKER_RECORDS, 'plain', reported)),
    async () => void plainTwo.push(await runTogether(children, WORKER_RECORDS, 'plain', reported)),
  ];
  for (let round = 0; round < SCALING_ROUNDS; round++) {
    // Each round starts one step further on: slow spells of the machine fall on all four.
    for (let k = 0; k < steps.length; k++) await steps[(round + k) % steps.length]();
  }
  await Promise.all(children.map(stop));

  const records = reported.reduce((a, b) => a + b, 0);
  const totals = zonalTotals(blocks);
  if (totals.server[TOTAL] !== records)
    fail(`scaling: the zone counted ${totals.server[TOTAL]} requests, the workers reported ${records}`);
  // Each worker warmed up once; each round ran one worker, then both.
  const timed = expectedAfter(WORKER_RECORDS, 3 * SCALING_ROUNDS);
  const expected = expectedAfter(WORKER_WARMUP, children.length).map((x, i) => x + timed[i]);
  verify('zonal across workers', totals, expected);
  zone.remove();
  const cpuCost = median(two.map((r, i) => r.cpuNs / one[i].cpuNs));
  return {
    one: median(one.map((r) => r.rate)),
    two: median(two.map((r) => r.rate)),
    plainOne: median(plainOne.map((r) => r.rate)),
    plainTwo: median(plainTwo.map((r) => r.rate)),
    cpuCost,
    onCpuOne: median(one.map((r) => r.onCpu)),
    onCpuTwo: median(two.map((r) => r.onCpu)),
  };
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.send({ type: 'exit' } satisfies ToWorker);
  });
}

// ---- Report ---------------------------------------------------------------------------

async function main(): Promise<void> {
  const zone = Zone.create('bench-engine', { size: 1 << 20, workers: 2 });
  const plain = measurePlain();
  const zonal = measureZonal(zone);
  const atomics = measureAtomics();
  const promclient = await measurePromClient();
  const histograms = await measureHistograms(zone);
  const scaling = await measureScaling();
  const ratio = scaling.two / scaling.one;
  const plainRatio = scaling.plainTwo / scaling.plainOne;

  table(
    `Cost of one full request record (12 counter updates), median of ${ROUNDS} rounds`,
    ['implementation', 'ns/record', 'x plain', 'records/round'],
    [
      ['plain Float64Array', plain, plain / plain, RECORDS.plain],
      ['zonal CounterBlock', zonal, zonal / plain, RECORDS.zonal],
      ['Atomics.add Int32Array', atomics, atomics / plain, RECORDS.atomics],
      ['prom-client 15', promclient, promclient / plain, RECORDS.promclient],
    ],
  );
  table(
    `Histograms: one response time observed (default bounds, 14 buckets), median of ${ROUNDS} rounds`,
    ['what', 'ns', 'x zonal observe'],
    [
      ['zonal Histogram.observe', histograms.observeZonal, 1],
      ['prom-client 15 Histogram.observe', histograms.observePromClient, histograms.observePromClient / histograms.observeZonal],
      ['full record, a call per zone', histograms.recordWithout, histograms.recordWithout / histograms.observeZonal],
      ['the same + 3 observations', histograms.recordWith, histograms.recordWith / histograms.observeZonal],
    ],
  );
  table(
    `Record rate across worker processes, zonal's shared zone and each worker's own arrays, median of ${SCALING_ROUNDS} rounds`,
    ['workers', 'records/s', 'x 1 worker', 'CPU x 1 worker', 'on a CPU'],
    [
      [1, Math.round(scaling.one), 1, 1, scaling.onCpuOne],
      [2, Math.round(scaling.two), ratio, scaling.cpuCost, scaling.onCpuTwo],
      ['1, on arrays of its own', Math.round(scaling.plainOne), 1, '', ''],
      ['2, each on arrays of its own', Math.round(scaling.plainTwo), plainRatio, '', ''],
    ],
  );
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
  table(
    'Targets (shown, not asserted)',
    ['target', 'measured', 'status'],
    [
      ['record_ns_zonal <= 2 x record_ns_plain', `${fmt(zonal / plain)} x`, met(zonal <= 2 * plain)],
      ['record_ns_promclient / record_ns_zonal >= 20', `${fmt(promclient / zonal)} x`, met(promclient / zonal >= 20)],
      ['scaling_2_workers >= 1.8', `${fmt(ratio)} x`, met(ratio >= 1.8)],
      // No target: what the machine gave two loops sharing nothing, in the same rounds.
      ['scaling_2_workers_plain (the machine)', `${fmt(plainRatio)} x`, '-'],
    ],
  );
  zone.remove();
  finish('engine', {
    record_ns_zonal: zonal,
    record_ns_plain: plain,
    record_ns_atomics: atomics,
    record_ns_promclient: promclient,
    observe_ns_zonal_histogram: histograms.observeZonal,
    observe_ns_promclient_histogram: histograms.observePromClient,
    record_ns_zonal_without_histograms: histograms.recordWithout,
    record_ns_zonal_with_3_histograms: histograms.recordWith,
    scaling_2_workers: ratio,
    scaling_2_workers_plain: plainRatio,
    scaling_2_workers_cpu_cost: scaling.cpuCost,
    scaling_2_workers_on_cpu: scaling.onCpuTwo,
    records_per_s_1_worker: scaling.one,
    records_per_s_2_workers: scaling.two,
  });
}

if (process.argv[2] === 'worker') worker();
else await main();
