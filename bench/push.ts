// npm run bench -- push: what live push (issue 18) costs the uWebSockets.js listener, in
// CPU microseconds per subscriber per second, at 100 and 1,000 subscribers and intervals
// of 1000 and 100 ms, for Server-Sent Events and for WebSockets.
//
// The server runs in a child process with a dashboard-sized tree (8 HTTP server zones, 8
// location zones, 4 upstreams of 4 peers; its /status/ is the stream) and reports its own
// CPU time (process.cpuUsage) over each window; the clients live in this process, so
// their work is not counted. From each window the server's idle CPU over a window of the
// same length, with no subscriber, is taken away. Also measured: one render of the
// stream's answer (what each tick costs once, however many subscribers share it).
// Every wait is bounded; the child is killed if it does not stop. Loopback only.
import { fork, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { createApi, type ApiRequest } from '../src/api/index.js';
import { liveAnswers } from '../src/api/live.js';
import type { StatusConfig } from '../src/metrics/catalog.js';
import { serverZones } from '../src/metrics/http-zones.js';
import { Status } from '../src/metrics/status.js';
import { serveApi } from '../src/transport/uws.js';
import { fail, finish, medianNs, table } from './report.js';
import { stopChild } from './processes.js';

const SCRIPT = fileURLToPath(import.meta.url);
const HOST = '127.0.0.1';
const PATH = '/status/';
const WINDOW_MS = Number(process.env.PUSH_WINDOW_MS ?? 5000);

const tree: StatusConfig = {
  http: {
    serverZones: Array.from({ length: 8 }, (_, i) => ({ name: `site-${i}` })),
    locationZones: Array.from({ length: 8 }, (_, i) => `loc-${i}`),
    upstreams: Array.from({ length: 4 }, (_, u) => ({ name: `backend-${u}`, peers: Array.from({ length: 4 }, (_, p) => ({ server: `10.0.${u}.${p + 1}:8080` })) })),
  },
};

type ToServer = { type: 'measure'; ms: number };
type FromServer = { type: 'ready'; port: number; renderUs: number; bytes: number } | { type: 'measured'; cpuUs: number; subscribers: number; timers: number };

/** The child: the API on uWS over the tree, counting its own CPU when asked. */
async function serve(): Promise<void> {
  const status = Status.create(tree, { workers: 1, writer: true, instance: `bench-push-${process.pid}` });
  process.on('exit', () => status.remove());
  const site = serverZones.recorder(status, 'site-0');
  // Something changes between ticks, as under traffic.
  setInterval(() => {
    site.requestStarted();
    site.responseSent(200, 100, 200);
  }, 10).unref();
  const api = createApi({ status });
  const server = await serveApi({ host: HOST, port: 0, handler: api });
  const request: ApiRequest = { method: 'GET', path: PATH, query: '', address: HOST, stream: true };
  const first = liveAnswers(api)(request);
  if (!first?.stream) fail('the API gave no stream');
  const stream = first.stream;
  const bytes = Buffer.byteLength(stream.next().body as string);
  const renderUs = medianNs(() => stream.next().release?.(), 200, 50) / 1000;
  process.on('message', (m: ToServer) => {
    const start = process.cpuUsage();
    setTimeout(() => {
      const used = process.cpuUsage(start);
      process.send!({ type: 'measured', cpuUs: used.user + used.system, subscribers: server.subscribers, timers: server.timers } satisfies FromServer);
    }, m.ms);
  });
  process.on('disconnect', () => {
    server.close();
    process.exit(0);
  });
  process.send!({ type: 'ready', port: server.port, renderUs, bytes } satisfies FromServer);
}

function ask<T extends FromServer['type']>(child: ChildProcess, type: T, send?: ToServer, ms = 60_000): Promise<Extract<FromServer, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} from the server within ${ms} ms`)), ms);
    const on = (m: FromServer) => {
      if (m.type !== type) return;
      clearTimeout(timer);
      child.off('message', on);
      resolve(m as Extract<FromServer, { type: T }>);
    };
    child.on('message', on);
    if (send) child.send(send);
  });
}

interface Client {
  /** Frames (events or messages) received. */
  frames: number;
  close(): void;
}

/** An event-stream client on a raw socket: it counts events and reads as fast as it can. */
function sseClient(port: number, interval: number): Promise<Client> {
  return new Promise((resolve, reject) => {
    const client: Client & { socket?: Socket } = { frames: 0, close: () => client.socket?.destroy() };
    const socket = connect(port, HOST, () => {
      socket.write(`GET ${PATH}?interval=${interval} HTTP/1.1\r\nHost: ${HOST}\r\nAccept: text/event-stream\r\n\r\n`);
      resolve(client);
    });
    client.socket = socket;
    let tail = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      const text = tail + chunk;
      let at = text.indexOf('\n\n');
      let last = 0;
      for (let i = 0; at >= 0 && i < 1_000_000; i++) {
        client.frames++;
        last = at + 2;
        at = text.indexOf('\n\n', last);
      }
      tail = text.slice(Math.max(last, text.length - 1));
    });
    socket.on('error', reject);
  });
}

function wsClient(port: number, interval: number): Promise<Client> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${HOST}:${port}${PATH}?interval=${interval}`);
    const client: Client = { frames: 0, close: () => ws.terminate() };
    ws.on('message', () => client.frames++);
    ws.once('open', () => resolve(client));
    ws.once('error', reject);
  });
}

async function main(): Promise<void> {
  const child = fork(SCRIPT, ['serve'], { stdio: 'inherit' });
  try {
    const ready = await ask(child, 'ready');
    // The server's own background (the recording timer, V8) in a window with no
    // subscriber: the least of three, as a window can only gain from the machine's noise.
    const idles: number[] = [];
    for (let i = 0; i < 3; i++) idles.push((await ask(child, 'measured', { type: 'measure', ms: WINDOW_MS })).cpuUs);
    const idle = { cpuUs: Math.min(...idles) };
    const rows: Array<Array<string | number>> = [];
    const results: Record<string, number> = { window_ms: WINDOW_MS, render_us: ready.renderUs, frame_bytes: ready.bytes, idle_cpu_us_per_s: idle.cpuUs / (WINDOW_MS / 1000) };
    for (const kind of ['sse', 'ws'] as const)
      for (const interval of [1000, 100])
        for (const n of [100, 1000]) {
          const clients: Client[] = [];
          for (let i = 0; i < n; i += 100) clients.push(...(await Promise.all(Array.from({ length: Math.min(100, n - i) }, () => (kind === 'sse' ? sseClient : wsClient)(ready.port, interval)))));
          // Every client has its first frame before the window opens.
          for (let i = 0; i < 2000 && clients.some((c) => c.frames === 0); i++) await new Promise((r) => setTimeout(r, 5));
          const before = clients.reduce((a, c) => a + c.frames, 0);
          const m = await ask(child, 'measured', { type: 'measure', ms: WINDOW_MS });
          const frames = clients.reduce((a, c) => a + c.frames, 0) - before;
          for (const c of clients) c.close();
          if (m.subscribers !== n) fail(`${kind} ${interval} ms: ${m.subscribers} subscribers, not ${n}`);
          const seconds = WINDOW_MS / 1000;
          const perSubscriberSecond = Math.max(0, m.cpuUs - idle.cpuUs) / seconds / n;
          const expected = (n * WINDOW_MS) / interval;
          // The baseline: a render for each subscriber, what a timer per subscriber costs
          // before it writes a byte.
          const unshared = (ready.renderUs * 1000) / interval;
          rows.push([kind, interval, n, m.timers, frames, Math.round((100 * frames) / expected), m.cpuUs / 1000, perSubscriberSecond, unshared]);
          results[`${kind}_${interval}ms_${n}_us_per_subscriber_s`] = perSubscriberSecond;
          results[`${kind}_${interval}ms_${n}_delivered_pct`] = (100 * frames) / expected;
          // Let the server see them go before the next round counts its subscribers.
          await new Promise((r) => setTimeout(r, 300));
        }
    table(
      `Live push of ${PATH} (${ready.bytes} bytes a frame; one render ${ready.renderUs.toFixed(1)} us; server idle ${(idle.cpuUs / 1000).toFixed(1)} ms CPU per ${WINDOW_MS} ms window)`,
      ['kind', 'interval ms', 'subscribers', 'timers', 'frames', 'delivered %', 'server CPU ms', 'us per subscriber-second', 'unshared renders alone'],
      rows,
    );
    finish('push', results);
  } finally {
    await stopChild(child);
  }
}

if (process.argv[2] === 'serve') void serve();
else
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
