// A peer's `unavailable`, `downtime` and `downstart` across the checks that follow an
// outage, through bin/zonal with two workers, for an HTTP and a stream upstream. Peer A
// (max_fails=1 fail_timeout=1s) refuses connections, B answers: A becomes unavailable, is
// checked again after fail_timeout and fails, is checked again once its backend is up and
// recovers, then fails once more. What the counters do is Angie's (see the header of
// src/server/upstream/balancer.ts): a failed check does not make the peer unavailable
// again, since it never came back; its outage, and its downtime, run from the failure
// that began it to the check that ends it.
import t from 'tap';
import type { Test } from 'tap';
import { createServer, type Server } from 'node:http';
import { eventually, freePorts, getJson, Zonal } from './zonal.js';
import { EchoBackend, exchange } from './stream/peers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const FAIL_TIMEOUT = 1000;
// Clock readings on both sides land on whole milliseconds: a reading taken "before"
// may be one short.
const MS = 1;

const [admin, site, relay, httpA, httpB, streamA, streamB] = await freePorts(7);

/** A backend for A: answers 200 while started. */
class HttpBackend {
  private server: Server | undefined;
  constructor(readonly port: number) {}
  start(): Promise<void> {
    const server = createServer((_req, res) => res.end('A\n'));
    this.server = server;
    return new Promise((resolve) => server.listen(this.port, '127.0.0.1', () => resolve()));
  }
  stop(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    this.server = undefined;
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }
}

const httpB_ = createServer((_req, res) => res.end('B\n'));
await new Promise<void>((resolve) => httpB_.listen(httpB, '127.0.0.1', () => resolve()));
const echoB = new EchoBackend(streamB);
await echoB.start();
const httpA_ = new HttpBackend(httpA);
const echoA = new EchoBackend(streamA);
let echoAStarted = false;
t.teardown(async () => {
  httpB_.closeAllConnections();
  await new Promise((r) => httpB_.close(r));
  await echoB.stop();
  await httpA_.stop();
  if (echoAStarted) await echoA.stop();
});

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 2;
http {
    upstream u {
        zone u 64k;
        server 127.0.0.1:${httpA} max_fails=1 fail_timeout=1s;
        server 127.0.0.1:${httpB};
        keepalive off;
    }
    server {
        listen 127.0.0.1:${site};
        location / { proxy_pass http://u; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
stream {
    upstream s {
        zone s 64k;
        server 127.0.0.1:${streamA} max_fails=1 fail_timeout=1s;
        server 127.0.0.1:${streamB};
    }
    server { listen 127.0.0.1:${relay}; proxy_pass s; }
}
`,
});
t.teardown(() => zonal.stop());

interface Protocol {
  readonly name: string;
  /** One request (HTTP) or session (stream) through zonal; it must succeed: on B when A
   * fails. */
  request(t: Test): Promise<void>;
  /** A's status path. */
  readonly path: string;
  startA(): Promise<void>;
  stopA(): Promise<void>;
}

const protocols: Protocol[] = [
  {
    name: 'http',
    async request(t) {
      const res = await fetch(`http://127.0.0.1:${site}/x`);
      await res.text();
      if (res.status !== 200) t.fail(`a request answered ${res.status}`);
    },
    path: `http/upstreams/u/peers/127.0.0.1:${httpA}`,
    startA: () => httpA_.start(),
    stopA: () => httpA_.stop(),
  },
  {
    name: 'stream',
    async request(t) {
      const r = await exchange(relay, 'hello');
      if (r.received.toString() !== 'hello') t.fail(`a session echoed "${r.received}"`);
    },
    path: `stream/upstreams/s/peers/127.0.0.1:${streamA}`,
    startA: async () => {
      await echoA.start();
      echoAStarted = true;
    },
    stopA: async () => {
      await echoA.stop();
      echoAStarted = false;
    },
  },
];

/** A's status, with the clock read just before and after the read. */
async function read(p: Protocol): Promise<{ peer: Any; before: number; after: number }> {
  const before = Date.now();
  const peer = (await getJson(`http://127.0.0.1:${admin}/status/${p.path}`)).body;
  return { peer, before, after: Date.now() };
}

/** Sends requests one at a time, 20 ms apart, until A's status satisfies `done` (at most
 * `ms`): A's status then, and when the request after which it held was sent. Workers
 * record a failure before they try the next peer, and a success as the exchange ends,
 * which the client may see first: the status is polled a little after each request. */
async function until(t: Test, p: Protocol, done: (peer: Any) => boolean, ms: number): Promise<{ peer: Any; sent: number; before: number; after: number }> {
  const end = Date.now() + ms;
  for (let i = 0; i < 500 && Date.now() < end; i++) {
    const sent = Date.now();
    await p.request(t);
    let seen: Awaited<ReturnType<typeof read>> | undefined;
    if (await eventually(async () => done((seen = await read(p)).peer), 50)) return { ...seen!, sent };
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${p.name}: A's status never got there in ${ms} ms: ${JSON.stringify((await read(p)).peer)}`);
}

/** downtime while unavailable: what was counted before, and since `downstart` to the read. */
function liveDowntime(t: Test, r: { peer: Any; before: number; after: number }, past: number, since: number, message: string): void {
  const d = r.peer.health.downtime;
  t.ok(d >= past + r.before - since - MS && d <= past + r.after - since + MS, `${message}: downtime ${d} is ${past} + the ${r.before - since}..${r.after - since} ms since downstart`);
}

for (const p of protocols) {
  t.test(`${p.name}: fails, fails its check, recovers, fails again`, async (t) => {
    // 1. The first failure: A becomes unavailable.
    const first = await until(t, p, (a) => a.health.fails === 1, 3000);
    let a = first.peer;
    t.equal(a.state, 'unavailable', 'max_fails=1: unavailable');
    t.equal(a.health.unavailable, 1, 'unavailable: 1');
    t.equal(a.selected.total, 1);
    const downstart = a.health.downstart;
    const t1 = Date.parse(downstart);
    t.ok(t1 >= first.sent - MS && t1 <= first.after, `downstart ${downstart}: when the request failed`);
    liveDowntime(t, first, 0, t1, 'while unavailable');

    // 2. fail_timeout later one request checks it; the check fails.
    const second = await until(t, p, (x) => x.health.fails === 2, FAIL_TIMEOUT + 2000);
    a = second.peer;
    t.ok(second.after >= t1 + FAIL_TIMEOUT - MS, `checked after fail_timeout (${second.after - t1} ms after downstart)`);
    t.equal(a.selected.total, 2, 'the check is one request: the others went to B');
    t.equal(a.state, 'unavailable', 'the check failed: still unavailable');
    t.equal(a.health.unavailable, 1, 'unavailable still 1: it never came back, so it did not become unavailable again');
    t.equal(a.health.downstart, downstart, 'downstart stays when the outage began');
    liveDowntime(t, second, 0, t1, 'the outage goes on through the failed check');

    // 3. Its backend is up: fail_timeout after the failed check, the next check recovers it.
    await p.startA();
    const third = await until(t, p, (x) => x.state !== 'unavailable', FAIL_TIMEOUT + 2000);
    a = third.peer;
    t.ok(third.after >= second.sent + FAIL_TIMEOUT - MS, `checked again fail_timeout after the failed check (${third.after - second.sent} ms)`);
    t.equal(a.state, 'up', 'the check succeeded: up');
    t.equal(a.selected.total, 3);
    t.equal(a.health.fails, 2);
    t.equal(a.health.unavailable, 1, 'unavailable: still 1 outage');
    t.equal(a.health.downstart, downstart, 'downstart: when the last outage began, shown once it has been unavailable');
    const downtime = a.health.downtime;
    t.ok(
      downtime >= third.sent - t1 - MS && downtime <= third.after - t1 + MS,
      `downtime ${downtime}: from downstart to the successful check (${third.sent - t1}..${third.after - t1} ms)`,
    );
    t.ok(downtime >= 2 * FAIL_TIMEOUT - MS, 'two fail_timeouts at least');
    await p.request(t);
    t.equal((await read(p)).peer.health.downtime, downtime, 'downtime stops growing once it is up');

    // 4. It fails again: a second outage, counted, with its own downstart.
    await p.stopA();
    const fourth = await until(t, p, (x) => x.health.fails === 3, 3000);
    a = fourth.peer;
    t.equal(a.state, 'unavailable');
    t.equal(a.health.unavailable, 2, 'it came back and became unavailable again: 2');
    const t4 = Date.parse(a.health.downstart);
    t.ok(t4 >= fourth.sent - MS && t4 <= fourth.after, `downstart ${a.health.downstart}: the second outage's`);
    t.ok(t4 > third.after - MS, 'after the recovery');
    liveDowntime(t, fourth, downtime, t4, 'the first outage and this one');
  });
}
