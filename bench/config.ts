// npm run bench -- config: how soon a change made through /config in one process shows in
// another, and how many changes per second the API takes.
//
// Two worker processes attach to the same status zones and each serve the API with
// serveApi (uWebSockets.js) on a port of its own: the parent changes peer 127.0.0.1:8081
// of upstream `backend` through worker A and reads it through worker B. Measured:
// - visibility: the parent PATCHes {"weight": N} (N new each round, 1..1000 cycling) into
//   A over HTTP; as soon as the response is in, it asks B over IPC, with its clock time T,
//   to call its own API handler (no HTTP) until GET of that server shows weight N, and B
//   answers with the time T_seen it did. visible_ms = T_seen - T. Both times are
//   performance.timeOrigin + performance.now(), the same machine clock in both processes
//   (that their origins agree to a few microseconds shows in the floor below).
//   The figure includes the IPC message to B, which is shown on its own as its floor
//   (ipc_ms: B answers with its time at once), and how many reads B needed;
// - the same seen from outside: right after the PATCH response, GETs to B over HTTP until
//   one shows N; how many it took and the time from the PATCH response;
// - updates_per_s: PATCH requests per second into A under autocannon, 16 keep-alive
//   connections, 5 s after 1 s of warm-up; every response must be 2xx, and the peer set's
//   generation must have moved once per update (those in flight at the end included).
// The change is published in shared memory before A answers, so B should see it on its
// first read. Every loop is bounded in count; each child has a start-up deadline and is
// killed if it does not stop within 5 s. Everything listens on 127.0.0.1 only.
import { fork, type ChildProcess } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { bodyText, createApi, type ApiHandler } from '../src/api/index.js';
import { INSTANCE_ENV, WORKER_SLOT_ENV } from '../src/engine/index.js';
import type { StatusConfig } from '../src/metrics/catalog.js';
import { peerGeneration } from '../src/metrics/peers.js';
import { Status } from '../src/metrics/status.js';
import { serveApi } from '../src/transport/uws.js';
import { autocannon, fail, finish, fmt, median, nowNs, quantile, table } from './report.js';
import { stopChild } from './processes.js';

const SCRIPT = fileURLToPath(import.meta.url);
const CONFIG: StatusConfig = {
  http: { upstreams: [{ name: 'backend', peers: [{ server: '127.0.0.1:8081' }, { server: '127.0.0.1:8082' }] }] },
};
const SERVER_PATH = '/config/http/upstreams/backend/servers/127.0.0.1:8081';

const ROUNDS = 500;
const WARMUP = 50;
/** Reads of its handler B makes before it gives up on a weight. */
const MAX_READS = 100_000;
/** GETs over HTTP to B before the parent gives up on a weight. */
const MAX_GETS = 1000;
const LOAD_CONNECTIONS = 16;
const LOAD_SECONDS = 5;
const LOAD_WARMUP_SECONDS = 1;
/** The weight every PATCH of the load sets: the same body each time still publishes. */
const LOAD_WEIGHT = 1234;

/** Milliseconds on the machine's clock, comparable between processes. */
const clockMs = () => performance.timeOrigin + performance.now();

type ToWorker = { type: 'wait'; weight: number } | { type: 'ping' };
type FromWorker =
  | { type: 'listening'; port: number }
  | { type: 'seen'; at: number; reads: number }
  | { type: 'timeout'; last: unknown }
  | { type: 'pong'; at: number };

// ---- A worker -------------------------------------------------------------------------

/** The weight GET of the server shows through `handler`, called directly. */
function weightOf(handler: ApiHandler): unknown {
  const res = handler({ method: 'GET', path: SERVER_PATH, query: '', address: '127.0.0.1' });
  if (!res || res.status !== 200) throw new Error(`GET ${SERVER_PATH} answered ${res?.status}`);
  return (JSON.parse(bodyText(res)) as { weight?: unknown }).weight;
}

/** The child side: attach, serve the API, and answer the parent's IPC until it goes. */
async function worker(): Promise<void> {
  const status = Status.attach();
  const handler = createApi({ status });
  const server = await serveApi({ host: '127.0.0.1', port: 0, handler });
  const send = (m: FromWorker) => process.send!(m);
  process.on('message', (m: ToWorker) => {
    if (m.type === 'ping') return send({ type: 'pong', at: clockMs() });
    // Spins with the event loop blocked: nothing else is asked of B meanwhile.
    let last: unknown;
    for (let reads = 1; reads <= MAX_READS; reads++)
      if ((last = weightOf(handler)) === m.weight) return send({ type: 'seen', at: clockMs(), reads });
    send({ type: 'timeout', last });
  });
  process.once('disconnect', () => {
    server.close();
    process.exit(0);
  });
  send({ type: 'listening', port: server.port });
}

// ---- The parent's side of a worker ------------------------------------------------------

/** Every child forked, stopped at the end whether or not it got as far as listening. */
const children: ChildProcess[] = [];

interface Worker {
  child: ChildProcess;
  port: number;
  /** The worker's next IPC message (they come one per request). */
  next(): Promise<FromWorker>;
}

function startWorker(slot: number): Promise<Worker> {
  const child = fork(SCRIPT, ['worker'], { env: { ...process.env, [WORKER_SLOT_ENV]: String(slot) } });
  children.push(child);
  const waiting: Array<(m: FromWorker) => void> = [];
  child.on('message', (m: FromWorker) => waiting.shift()?.(m));
  const next = () =>
    new Promise<FromWorker>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${slot} did not answer within 10 s`)), 10_000);
      waiting.push((m) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`worker ${slot} exited with ${code}`)));
    next().then((m) => (m.type === 'listening' ? resolve({ child, port: m.port, next }) : reject(new Error(`worker ${slot} said ${m.type}`))), reject);
  });
}

/** One HTTP request on a keep-alive connection: status and body text. */
function send(agent: Agent, port: number, method: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = body === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
    const req = httpRequest({ host: '127.0.0.1', port, method, path: SERVER_PATH, agent, headers, timeout: 5000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} to port ${port} took over 5 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

// ---- The measurements -------------------------------------------------------------------

let round = 0;
/** PATCHes the next weight into A; resolves with it once A's response is in. */
async function patchNext(agent: Agent, a: Worker): Promise<number> {
  const weight = (round++ % 1000) + 1;
  const res = await send(agent, a.port, 'PATCH', JSON.stringify({ weight }));
  if (res.status !== 200 || !res.text.includes('"Updated"')) throw new Error(`PATCH weight=${weight} answered ${res.status}: ${res.text}`);
  return weight;
}

/** Milliseconds, and reads (B's handler calls, or GETs) each round needed. */
type Samples = { ms: number[]; reads: number[] };

/** `measure` run WARMUP + ROUNDS times; the last ROUNDS samples kept. */
async function sample(measure: () => Promise<{ ms: number; reads: number }>): Promise<Samples> {
  const out: Samples = { ms: [], reads: [] };
  for (let i = 0; i < WARMUP + ROUNDS; i++) {
    const s = await measure();
    if (i < WARMUP) continue;
    out.ms.push(s.ms);
    out.reads.push(s.reads);
  }
  return out;
}

/** PATCH into A, then B spins on its handler until it shows the weight. */
const viaIpc = (agent: Agent, a: Worker, b: Worker) => async () => {
  const weight = await patchNext(agent, a);
  const t = clockMs();
  b.child.send({ type: 'wait', weight } satisfies ToWorker);
  const m = await b.next();
  if (m.type !== 'seen') throw new Error(`B never showed weight ${weight} in ${MAX_READS} reads (last: ${JSON.stringify(m)})`);
  return { ms: m.at - t, reads: m.reads };
};

/** The floor of viaIpc: the message to B and B's clock, with no read. */
const ipcOnly = (b: Worker) => async () => {
  const t = clockMs();
  b.child.send({ type: 'ping' } satisfies ToWorker);
  const m = await b.next();
  if (m.type !== 'pong') throw new Error(`B answered a ping with ${m.type}`);
  return { ms: m.at - t, reads: 0 };
};

/** PATCH into A, then GETs to B over HTTP until one shows the weight. */
const viaHttp = (agent: Agent, a: Worker, b: Worker) => async () => {
  const weight = await patchNext(agent, a);
  const start = nowNs();
  for (let gets = 1; gets <= MAX_GETS; gets++) {
    const res = await send(agent, b.port, 'GET');
    if (res.status !== 200) throw new Error(`GET from B answered ${res.status}: ${res.text}`);
    if ((JSON.parse(res.text) as { weight?: unknown }).weight === weight) return { ms: (nowNs() - start) / 1e6, reads: gets };
  }
  throw new Error(`B did not show weight ${weight} in ${MAX_GETS} GETs`);
};


const load = (a: Worker, duration: number) =>
  autocannon({
    url: `http://127.0.0.1:${a.port}${SERVER_PATH}`,
    connections: LOAD_CONNECTIONS,
    duration,
    pipelining: 1,
    method: 'PATCH',
    body: JSON.stringify({ weight: LOAD_WEIGHT }),
    headers: { 'Content-Type': 'application/json' },
    verifyBody: (body: string) => body.includes('"Updated"'),
  });

// ---- Report -------------------------------------------------------------------------------

async function main(): Promise<void> {
  const instance = `bench-config-${process.pid}`;
  process.env[INSTANCE_ENV] = instance;
  const status = Status.create(CONFIG, { workers: 2, instance, writer: false });
  const upstream = status.catalog().http!.upstreams![0];
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let error: unknown;
  try {
    const a = await startWorker(0);
    const b = await startWorker(1);

    const ipc = await sample(ipcOnly(b));
    const visible = await sample(viaIpc(agent, a, b));
    const http = await sample(viaHttp(agent, a, b));

    await load(a, LOAD_WARMUP_SECONDS);
    const before = peerGeneration(status, upstream);
    const r = await load(a, LOAD_SECONDS);
    const published = peerGeneration(status, upstream) - before;
    const updatesPerS = r['2xx'] / r.duration;
    const shown = JSON.parse((await send(agent, b.port, 'GET')).text) as { weight?: unknown };

    const row = (what: string, s: Samples, reads: string): Array<string | number> => [
      what,
      median(s.ms),
      quantile(s.ms, 0.99),
      Math.max(...s.ms),
      reads === '' ? '' : `${fmt(median(s.reads))} / ${fmt(Math.max(...s.reads))}`,
    ];
    table(
      `Visibility of a PATCH into A in B: ${ROUNDS} rounds after ${WARMUP} of warm-up`,
      ['what', 'p50 ms', 'p99 ms', 'max ms', 'reads p50 / max'],
      [
        row('B calls its handler (IPC start to seen)', visible, 'reads'),
        row('  floor: IPC message to B, no read', ipc, ''),
        row('B over HTTP (PATCH response to GET showing it)', http, 'reads'),
      ],
    );
    table(
      `PATCH under autocannon: ${LOAD_CONNECTIONS} connections, ${LOAD_SECONDS} s after ${LOAD_WARMUP_SECONDS} s warm-up`,
      ['what', 'count'],
      [
        ['updates/s (2xx)', Math.round(updatesPerS)],
        ['requests answered', r.requests.total],
        ['requests sent (answered + in flight at the end)', r.requests.sent],
        ['2xx', r['2xx']],
        ['non-2xx', r.non2xx],
        ['errors + timeouts', r.errors + r.timeouts],
        ['bodies without "Updated"', r.mismatches],
        ['peer set generations published', published],
      ],
    );
    if (r.non2xx || r.errors || r.timeouts || r.mismatches || r['2xx'] !== r.requests.total)
      throw new Error(`PATCH load: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts, ${r.mismatches} bad bodies of ${r.requests.total}`);
    // The requests in flight when autocannon stopped were served (and published) unanswered.
    if (published < r['2xx'] || published > r.requests.sent)
      throw new Error(`${r['2xx']} updates answered 2xx, ${r.requests.sent} sent, but ${published} were published`);
    if (shown.weight !== LOAD_WEIGHT) throw new Error(`after the load B shows weight ${JSON.stringify(shown.weight)}, not ${LOAD_WEIGHT}`);

    const p99 = quantile(visible.ms, 0.99);
    const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
    table(
      'Targets (shown, not asserted)',
      ['target', 'measured', 'status'],
      [
        ['visible_ms_p99 <= 1', `${fmt(p99, 3)} ms`, met(p99 <= 1)],
        ['updates_per_s >= 5,000', fmt(Math.round(updatesPerS)), met(updatesPerS >= 5000)],
      ],
    );
    finish('config', {
      visible_ms_p50: median(visible.ms),
      visible_ms_p99: p99,
      ipc_ms_p50: median(ipc.ms),
      http_visible_ms_p50: median(http.ms),
      http_visible_ms_p99: quantile(http.ms, 0.99),
      updates_per_s: updatesPerS,
      updates: r['2xx'],
      non_2xx: r.non2xx,
    });
  } catch (e) {
    error = e;
  } finally {
    agent.destroy();
    await Promise.all(children.map(stopChild));
    status.remove();
  }
  if (error) fail((error as Error).stack ?? String(error));
}

if (process.argv[2] === 'worker') await worker();
else await main();
