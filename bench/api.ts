// npm run bench -- api: what serving the status API costs with a large tree, next to the
// usual Node way of showing the same figures of a multi-process server (prom-client's
// AggregatorRegistry over node:cluster).
//
// The tree: 1,000 HTTP upstreams of 10 peers each and 100 HTTP server zones, recorded by
// two worker processes. Measured:
// - rendering /status/ as JSON, and /status/connections, through the API handler itself;
// - requests/s of GET /status/connections through the uWebSockets.js and node:http
//   transports, under autocannon on loopback;
// - prom-client 15's clusterMetrics() over two cluster workers that each hold the same
//   series as zonal's /status/?format=prometheus (built from that very text, so both
//   sides have exactly the same names, labels and counts: 14 per peer, 7 per server zone,
//   plus the slab and keepalive series of the 1,000 upstream zones).
// Every loop is bounded in count; each child process has a start-up deadline and is
// killed if it does not stop within 5 s. Everything listens on 127.0.0.1 only.
import cluster, { type Worker } from 'node:cluster';
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import client from 'prom-client';
import { bodyText, createApi, type ApiHandler, type ApiRequest, type ApiResponse } from '../src/api/index.js';
import { INSTANCE_ENV, WORKER_SLOT_ENV } from '../src/engine/index.js';
import type { StatusConfig } from '../src/metrics/catalog.js';
import { connections } from '../src/metrics/connections.js';
import { serverZones } from '../src/metrics/http-zones.js';
import { Status } from '../src/metrics/status.js';
import { peer } from '../src/metrics/upstreams.js';
import { apiListener } from '../src/transport/http.js';
import { serveApi } from '../src/transport/uws.js';
import { autocannon, fail, finish, fmt, median, medianNs, nowNs, table } from './report.js';
import { stopChild } from './processes.js';

const SCRIPT = fileURLToPath(import.meta.url);

// ---- The tree -------------------------------------------------------------------------

const UPSTREAMS = 1000;
const PEERS_PER_UPSTREAM = 10;
const SERVER_ZONES = 100;
const WORKERS = 2;
/** Requests each worker records per peer and per server zone: codes 200, 200, 404. */
const REQUESTS_EACH = 3;

const upstreamName = (u: number) => `backend-${String(u).padStart(4, '0')}`;
const peerServer = (u: number, p: number) => `10.${(u >> 8) & 255}.${u & 255}.${p + 1}:8080`;
const zoneName = (z: number) => `site-${String(z).padStart(3, '0')}`;

function treeConfig(): StatusConfig {
  return {
    http: {
      serverZones: Array.from({ length: SERVER_ZONES }, (_, z) => ({ name: zoneName(z) })),
      upstreams: Array.from({ length: UPSTREAMS }, (_, u) => ({
        name: upstreamName(u),
        peers: Array.from({ length: PEERS_PER_UPSTREAM }, (_, p) => ({ server: peerServer(u, p) })),
      })),
    },
  };
}

// What worker `w` records for request `k` of object `i` (a peer's global index, or a
// zone's): derived from all three, so that a counter mixed up with another shows.
const codeOf = (k: number) => (k % 3 === 2 ? 404 : 200);
const receivedOf = (i: number, k: number, w: number) => 100 + ((i * 7 + k * 13 + w * 31) % 1000);
const sentOf = (i: number, k: number, w: number) => 50 + ((i * 11 + k * 17 + w * 5) % 500);
const headerMsOf = (i: number, k: number, w: number) => 1 + ((i + k + w) % 20);

/** What a recording worker tells the parent it recorded. */
interface Recorded {
  type: 'recorded';
  slot: number;
  peerRequests: number;
  zoneRequests: number;
  accepted: number;
  received: number;
  sent: number;
}

/** The child side of recording: attach as worker `slot`, record every peer and zone. */
function recordWorker(): void {
  const slot = Number(process.env[WORKER_SLOT_ENV]);
  const status = Status.attach();
  const conns = connections(status);
  const report: Recorded = { type: 'recorded', slot, peerRequests: 0, zoneRequests: 0, accepted: 0, received: 0, sent: 0 };
  for (let u = 0; u < UPSTREAMS; u++)
    for (let p = 0; p < PEERS_PER_UPSTREAM; p++) {
      const i = u * PEERS_PER_UPSTREAM + p;
      const pr = peer(status, 'http', upstreamName(u), peerServer(u, p));
      for (let k = 0; k < REQUESTS_EACH; k++) {
        const rx = receivedOf(i, k, slot);
        const tx = sentOf(i, k, slot);
        const h = headerMsOf(i, k, slot);
        pr.selected();
        pr.responded(codeOf(k), rx, tx, h, h + 5);
        pr.released();
        report.peerRequests++;
        report.received += rx;
        report.sent += tx;
      }
    }
  for (let z = 0; z < SERVER_ZONES; z++) {
    const zone = serverZones.recorder(status, zoneName(z));
    for (let k = 0; k < REQUESTS_EACH; k++) {
      const rx = receivedOf(z, k, slot);
      const tx = sentOf(z, k, slot);
      conns.accepted();
      zone.requestStarted();
      zone.responseSent(codeOf(k), rx, tx);
      conns.closed(false);
      report.zoneRequests++;
      report.accepted++;
      report.received += rx;
      report.sent += tx;
    }
  }
  process.send!(report, () => process.disconnect());
}

/** Forks the recording workers and waits for their reports and their exit. */
async function record(): Promise<Recorded[]> {
  const reports = [0, 1].map(
    (slot) =>
      new Promise<Recorded>((resolve, reject) => {
        const child = fork(SCRIPT, ['record'], { env: { ...process.env, [WORKER_SLOT_ENV]: String(slot) } });
        let report: Recorded | undefined;
        child.once('message', (m: Recorded) => (report = m));
        child.once('error', reject);
        child.once('exit', (code) =>
          code === 0 && report ? resolve(report) : reject(new Error(`recording worker ${slot} exited with ${code} (report: ${!!report})`)),
        );
      }),
  );
  return Promise.all(reports);
}

// ---- Checking what the tree shows -----------------------------------------------------

interface Counts {
  requests: number;
  responses: Record<string, number>;
  received: number;
  sent: number;
}

/** What both workers together recorded for object `i`. */
function expectedCounts(i: number): Counts {
  const c: Counts = { requests: 0, responses: {}, received: 0, sent: 0 };
  for (let w = 0; w < WORKERS; w++)
    for (let k = 0; k < REQUESTS_EACH; k++) {
      c.requests++;
      c.responses[codeOf(k)] = (c.responses[codeOf(k)] ?? 0) + 1;
      c.received += receivedOf(i, k, w);
      c.sent += sentOf(i, k, w);
    }
  return c;
}

function sameCounts(what: string, actual: Counts, expected: Counts): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) fail(`${what}: the tree shows ${a}, the workers recorded ${e}`);
}

// The parsed JSON tree, read by the known paths of its objects.
type Obj = Record<string, any>;

/** Fails unless every peer, zone and the connections show exactly what was recorded,
 * object by object, and the sums match what the workers reported. */
function verifyTree(tree: Obj, reports: Recorded[]): void {
  const want = { peerRequests: 0, zoneRequests: 0, accepted: 0, received: 0, sent: 0 };
  for (const r of reports) for (const k of Object.keys(want) as Array<keyof typeof want>) want[k] += r[k];
  const seen = { peerRequests: 0, zoneRequests: 0, accepted: 0, received: 0, sent: 0 };
  const upstreams = tree.http?.upstreams ?? {};
  if (Object.keys(upstreams).length !== UPSTREAMS) fail(`the tree shows ${Object.keys(upstreams).length} upstreams, not ${UPSTREAMS}`);
  for (let u = 0; u < UPSTREAMS; u++) {
    const peers = upstreams[upstreamName(u)]?.peers ?? {};
    if (Object.keys(peers).length !== PEERS_PER_UPSTREAM) fail(`${upstreamName(u)} shows ${Object.keys(peers).length} peers`);
    for (let p = 0; p < PEERS_PER_UPSTREAM; p++) {
      const x = peers[peerServer(u, p)];
      const what = `peer ${upstreamName(u)}/${peerServer(u, p)}`;
      if (!x) fail(`${what} is missing`);
      if (x.selected.current !== 0) fail(`${what}: selected.current is ${x.selected.current}, not 0`);
      const actual: Counts = { requests: x.selected.total, responses: x.responses, received: x.data.received, sent: x.data.sent };
      sameCounts(what, actual, expectedCounts(u * PEERS_PER_UPSTREAM + p));
      seen.peerRequests += actual.requests;
      seen.received += actual.received;
      seen.sent += actual.sent;
    }
  }
  const zones = tree.http?.server_zones ?? {};
  for (let z = 0; z < SERVER_ZONES; z++) {
    const x = zones[zoneName(z)];
    if (!x) fail(`server zone ${zoneName(z)} is missing`);
    if (x.requests.processing !== 0) fail(`server zone ${zoneName(z)}: processing is ${x.requests.processing}`);
    const actual: Counts = { requests: x.requests.total, responses: x.responses, received: x.data.received, sent: x.data.sent };
    sameCounts(`server zone ${zoneName(z)}`, actual, expectedCounts(z));
    seen.zoneRequests += actual.requests;
    seen.received += actual.received;
    seen.sent += actual.sent;
  }
  seen.accepted = tree.connections?.accepted;
  if (tree.connections?.active !== 0) fail(`connections.active is ${tree.connections?.active}, not 0`);
  for (const k of Object.keys(want) as Array<keyof typeof want>)
    if (seen[k] !== want[k]) fail(`${k}: the tree sums to ${seen[k]}, the workers reported ${want[k]}`);
}

// ---- The handler in this process ------------------------------------------------------

const request = (path: string, query = ''): ApiRequest => ({ method: 'GET', path, query, address: '127.0.0.1' });

/** The handler's answer as a transport gets it (text or bytes): what the timings cover. */
function call(handler: ApiHandler, req: ApiRequest): ApiResponse {
  const res = handler(req);
  if (!res || res.status !== 200) fail(`${req.path}?${req.query} answered ${res?.status}: ${res ? bodyText(res).slice(0, 200) : ''}`);
  return res;
}

const TREE_ROUNDS = 21;
const TREE_WARMUP = 4;
// The same tree as Prometheus text, shown next to prom-client's (which makes that text).
const TEXT_ROUNDS = 7;
const TEXT_WARMUP = 2;
// /status/connections: rounds of BRANCH_CALLS calls, so each timed span is well above
// the clock's resolution; the per-call figure is the median round over the calls.
const BRANCH_CALLS = 500;
const BRANCH_ROUNDS = 41;
const BRANCH_WARMUP = 10;

/** Samples of a Prometheus text exposition: the lines that are not comments. */
function countSamples(text: string): number {
  let n = 0;
  for (const line of text.split('\n')) if (line !== '' && !line.startsWith('#')) n++;
  return n;
}

// ---- Transports under load ------------------------------------------------------------

type Transport = 'uws' | 'http';
type FromServer = { type: 'listening'; port: number };

/** The child side: attach to the zones as a reader and serve the API until told to stop. */
async function serveChild(transport: Transport): Promise<void> {
  const status = Status.attach({ writer: false });
  const handler = createApi({ status });
  let close: () => void;
  let port: number;
  if (transport === 'uws') {
    const server = await serveApi({ host: '127.0.0.1', port: 0, handler });
    port = server.port;
    close = () => server.close();
  } else {
    const listener = apiListener(handler);
    const server = createServer((req, res) => listener(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
    close = () => {
      server.close();
      server.closeAllConnections();
    };
  }
  // Stops when the parent says so or goes away.
  process.once('disconnect', () => {
    close();
    process.exit(0);
  });
  process.send!({ type: 'listening', port } satisfies FromServer);
}


const LOAD_CONNECTIONS = 10;
const LOAD_SECONDS = 5;
const LOAD_WARMUP_SECONDS = 1;

interface Load {
  rps: number;
  requests: number;
  /** CPU time over wall time of the timed run, in percent of one core. */
  serverCpu: number;
  generatorCpu: number;
}

/** CPU seconds a process has used so far (user + system), from /proc (Linux only, as
 * zonal is). */
function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name and state;
  // clock ticks of 1/100 s on Linux.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

// The server runs in a child process of its own and autocannon here: on a 2-core machine
// each gets a core, so the server's figure is not what is left after the load generator
// took its share of the same event loop (as it would in one process), and the server
// process holds only what an API process holds (attached zones, the handler), not this
// process's heap of rendered trees. Running autocannon in-process rather than as a child
// keeps its result a plain object, with no output to parse. The CPU each side used is
// shown, so that a figure limited by the load generator rather than the server shows.
async function load(transport: Transport): Promise<Load> {
  const child = fork(SCRIPT, ['serve', transport], { env: { ...process.env } });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the ${transport} server did not start within 20 s`)), 20_000);
      child.once('message', (m: FromServer) => {
        clearTimeout(timer);
        resolve(m.port);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the ${transport} server exited with ${code}`));
      });
    });
    const url = `http://127.0.0.1:${port}/status/connections`;
    const run = async (duration: number) => {
      const r = await autocannon({ url, connections: LOAD_CONNECTIONS, duration, pipelining: 1 });
      if (r.errors || r.timeouts || r.non2xx || r['2xx'] !== r.requests.total)
        fail(`${transport}: ${r.errors} errors, ${r.timeouts} timeouts, ${r.non2xx} non-2xx of ${r.requests.total} requests`);
      return r;
    };
    await run(LOAD_WARMUP_SECONDS);
    const serverBefore = cpuSecondsOf(child.pid!);
    const ownBefore = process.cpuUsage();
    const start = nowNs();
    const r = await run(LOAD_SECONDS);
    const wall = (nowNs() - start) / 1e9;
    const own = process.cpuUsage(ownBefore);
    return {
      rps: r.requests.total / r.duration,
      requests: r.requests.total,
      serverCpu: ((cpuSecondsOf(child.pid!) - serverBefore) / wall) * 100,
      generatorCpu: ((own.user + own.system) / 1e6 / wall) * 100,
    };
  } finally {
    await stopChild(child);
  }
}

// ---- prom-client over node:cluster ----------------------------------------------------

type FromPromWorker = { type: 'prom-ready'; series: number; families: number } | { type: 'prom-error'; message: string };

/** One sample of an exposition: family, labels, value. */
interface Sample {
  family: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  name: string;
  type: 'counter' | 'gauge';
  help: string;
  labelNames: string[];
  samples: Sample[];
}

/** Parses a Prometheus text exposition (the parts zonal writes: HELP, TYPE, samples with
 * quoted labels) into families. */
function parseExposition(text: string): Family[] {
  const families = new Map<string, Family>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { name, type: 'gauge', help: name, labelNames: [], samples: [] }));
    return f;
  };
  const unescape = (v: string) => v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let m: RegExpExecArray | null;
    if ((m = /^# HELP (\S+) (.*)$/.exec(line))) family(m[1]).help = unescape(m[2]);
    else if ((m = /^# TYPE (\S+) (\S+)$/.exec(line))) family(m[1]).type = m[2] === 'counter' ? 'counter' : 'gauge';
    else if (line.startsWith('#')) continue;
    else if ((m = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line))) {
      const labels: Record<string, string> = {};
      for (const l of (m[2] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = unescape(l[2]);
      const f = family(m[1]);
      for (const k of Object.keys(labels)) if (!f.labelNames.includes(k)) f.labelNames.push(k);
      f.samples.push({ family: m[1], labels, value: Number(m[3]) });
    } else throw new Error(`cannot parse exposition line: ${line}`);
  }
  return [...families.values()];
}

/** A cluster worker: registers in prom-client's default registry one metric per family
 * of zonal's own exposition of the tree, with the same labels and values, so that both
 * sides serve exactly the same series. Values are set once: clusterMetrics() costs the
 * same whatever they are. */
async function promWorker(): Promise<void> {
  try {
    // Makes this worker answer the primary's clusterMetrics() requests.
    new client.AggregatorRegistry();
    const status = Status.attach({ writer: false });
    const text = bodyText(call(createApi({ status }), request('/status/', 'format=prometheus')));
    const families = parseExposition(text);
    for (const f of families) {
      // Counters add up across workers; for gauges the aggregator costs alike.
      if (f.type === 'counter') {
        const c = new client.Counter({ name: f.name, help: f.help, labelNames: f.labelNames, aggregator: 'sum' });
        for (const s of f.samples) c.inc(s.labels, s.value);
      } else {
        const g = new client.Gauge({ name: f.name, help: f.help, labelNames: f.labelNames, aggregator: 'max' });
        for (const s of f.samples) g.set(s.labels, s.value);
      }
    }
    const metrics = await client.register.getMetricsAsJSON();
    const series = metrics.reduce((n, m) => n + m.values.length, 0);
    process.send!({ type: 'prom-ready', series, families: metrics.length } satisfies FromPromWorker);
  } catch (e) {
    process.send!({ type: 'prom-error', message: (e as Error).stack ?? String(e) } satisfies FromPromWorker);
  }
  process.once('disconnect', () => process.exit(0));
}

/** Samples by the object they describe. */
function seriesKinds(families: Family[]): { peer: number; zone: number; slabs: number; other: number } {
  const kinds = { peer: 0, zone: 0, slabs: 0, other: 0 };
  for (const f of families)
    for (const s of f.samples) {
      if ('peer' in s.labels) kinds.peer++;
      else if (f.name.startsWith('zonal_http_server_zones_')) kinds.zone++;
      else if (f.name.startsWith('zonal_slabs_')) kinds.slabs++;
      else kinds.other++;
    }
  return kinds;
}

const PROM_ROUNDS = 9;
const PROM_WARMUP = 2;

interface PromResult {
  ms: number;
  seriesPerWorker: number[];
  /** Samples in the aggregated exposition clusterMetrics() returned. */
  aggregated: number;
  bytes: number;
}

/** This process as a node:cluster primary with two workers; the median clusterMetrics(). */
async function measurePromClient(): Promise<PromResult> {
  const registry = new client.AggregatorRegistry();
  cluster.setupPrimary({ exec: SCRIPT, args: ['prom-worker'], silent: false });
  const workers: Worker[] = [];
  try {
    const ready = [0, 1].map(() => {
      // The environment, ZONAL_INSTANCE included, is inherited.
      const w = cluster.fork();
      workers.push(w);
      return new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('a prom-client worker did not get ready within 60 s')), 60_000);
        w.on('message', (m: FromPromWorker) => {
          if (m.type === 'prom-ready') resolve(m.series);
          else if (m.type === 'prom-error') reject(new Error(`prom-client worker: ${m.message}`));
          else return;
          clearTimeout(timer);
        });
        w.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`a prom-client worker exited with ${code}`));
        });
      });
    });
    const seriesPerWorker = await Promise.all(ready);
    let text = '';
    for (let i = 0; i < PROM_WARMUP; i++) text = await registry.clusterMetrics();
    const times: number[] = [];
    for (let i = 0; i < PROM_ROUNDS; i++) {
      const start = nowNs();
      text = await registry.clusterMetrics();
      times.push((nowNs() - start) / 1e6);
    }
    return { ms: median(times), seriesPerWorker, aggregated: countSamples(text), bytes: Buffer.byteLength(text) };
  } finally {
    await Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) return resolve();
            const timer = setTimeout(() => w.process.kill('SIGKILL'), 5000);
            w.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            w.disconnect();
          }),
      ),
    );
  }
}

// ---- Report ---------------------------------------------------------------------------

async function main(): Promise<void> {
  const instance = `bench-api-${process.pid}`;
  // Every child (recording workers, servers, prom-client workers) attaches to it.
  process.env[INSTANCE_ENV] = instance;
  const began = nowNs();
  const status = Status.create(treeConfig(), { workers: WORKERS, instance, writer: false });
  try {
    const setupMs = (nowNs() - began) / 1e6;
    const reports = await record();
    const recordMs = (nowNs() - began) / 1e6 - setupMs;
    const handler = createApi({ status });

    // Timed before the tree is checked: parsing 6 MB of JSON leaves tens of megabytes of
    // garbage that the collector would reclaim during the timed renders.
    // Each response is released as a transport releases it once written out, so that the
    // next render writes into the same memory.
    const fullTreeNs = medianNs(() => call(handler, request('/status/')).release?.(), TREE_ROUNDS, TREE_WARMUP);
    const fullBody = bodyText(call(handler, request('/status/')));
    verifyTree(JSON.parse(fullBody), reports);
    const connReq = request('/status/connections');
    const branchNs =
      medianNs(
        () => {
          for (let i = 0; i < BRANCH_CALLS; i++) call(handler, connReq);
        },
        BRANCH_ROUNDS,
        BRANCH_WARMUP,
      ) / BRANCH_CALLS;
    const promReq = request('/status/', 'format=prometheus');
    const promText = bodyText(call(handler, promReq));
    const textTreeNs = medianNs(() => call(handler, promReq), TEXT_ROUNDS, TEXT_WARMUP);
    const zonalSeries = countSamples(promText);
    const kinds = seriesKinds(parseExposition(promText));

    const uws = await load('uws');
    const http = await load('http');
    const prom = await measurePromClient();

    const peers = UPSTREAMS * PEERS_PER_UPSTREAM;
    const fullTreeMs = fullTreeNs / 1e6;
    const branchUs = branchNs / 1e3;
    table(
      'The tree',
      ['what', 'count'],
      [
        ['HTTP upstreams', UPSTREAMS],
        ['peers', peers],
        ['HTTP server zones', SERVER_ZONES],
        ['recording workers', WORKERS],
        ['requests recorded (peers + zones)', reports.reduce((n, r) => n + r.peerRequests + r.zoneRequests, 0)],
        ['/status/ JSON bytes', Buffer.byteLength(fullBody)],
        ['/status/?format=prometheus bytes', Buffer.byteLength(promText)],
        ['prom-client clusterMetrics() bytes', prom.bytes],
        ['zones created, ms', Math.round(setupMs)],
        ['both workers recorded, ms', Math.round(recordMs)],
      ],
    );
    table(
      'Series, like for like',
      ['side', 'series'],
      [
        ['zonal: samples in /status/?format=prometheus', zonalSeries],
        ['  of which per peer {upstream, peer}, each', kinds.peer / peers],
        ['  of which per server zone {zone}, each', kinds.zone / SERVER_ZONES],
        ['  of which slabs of the upstream zones', kinds.slabs],
        ['  of which the rest (keepalive, connections...)', kinds.other],
        ...prom.seriesPerWorker.map((n, i): [string, number] => [`prom-client: series in worker ${i}`, n]),
        ['prom-client: samples in clusterMetrics() output', prom.aggregated],
      ],
    );
    table(
      'Rendering in one process, through the API handler',
      ['request', 'median', 'unit', 'runs'],
      [
        ['GET /status/ (JSON)', fullTreeMs, 'ms', TREE_ROUNDS],
        ['GET /status/connections', branchUs, 'us', BRANCH_ROUNDS * BRANCH_CALLS],
        ['GET /status/?format=prometheus', textTreeNs / 1e6, 'ms', TEXT_ROUNDS],
        [`prom-client clusterMetrics(), ${WORKERS} workers`, prom.ms, 'ms', PROM_ROUNDS],
      ],
    );
    table(
      `GET /status/connections under autocannon: ${LOAD_CONNECTIONS} connections, ${LOAD_SECONDS} s after ${LOAD_WARMUP_SECONDS} s warm-up`,
      ['transport', 'requests/s', 'requests', 'server CPU %', 'autocannon CPU %'],
      [
        ['uWebSockets.js (serveApi)', Math.round(uws.rps), uws.requests, Math.round(uws.serverCpu), Math.round(uws.generatorCpu)],
        ['node:http (apiListener)', Math.round(http.rps), http.requests, Math.round(http.serverCpu), Math.round(http.generatorCpu)],
      ],
    );
    const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
    const ratio = prom.ms / fullTreeMs;
    table(
      'Targets (shown, not asserted)',
      ['target', 'measured', 'status'],
      [
        ['full_tree_ms <= 20', `${fmt(fullTreeMs)} ms`, met(fullTreeMs <= 20)],
        ['promclient_cluster_ms / full_tree_ms >= 10', `${fmt(ratio)} x`, met(ratio >= 10)],
        ['rps_uws_connections > rps_http_connections', `${fmt(uws.rps / http.rps)} x`, met(uws.rps > http.rps)],
      ],
    );
    status.remove();
    finish('api', {
      full_tree_ms: fullTreeMs,
      branch_us: branchUs,
      rps_uws_connections: uws.rps,
      rps_http_connections: http.rps,
      promclient_cluster_ms: prom.ms,
      prometheus_tree_ms: textTreeNs / 1e6,
      json_bytes: Buffer.byteLength(fullBody),
      peers,
      series_zonal: zonalSeries,
      series_promclient_per_worker: prom.seriesPerWorker[0],
    });
  } catch (e) {
    status.remove();
    throw e;
  }
}

const role = process.argv[2];
if (role === 'record') recordWorker();
else if (role === 'serve') await serveChild(process.argv[3] === 'http' ? 'http' : 'uws');
else if (role === 'prom-worker' && cluster.isWorker) await promWorker();
else await main();
