// Outgoing calls as upstreams (src/embed/undici.ts): fetch through zonal's balancer from two
// worker processes attached to one status, against real node:http backends on 127.0.0.x
// loopback addresses. Exact counts: selected.total per peer by weight, responses by code,
// and data.sent / data.received equal to what each backend's own sockets read and wrote.
// Then a dead peer (its failure shared by both workers, the request retried on the next
// peer, a POST not retried), /config changes seen by the next fetch, max_conns across
// workers, backup peers, the hash key, and recordTo on a plain undici Agent.
//
// The workers are this file run again (ZONAL_EMBED_UNDICI_CHILD): each answers a parent's
// message with the results of the fetches it asked for, so the parent orders every step
// by waiting for answers and for the backends' arrivals, never by sleeping.
import type { ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { Agent, Dispatcher, fetch as undiciFetch } from 'undici';
import { bodyText, createApi } from '../../src/api/index.js';
import { balanceTo, NoLivePeerError, recordTo, upstreamDispatcher } from '../../src/embed/undici.js';
import { INSTANCE_ENV, WORKER_SLOT_ENV } from '../../src/engine/index.js';
import type { UpstreamConfig } from '../../src/metrics/catalog.js';
import { Status } from '../../src/metrics/status.js';
import { forkNode, uniqueName } from '../helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const CHILD = 'ZONAL_EMBED_UNDICI_CHILD';
const WAIT_MS = 30_000;

// ---- Messages between the parent and its workers -------------------------------------------

interface Ask {
  readonly id: number;
  readonly upstream: string;
  readonly path: string;
  readonly n: number;
  readonly method?: string;
  readonly body?: string;
  /** undici's fetch (default) or node's own global fetch. */
  readonly via?: 'undici' | 'global';
}
interface Result {
  readonly status?: number;
  readonly body?: string;
  readonly error?: string;
  readonly cause?: string;
}
interface Answer {
  readonly id: number;
  readonly results: Result[];
}

// ---- Backends -------------------------------------------------------------------------------

interface Backend {
  readonly host: string;
  readonly port: number;
  /** `host:port`: the peer's name. */
  readonly address: string;
  /** Bytes its sockets read and wrote, all of them, closed ones too. */
  bytes(): { read: number; written: number };
  /** Resolves when the next `/hold` request has arrived. */
  arrival(): Promise<void>;
  /** Answers the held requests. */
  release(): void;
  close(): Promise<void>;
}

/** A node:http server on `host`: `/ok` (200, its address), `/missing` (404), `/chunked`
 * (200, a chunked body), `/echo` (200, the request body's length), `/hold` (200 once
 * released), `/flaky` (502 when `flaky`, else as `/ok`), `/slow` (no answer when `flaky`,
 * else as `/ok`). */
async function backend(t: Test, host: string, flaky = false): Promise<Backend> {
  const sockets = new Set<Socket>();
  const held: Array<() => void> = [];
  const waiting: Array<() => void> = [];
  let address = '';
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '/';
    if (path === '/flaky' && flaky) {
      res.statusCode = 502;
      return void res.end('bad gateway');
    }
    if (path === '/slow' && flaky) return;
    if (path === '/ok' || path === '/flaky' || path === '/slow') return void res.end(address);
    if (path === '/missing') {
      res.statusCode = 404;
      return void res.end('not here');
    }
    if (path === '/chunked') {
      res.write('a'.repeat(100));
      return void res.end('b'.repeat(50));
    }
    if (path === '/echo') {
      let n = 0;
      req.on('data', (d: Buffer) => (n += d.length));
      req.on('end', () => res.end(String(n)));
      return;
    }
    if (path === '/hold') {
      held.push(() => res.end(address));
      waiting.splice(0).forEach((w) => w());
      return;
    }
    res.statusCode = 400;
    res.end();
  });
  server.on('connection', (s: Socket) => sockets.add(s));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  address = `${host}:${port}`;
  const b: Backend = {
    host,
    port,
    address,
    bytes: () => {
      let read = 0;
      let written = 0;
      for (const s of sockets) {
        read += s.bytesRead;
        written += s.bytesWritten;
      }
      return { read, written };
    },
    arrival: () =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no /hold request reached ${address} within ${WAIT_MS} ms`)), WAIT_MS);
        waiting.push(() => (clearTimeout(timer), resolve()));
      }),
    release: () => held.splice(0).forEach((answer) => answer()),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  t.teardown(() => b.close());
  return b;
}

/** A `host:port` nothing listens on (connections are refused): a dead peer. */
async function deadAddress(host: string): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `${host}:${port}`;
}

// ---- The status and its API -----------------------------------------------------------------

function setup(t: Test, upstreams: UpstreamConfig[]) {
  const status = Status.create({ http: { upstreams } }, { workers: 4, writer: true, instance: uniqueName('embed-undici') });
  t.teardown(() => status.remove());
  const api = createApi({ status });
  const call = (method: string, path: string, body?: unknown) => {
    const r = api({ method, path, query: '', address: '127.0.0.1', contentType: 'application/json', body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)) })!;
    const text = bodyText(r);
    return { status: r.status, body: text ? (JSON.parse(text) as Any) : undefined };
  };
  const peers = (upstream: string): Record<string, Any> => call('GET', `/status/http/upstreams/${upstream}/peers`).body;
  return { status, call, peers };
}

// ---- Workers --------------------------------------------------------------------------------

interface Worker {
  readonly proc: ChildProcess;
  /** Asks for fetches and resolves with their results. */
  ask(a: Omit<Ask, 'id'>): Promise<Result[]>;
}

let asked = 0;

async function startWorker(t: Test, instance: string, slot: number): Promise<Worker> {
  const proc = forkNode(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, [CHILD]: '1', [INSTANCE_ENV]: instance, [WORKER_SLOT_ENV]: String(slot) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, (r: Result[]) => void>();
  let exited: string | undefined;
  const failAll = new Set<(err: Error) => void>();
  proc.on('message', (m: Answer | 'ready') => {
    if (m === 'ready') return;
    pending.get(m.id)?.(m.results);
    pending.delete(m.id);
  });
  proc.on('exit', (code, signal) => {
    exited = `worker ${slot} exited (${code ?? signal})`;
    for (const f of failAll) f(new Error(exited));
  });
  t.teardown(() => {
    if (exited === undefined) proc.kill();
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker ${slot} not ready within ${WAIT_MS} ms`)), WAIT_MS);
    proc.once('message', () => (clearTimeout(timer), resolve()));
    proc.once('exit', () => (clearTimeout(timer), reject(new Error(exited))));
  });
  return {
    proc,
    ask: (a) =>
      new Promise<Result[]>((resolve, reject) => {
        const id = ++asked;
        const timer = setTimeout(() => reject(new Error(`worker ${slot}: no answer to ${a.path} within ${WAIT_MS} ms`)), WAIT_MS);
        const fail = (err: Error) => (clearTimeout(timer), reject(err));
        failAll.add(fail);
        pending.set(id, (results) => {
          clearTimeout(timer);
          failAll.delete(fail);
          resolve(results);
        });
        proc.send({ ...a, id } satisfies Ask);
      }),
  };
}

/** A worker: its status attached in the slot it was given, a dispatcher per upstream. */
async function child(): Promise<void> {
  const status = Status.attach({ writer: true });
  const dispatchers = new Map<string, Dispatcher>();
  const dispatcher = (name: string) => {
    let d = dispatchers.get(name);
    if (!d) dispatchers.set(name, (d = upstreamDispatcher(status, name)));
    return d;
  };
  const one = async (a: Ask): Promise<Result> => {
    const init = { method: a.method ?? 'GET', ...(a.body !== undefined ? { body: a.body } : {}), dispatcher: dispatcher(a.upstream) };
    try {
      // The host is the upstream's name: the dispatcher sends every request to its peers.
      const url = `http://${a.upstream}${a.path}`;
      const res = a.via === 'global' ? await fetch(url, init as unknown as RequestInit) : await undiciFetch(url, init);
      return { status: res.status, body: await res.text() };
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause;
      return { error: String(err), cause: cause?.code };
    }
  };
  process.on('message', async (a: Ask) => {
    const results: Result[] = [];
    for (let i = 0; i < a.n; i++) results.push(await one(a));
    process.send!({ id: a.id, results } satisfies Answer);
  });
  process.send!('ready');
}

// ---- The tests ------------------------------------------------------------------------------

const statuses = (results: Result[]) => results.map((r) => r.status ?? r.cause ?? r.error);
const count = (results: Result[], body: string) => results.filter((r) => r.body === body).length;

async function tests() {
  const t = (await import('tap')).default;

  t.test('two workers: round robin by weight, responses, wire bytes, /config, dead peers, max_conns, backup', async (t) => {
    const [a, b, c] = await Promise.all([backend(t, '127.0.0.2'), backend(t, '127.0.0.3'), backend(t, '127.0.0.4')]);
    const [e, f] = await Promise.all([backend(t, '127.0.0.6'), backend(t, '127.0.0.7')]);
    const [g, h] = await Promise.all([backend(t, '127.0.0.8'), backend(t, '127.0.0.9')]);
    const [i, j] = await Promise.all([backend(t, '127.0.0.10'), backend(t, '127.0.0.11')]);
    const dead = await deadAddress('127.0.0.5');
    const deadToo = await deadAddress('127.0.0.5');
    const { status, call, peers } = setup(t, [
      { name: 'rr', peers: [{ server: a.address, weight: 3 }, { server: b.address }] },
      { name: 'dead', peers: [{ server: dead }, { server: e.address }] },
      { name: 'post', peers: [{ server: deadToo }, { server: f.address }] },
      { name: 'conns', peers: [{ server: g.address, maxConns: 1 }, { server: h.address, maxConns: 1 }] },
      { name: 'backup', peers: [{ server: i.address }, { server: j.address, backup: true }] },
    ]);
    const [w1, w2] = await Promise.all([startWorker(t, status.instance, 1), startWorker(t, status.instance, 2)]);
    const both = async (a: Omit<Ask, 'id'>) => {
      const [r1, r2] = await Promise.all([w1.ask(a), w2.ask(a)]);
      return [...r1, ...r2];
    };

    await t.test('round robin with weights 3 and 1, from both workers at once', async (t) => {
      // Each worker keeps its own smooth round robin (nginx's workers do): 40 picks are
      // ten whole periods of A A B A in each, and each next batch of 4 one more period.
      const ok = await both({ upstream: 'rr', path: '/ok', n: 40 });
      t.same(new Set(statuses(ok)), new Set([200]), 'every fetch answered 200');
      t.equal(count(ok, a.address), 60, 'A (weight 3) answered 3 of every 4');
      t.equal(count(ok, b.address), 20, 'B (weight 1) answered 1 of every 4');
      const missing = await both({ upstream: 'rr', path: '/missing', n: 4 });
      t.same(statuses(missing), [404, 404, 404, 404, 404, 404, 404, 404]);
      const chunked = await both({ upstream: 'rr', path: '/chunked', n: 4 });
      t.same(new Set(chunked.map((r) => r.body)), new Set(['a'.repeat(100) + 'b'.repeat(50)]), 'a chunked body comes whole');
      // A POST with a body, through node's own fetch (its handlers are undici 6's).
      const echo = await both({ upstream: 'rr', path: '/echo', method: 'POST', body: 'x'.repeat(1000), n: 4, via: 'global' });
      t.same(new Set(echo.map((r) => r.body)), new Set(['1000']), "node's global fetch sends the body through the dispatcher");

      const p = peers('rr');
      t.equal(p[a.address].selected.total, 78, 'A: selected 2 workers x 39');
      t.equal(p[b.address].selected.total, 26, 'B: selected 2 workers x 13');
      t.equal(p[a.address].selected.current, 0, 'nothing in flight');
      t.ok(p[a.address].selected.last, 'selected.last is set');
      t.same(p[a.address].responses, { 200: 72, 404: 6 }, 'A: responses by code');
      t.same(p[b.address].responses, { 200: 24, 404: 2 }, 'B: responses by code');
      for (const [peer, name] of [
        [a, 'A'],
        [b, 'B'],
      ] as const) {
        const wire = peer.bytes();
        t.equal(p[peer.address].data.sent, wire.read, `${name}: data.sent is what its sockets read (${wire.read} bytes)`);
        t.equal(p[peer.address].data.received, wire.written, `${name}: data.received is what its sockets wrote (${wire.written} bytes)`);
        t.type(p[peer.address].health.header_time, 'number', `${name}: header_time`);
        t.type(p[peer.address].health.response_time, 'number', `${name}: response_time`);
        t.equal(p[peer.address].health.fails, 0);
      }
    });

    await t.test('/config: a peer marked down, and a peer added, take effect for the next fetch', async (t) => {
      t.equal(call('PATCH', `/config/http/upstreams/rr/servers/${a.address}`, { down: true }).status, 200);
      const down = await both({ upstream: 'rr', path: '/ok', n: 4 });
      t.equal(count(down, b.address), 8, 'A is down: every fetch went to B');
      t.equal(peers('rr')[a.address].state, 'down');
      const added = call('PUT', `/config/http/upstreams/rr/servers/${c.address}`, {});
      t.equal(added.status, 201, 'C added');
      const after = await both({ upstream: 'rr', path: '/ok', n: 4 });
      t.equal(count(after, c.address), 4, 'C took its share at once: half of each worker’s next four');
      t.equal(count(after, b.address), 4);
      const p = peers('rr');
      t.equal(p[c.address].selected.total, 4);
      t.same(p[c.address].responses, { 200: 4 });
      t.equal(p[c.address].data.sent, c.bytes().read, "C's data.sent is what its sockets read");
      t.equal(p[c.address].data.received, c.bytes().written, "C's data.received is what its sockets wrote");
      t.equal(p[a.address].selected.total, 78, 'A was not selected while down');
    });

    await t.test('a dead peer: fails, unavailable in both workers, the request retried on the next peer', async (t) => {
      // Round robin's first pick in a worker is the first peer: the dead one.
      const first = await w1.ask({ upstream: 'dead', path: '/ok', n: 1 });
      t.same(first, [{ status: 200, body: e.address }], 'the GET was retried on E and answered');
      let p = peers('dead');
      t.equal(p[dead].health.fails, 1, 'the dead peer: one failed attempt');
      t.equal(p[dead].health.unavailable, 1, 'max_fails 1: unavailable');
      t.equal(p[dead].state, 'unavailable');
      t.ok(p[dead].health.downstart, 'downstart set');
      t.equal(p[dead].selected.total, 1);
      t.same(p[dead].responses, {}, 'no response');
      // The other worker never tried it: its state is shared.
      const second = await w2.ask({ upstream: 'dead', path: '/ok', n: 4 });
      t.equal(count(second, e.address), 4, 'worker 2 sent all four to E');
      p = peers('dead');
      t.equal(p[dead].selected.total, 1, 'worker 2 never selected the unavailable peer');
      t.equal(p[e.address].selected.total, 5);
      t.same(p[e.address].responses, { 200: 5 });
      t.equal(p[e.address].data.sent, e.bytes().read, "E's data.sent: the retried request's bytes are E's");
      t.equal(p[e.address].data.received, e.bytes().written);
      t.equal(p[dead].data.sent, 0, 'nothing was written to the dead peer');
    });

    await t.test('a POST is not retried (proxy_next_upstream without non_idempotent)', async (t) => {
      const [r] = await w1.ask({ upstream: 'post', path: '/echo', method: 'POST', body: 'hello', n: 1 });
      t.equal(r.cause, 'ECONNREFUSED', 'the fetch failed with the peer’s error');
      const p = peers('post');
      t.equal(p[deadToo].health.fails, 1);
      t.equal(p[f.address].selected.total, 0, 'F was not tried');
      // The next POST goes to F: the dead peer is unavailable.
      const [next] = await w1.ask({ upstream: 'post', path: '/echo', method: 'POST', body: 'hello', n: 1 });
      t.same(next, { status: 200, body: '5' });
    });

    await t.test('max_conns across workers', async (t) => {
      // Worker 1 holds one request on each peer (max_conns 1 each).
      const onG = g.arrival();
      const heldG = w1.ask({ upstream: 'conns', path: '/hold', n: 1 });
      await onG;
      const onH = h.arrival();
      const heldH = w1.ask({ upstream: 'conns', path: '/hold', n: 1 });
      await onH;
      let p = peers('conns');
      t.equal(p[g.address].selected.current, 1, 'G has its one connection');
      t.equal(p[h.address].selected.current, 1, 'H has its one connection');
      const [busy] = await w2.ask({ upstream: 'conns', path: '/ok', n: 1 });
      t.equal(busy.cause, 'ZONAL_NO_LIVE_PEER', "worker 2 finds every peer at max_conns: no live upstreams");
      g.release();
      t.same(await heldG, [{ status: 200, body: g.address }]);
      const [free] = await w2.ask({ upstream: 'conns', path: '/ok', n: 1 });
      t.same(free, { status: 200, body: g.address }, 'G freed: worker 2 gets it, H still being full');
      h.release();
      t.same(await heldH, [{ status: 200, body: h.address }]);
      p = peers('conns');
      t.equal(p[g.address].selected.total, 2);
      t.equal(p[h.address].selected.total, 1);
      t.equal(p[g.address].health.fails, 0, 'being full is no failure');
      t.equal(p[g.address].selected.current + p[h.address].selected.current, 0);
    });

    await t.test('backup: used only while the primaries are down', async (t) => {
      const up = await both({ upstream: 'backup', path: '/ok', n: 3 });
      t.equal(count(up, i.address), 6, 'the primary took everything');
      t.equal(call('PATCH', `/config/http/upstreams/backup/servers/${i.address}`, { down: true }).status, 200);
      const down = await both({ upstream: 'backup', path: '/ok', n: 2 });
      t.equal(count(down, j.address), 4, 'the primary down: the backup');
      t.equal(call('PATCH', `/config/http/upstreams/backup/servers/${i.address}`, { down: false }).status, 200);
      const back = await both({ upstream: 'backup', path: '/ok', n: 2 });
      t.equal(count(back, i.address), 4, 'the primary back: the backup idle again');
      const p = peers('backup');
      t.equal(p[j.address].selected.total, 4);
      t.same(p[j.address].responses, { 200: 4 });
    });
  });

  t.test('balanceTo on an Agent: requests for the upstream balanced, others untouched; the hash key; a retry with a string body', async (t) => {
    const [a, b, other] = await Promise.all([backend(t, '127.0.0.12'), backend(t, '127.0.0.13'), backend(t, '127.0.0.14')]);
    const dead = await deadAddress('127.0.0.15');
    const { status, peers } = setup(t, [
      { name: 'backend', peers: [{ server: a.address }, { server: b.address }] },
      { name: 'hashed', method: 'hash', peers: [{ server: a.address }, { server: b.address }] },
      { name: 'retry', peers: [{ server: dead }, { server: b.address }] },
    ]);
    const agent = new Agent();
    t.teardown(() => agent.close());
    const dispatcher = agent.compose(balanceTo(status, 'backend'), balanceTo(status, 'hashed', { key: (o) => o.path }), balanceTo(status, 'retry'));
    const text = async (url: string) => (await undiciFetch(url, { dispatcher })).text();
    t.same([await text('http://backend/ok'), await text('http://backend/ok')], [a.address, b.address], 'http://backend/ balanced');
    t.equal(await text(`http://${other.address}/ok`), other.address, 'another origin passes through');
    t.equal(peers('backend')[a.address].selected.total, 1);

    const byPath = new Map<string, string>();
    for (let n = 0; n < 3; n++) for (const path of ['/ok?1', '/ok?2', '/ok?3', '/ok?4']) {
      const at = await text(`http://hashed${path}`);
      if (byPath.has(path)) t.equal(at, byPath.get(path), `${path} goes to one peer`);
      byPath.set(path, at);
    }
    const p = peers('hashed');
    t.equal(p[a.address].selected.total + p[b.address].selected.total, 12);

    // undici's own request API, a PUT with a string body: idempotent and sent again.
    const r = await dispatcher.request({ origin: 'http://retry', path: '/echo', method: 'PUT', body: 'twelve bytes' });
    t.equal(await r.body.text(), '12', 'the PUT was retried on B, body and all');
    const q = peers('retry');
    t.equal(q[dead].health.fails, 1);
    t.equal(q[b.address].selected.total, 1);
  });

  t.test('proxy_next_upstream http_502: another peer when one can be had, else the answer', async (t) => {
    const [x, y] = await Promise.all([backend(t, '127.0.0.22', true), backend(t, '127.0.0.23')]);
    const { status, peers } = setup(t, [
      { name: 'flaky', peers: [{ server: x.address }, { server: y.address }] },
      { name: 'alone', peers: [{ server: x.address }] },
    ]);
    const next = ['error', 'timeout', 'http_502'] as const;
    const flaky = upstreamDispatcher(status, 'flaky', { nextUpstream: next });
    const alone = upstreamDispatcher(status, 'alone', { nextUpstream: next });
    t.teardown(() => Promise.all([flaky.close(), alone.close()]));
    const r = await undiciFetch('http://flaky/flaky', { dispatcher: flaky });
    t.same([r.status, await r.text()], [200, y.address], "X's 502 dropped for Y's answer");
    let p = peers('flaky');
    t.equal(p[x.address].health.fails, 1, 'the 502 is a failed attempt');
    t.equal(p[x.address].state, 'unavailable');
    t.same(p[x.address].responses, {}, 'the dropped answer is not counted, as the server does not');
    t.same(p[y.address].responses, { 200: 1 });
    t.equal(p[x.address].selected.current + p[y.address].selected.current, 0, 'both released');
    const only = await undiciFetch('http://alone/flaky', { dispatcher: alone });
    t.same([only.status, await only.text()], [502, 'bad gateway'], 'no other peer: the caller gets the 502');
    p = peers('alone');
    t.equal(p[x.address].health.fails, 1, 'and it still counts as a failure');
    t.same(p[x.address].responses, { 502: 1 });
    t.equal(peers('flaky')[x.address].data.received, 0, 'nor are its bytes');
    t.equal(p[x.address].data.received * 2, x.bytes().written, "the answer's bytes: X wrote two alike, one dropped, one passed on");
  });

  t.test('a timeout (undici’s headersTimeout) is retried on the next peer', async (t) => {
    const [x, y] = await Promise.all([backend(t, '127.0.0.24', true), backend(t, '127.0.0.25')]);
    const { status, peers } = setup(t, [{ name: 'slow', peers: [{ server: x.address }, { server: y.address }] }]);
    const dispatcher = upstreamDispatcher(status, 'slow', { agent: { headersTimeout: 300 } });
    t.teardown(() => dispatcher.destroy());
    const r = await undiciFetch('http://slow/slow', { dispatcher });
    t.same([r.status, await r.text()], [200, y.address], 'X gave no answer in time: Y answered');
    const p = peers('slow');
    t.equal(p[x.address].health.fails, 1, 'the timeout is a failed attempt');
    t.equal(p[x.address].state, 'unavailable');
    t.equal(p[x.address].selected.current, 0, 'released');
    t.same(p[y.address].responses, { 200: 1 });
  });

  t.test('upstreamDispatcher: no live peer, and errors that are not the peer’s', async (t) => {
    const a = await backend(t, '127.0.0.16');
    const { status, call, peers } = setup(t, [{ name: 'only', peers: [{ server: a.address }] }]);
    const dispatcher = upstreamDispatcher(status, 'only');
    t.teardown(() => dispatcher.close());
    t.equal(call('PATCH', `/config/http/upstreams/only/servers/${a.address}`, { down: true }).status, 200);
    const err = await undiciFetch('http://only/ok', { dispatcher }).catch((e: Error) => e);
    const cause = (err as { cause?: unknown }).cause;
    t.ok(cause instanceof NoLivePeerError, 'the one peer down: NoLivePeerError');
    t.equal((cause as NoLivePeerError).reason, 'unavailable');
    t.equal(call('PATCH', `/config/http/upstreams/only/servers/${a.address}`, { down: false }).status, 200);
    // A header undici refuses before sending: the caller's error, not the peer's failure.
    const bad = await dispatcher.request({ origin: 'http://only', path: '/ok', method: 'GET', headers: { 'transfer-encoding': 'chunked' } }).catch((e: Error) => e);
    t.ok(bad instanceof Error, 'undici refused the request');
    // An abort before the answer: not the peer's failure either.
    const onHold = a.arrival();
    const controller = new AbortController();
    const aborted = undiciFetch('http://only/hold', { dispatcher, signal: controller.signal }).catch((e: Error) => e);
    await onHold;
    controller.abort();
    t.equal(((await aborted) as Error).name, 'AbortError');
    a.release();
    t.equal(await (await undiciFetch('http://only/ok', { dispatcher })).text(), a.address);
    const p = peers('only')[a.address];
    t.equal(p.health.fails, 0, 'no failure counted');
    t.equal(p.selected.current, 0, 'every pick released');
    t.equal(p.state, 'up');
  });

  t.test('recordTo on a plain undici Agent: the peer each request went to', async (t) => {
    const [k, l, m] = await Promise.all([backend(t, '127.0.0.17'), backend(t, '127.0.0.18'), backend(t, '127.0.0.19')]);
    const dead = await deadAddress('127.0.0.20');
    const { status, peers } = setup(t, [{ name: 'rec', peers: [{ server: k.address }, { server: l.address }, { server: dead }] }]);
    const agent = new Agent();
    t.teardown(() => agent.close());
    const dispatcher = agent.compose(recordTo(status, 'rec'));
    for (let n = 0; n < 3; n++) t.equal(await (await undiciFetch(`http://${k.address}/ok`, { dispatcher })).text(), k.address);
    for (let n = 0; n < 2; n++) t.equal((await undiciFetch(`http://${l.address}/missing`, { dispatcher })).status, 404);
    t.equal(await (await undiciFetch(`http://${l.address}/chunked`, { dispatcher })).text(), 'a'.repeat(100) + 'b'.repeat(50));
    t.equal(await (await undiciFetch(`http://${m.address}/ok`, { dispatcher })).text(), m.address, 'a host of no peer passes unrecorded');
    const refused = await undiciFetch(`http://${dead}/ok`, { dispatcher }).catch((e: Error) => e);
    t.equal((refused as { cause?: { code?: string } }).cause?.code, 'ECONNREFUSED');
    const p = peers('rec');
    t.equal(p[k.address].selected.total, 3);
    t.same(p[k.address].responses, { 200: 3 });
    t.equal(p[l.address].selected.total, 3);
    t.same(p[l.address].responses, { 200: 1, 404: 2 });
    for (const [peer, name] of [
      [k, 'K'],
      [l, 'L'],
    ] as const) {
      t.equal(p[peer.address].data.sent, peer.bytes().read, `${name}: data.sent is what its sockets read`);
      t.equal(p[peer.address].data.received, peer.bytes().written, `${name}: data.received is what its sockets wrote`);
      t.type(p[peer.address].health.header_time, 'number');
      t.equal(p[peer.address].selected.current, 0);
    }
    t.equal(Object.keys(p).length, 3, 'no peer made for the other host');
    t.equal(p[dead].health.fails, 1, 'the refused request: a failure');
    t.equal(p[dead].health.unavailable, 0, 'recording only: no peer becomes unavailable');
    t.equal(p[dead].state, 'up');

    // A peer named: every request through it counts there, wherever it went.
    const named = agent.compose(recordTo(status, 'rec', k.address));
    t.equal(await (await undiciFetch(`http://${m.address}/ok`, { dispatcher: named })).text(), m.address);
    t.equal(peers('rec')[k.address].selected.total, 4);
    t.throws(() => recordTo(status, 'nope'), /no HTTP upstream "nope"/, 'an upstream not in the catalog is refused at once');
  });

  t.test('without a connection to read (a dispatcher that is not undici’s client): counted from the callbacks', async (t) => {
    const r = await backend(t, '127.0.0.21');
    const { status, peers } = setup(t, [{ name: 'est', peers: [{ server: r.address }] }]);
    // The real exchange through a plain Agent, unrecorded: what the wire carried.
    const agent = new Agent();
    t.teardown(() => agent.close());
    const request = { origin: `http://${r.address}`, path: '/ok', method: 'GET', headers: { 'x-trace': 'abc' } } as const;
    const real = await agent.request(request);
    const body = await real.body.text();
    const wire = r.bytes();
    // The same exchange played back by a dispatcher with no socket, recorded.
    class Replay extends Dispatcher {
      override dispatch(_opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
        const controller = { aborted: false, paused: false, reason: null, abort() {}, pause() {}, resume() {} };
        queueMicrotask(() => {
          handler.onRequestStart?.(controller, {});
          handler.onResponseStart?.(controller, real.statusCode, real.headers, real.statusText);
          handler.onResponseData?.(controller, Buffer.from(body));
          handler.onResponseEnd?.(controller, {});
        });
        return true;
      }
      override async close(): Promise<void> {}
      override async destroy(): Promise<void> {}
    }
    const replayed = await new Replay().compose(recordTo(status, 'est')).request(request);
    t.equal(await replayed.body.text(), r.address);
    const p = peers('est')[r.address];
    t.equal(p.data.sent, wire.read, 'data.sent: the request as undici writes it (line, host, connection, headers)');
    t.equal(p.data.received, wire.written, 'data.received: status line, headers and a body of known length');
    t.same(p.responses, { 200: 1 });
  });
}

if (process.env[CHILD]) await child();
else await tests();
