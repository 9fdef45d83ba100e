// Issue 33, item 7: Angie's `least_time` (http: header, last_byte; stream: connect,
// first_byte, last_byte; `inflight`), across 2 workers, on the averages /status shows
// (health.header_time, health.response_time, health.first_byte_time...), against real
// backends one of which is slow. Angie: "the request is passed to the server with the
// least average time and the least number of active connections, taking weights into
// account"; zonal: least average × (active connections + 1) / weight, ties by round
// robin. Also what -t and /config refuse with it.
import { createServer, type Server } from 'node:http';
import t, { type Test } from 'tap';
import { checkConfig, eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { EchoBackend, exchange } from '../stream/peers.js';
import { get, many } from './backends.js';

/** An HTTP backend that answers after `delayMs` (its headers, then its body at once, or
 * with `bodyDelayMs` between them), counting requests; with `stallAfter`, requests past
 * that many take `stallMs` instead (a peer that stops answering in time). */
class TimedBackend {
  requests = 0;
  private server: Server | undefined;
  constructor(
    readonly port: number,
    private readonly delayMs: number,
    private readonly bodyDelayMs = 0,
    private readonly stall?: { after: number; ms: number },
  ) {}
  start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.requests++;
      const delay = this.stall && this.requests > this.stall.after ? this.stall.ms : this.delayMs;
      setTimeout(() => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.flushHeaders();
        setTimeout(() => res.end(`ok ${this.port}`), this.bodyDelayMs);
      }, delay);
    });
    return new Promise((resolve) => this.server!.listen(this.port, '127.0.0.1', () => resolve()));
  }
  stop(): Promise<void> {
    this.server!.closeAllConnections();
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }
}

const [admin, fHeader, fLast, fWeight, sFront, h1, h2, h3, h4, h5, h6, e1, e2, fPlain, fInflight, h7, h8, h9, h10] = await freePorts(19);
const addr = (p: number) => `127.0.0.1:${p}`;
// header: h2's headers are slow. last_byte: h4's headers are fast, its body slow (a
// header balancer would take it for fast). weight: two slow-ish peers, one weighted 4.
const fastH = new TimedBackend(h1, 0);
const slowH = new TimedBackend(h2, 150);
const fastL = new TimedBackend(h3, 0);
const slowL = new TimedBackend(h4, 0, 150);
const w1 = new TimedBackend(h5, 10);
const w4 = new TimedBackend(h6, 10);
// Two same pairs, one balanced without inflight, one with: a steady peer (150 ms), and
// one fast for its first request that then takes 800 ms.
const steadyA = new TimedBackend(h7, 150);
const stallA = new TimedBackend(h8, 0, 0, { after: 1, ms: 800 });
const steadyB = new TimedBackend(h9, 150);
const stallB = new TimedBackend(h10, 0, 0, { after: 1, ms: 800 });
const http = [fastH, slowH, fastL, slowL, w1, w4, steadyA, stallA, steadyB, stallB];
const fastE = new EchoBackend(e1);
const slowE = new EchoBackend(e2, { delayMs: 150 });
for (const b of [...http, fastE, slowE]) await b.start();
t.teardown(() => Promise.all([...http, fastE, slowE].map((b) => b.stop())));

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 2;
http {
    upstream header { zone lt 512k; least_time header; server ${addr(h1)}; server ${addr(h2)}; }
    upstream last { zone lt; least_time last_byte inflight; server ${addr(h3)}; server ${addr(h4)}; }
    upstream weighted { zone lt; least_time header; server ${addr(h5)}; server ${addr(h6)} weight=4; }
    server { listen 127.0.0.1:${fHeader}; location / { proxy_pass http://header; } }
    server { listen 127.0.0.1:${fLast}; location / { proxy_pass http://last; } }
    server { listen 127.0.0.1:${fWeight}; location / { proxy_pass http://weighted; } }
    upstream plain { zone lt; least_time header; server ${addr(h7)}; server ${addr(h8)}; }
    upstream inflight { zone lt; least_time header inflight; server ${addr(h9)}; server ${addr(h10)}; }
    server { listen 127.0.0.1:${fPlain}; location / { proxy_pass http://plain; } }
    server { listen 127.0.0.1:${fInflight}; location / { proxy_pass http://inflight; } }
    server { listen 127.0.0.1:${admin} admin; location / { api /; } }
}
stream {
    upstream echo { zone slt; least_time first_byte; server ${addr(e1)}; server ${addr(e2)}; }
    server { listen 127.0.0.1:${sFront}; proxy_pass echo; }
}
`,
}, 60_000);
t.teardown(() => zonal.stop());

const api = async (path: string) => (await getJson(`http://127.0.0.1:${admin}${path}`)).body;
const write = async (method: string, path: string, body: unknown) => {
  const res = await fetch(`http://127.0.0.1:${admin}${path}`, { method, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};

/** Both workers answered: the status counts what the backends counted. */
async function countsAgree(t: Test, upstream: string, protocol: 'http' | 'stream', counts: Record<string, number>): Promise<any> {
  let peers: any;
  const agree = await eventually(async () => {
    peers = await api(`/status/${protocol}/upstreams/${upstream}/peers`);
    return Object.entries(counts).every(([a, n]) => peers[a]?.selected?.total === n);
  });
  t.ok(agree, `${upstream}: /status counts what the backends served (${JSON.stringify(counts)})`);
  return peers;
}

t.test('least_time header: the peer with slow headers gets few requests, from both workers', async (t) => {
  const n = 80;
  t.same(await many(fHeader, '/', n, 2), new Map([[200, n]]));
  t.equal(fastH.requests + slowH.requests, n, 'every request reached a backend');
  // Round robin would give the slow one 40. It gets what it takes to learn its average
  // (a request or two from each worker while it has no sample), then little.
  t.ok(slowH.requests >= 1 && slowH.requests <= 12, `slow peer got ${slowH.requests} of ${n}`);
  const peers = await countsAgree(t, 'header', 'http', { [addr(h1)]: fastH.requests, [addr(h2)]: slowH.requests });
  t.ok(peers[addr(h2)].health.header_time >= 140, `the slow peer's header_time (${peers[addr(h2)].health.header_time}) is what it balanced on`);
  t.ok(peers[addr(h1)].health.header_time < peers[addr(h2)].health.header_time, "the fast peer's header_time is less");
});

t.test('least_time last_byte: the response time counts, not the headers', async (t) => {
  const n = 60;
  t.same(await many(fLast, '/', n, 2), new Map([[200, n]]));
  t.ok(slowL.requests >= 1 && slowL.requests <= 10, `peer with a slow body got ${slowL.requests} of ${n}`);
  const peers = await countsAgree(t, 'last', 'http', { [addr(h3)]: fastL.requests, [addr(h4)]: slowL.requests });
  t.ok(peers[addr(h4)].health.response_time >= 140, 'its response_time');
  const { header_time: header, response_time: response } = peers[addr(h4)].health;
  t.ok(header < response / 2, `its header_time (${header}) is short beside its response_time (${response}): a header balancer would have favoured it`);
});

t.test('least_time: the weight divides the load', async (t) => {
  // Four clients at once: with equal averages, weight 4 carries about four connections
  // for weight 1's one.
  const n = 100;
  t.same(await many(fWeight, '/', n, 4), new Map([[200, n]]));
  t.ok(w4.requests > w1.requests * 1.8, `weight 4 got ${w4.requests}, weight 1 got ${w1.requests}`);
  await countsAgree(t, 'weighted', 'http', { [addr(h5)]: w1.requests, [addr(h6)]: w4.requests });
});

t.test('least_time inflight: a peer that stalls loses its traffic before its average shows it', async (t) => {
  // Requests come every 20 ms whatever the answers do, as from many clients: during the
  // stall, new requests keep arriving.
  const n = 30;
  const paced = async (port: number) => {
    const all: Array<Promise<{ status: number }>> = [];
    for (let i = 0; i < n; i++) {
      all.push(get(port, '/'));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return (await Promise.all(all)).filter((r) => r.status === 200).length;
  };
  // Both pairs learn their averages first: a request each (the first peer on the tie of
  // no samples, then the one without a sample), the stalling peers still fast.
  t.same(await many(fPlain, '/', 2, 1), new Map([[200, 2]]));
  t.same(await many(fInflight, '/', 2, 1), new Map([[200, 2]]));
  t.same([steadyA.requests, stallA.requests, steadyB.requests, stallB.requests], [1, 1, 1, 1], 'one request each');
  t.equal(await paced(fPlain), n, 'without inflight: every request answered');
  t.equal(await paced(fInflight), n, 'with inflight');
  t.comment(`stalling peer: ${stallA.requests - 1} of ${n} without inflight, ${stallB.requests - 1} with`);
  // Without inflight its fast first answers keep its average low while its requests
  // hang: only its growing connection count holds it back.
  t.ok(stallA.requests - 1 >= n / 2, `without inflight the stalling peer got ${stallA.requests - 1} of ${n}`);
  t.ok(stallB.requests - 1 <= (stallA.requests - 1) / 2, `with inflight it got ${stallB.requests - 1}`);
  await countsAgree(t, 'plain', 'http', { [addr(h7)]: steadyA.requests, [addr(h8)]: stallA.requests });
  await countsAgree(t, 'inflight', 'http', { [addr(h9)]: steadyB.requests, [addr(h10)]: stallB.requests });
});

t.test('stream least_time first_byte: the peer that answers late gets few connections', async (t) => {
  const n = 30;
  for (let i = 0; i < n; i++) {
    const r = await exchange(sFront, 'ping', { expect: 4 });
    t.equal(r.received.toString(), 'ping', `session ${i}`);
  }
  t.equal(fastE.connections + slowE.connections, n);
  t.ok(slowE.connections >= 1 && slowE.connections <= 6, `slow peer got ${slowE.connections} of ${n}`);
  const peers = await countsAgree(t, 'echo', 'stream', { [addr(e1)]: fastE.connections, [addr(e2)]: slowE.connections });
  t.ok(peers[addr(e2)].health.first_byte_time >= 140, `its first_byte_time (${peers[addr(e2)].health.first_byte_time})`);
});

t.test('/config follows least_time: weight, max_conns and backup yes, slow_start no', async (t) => {
  const peer = `/config/http/upstreams/header/servers/${addr(h1)}`;
  const refused = await write('PATCH', peer, { slow_start: 10 });
  t.equal(refused.status, 400);
  t.equal(refused.body.error, 'FormatError');
  t.match(refused.body.description, /slow_start/);
  t.equal((await write('PATCH', peer, { weight: 3, max_conns: 50 })).status, 200, 'weight and max_conns');
  t.same(await api(peer), { weight: 3, max_conns: 50 });
  t.equal((await write('PUT', '/config/http/upstreams/header/servers/127.0.0.1:1', { backup: true })).status, 201, 'a backup peer');
  t.equal((await write('PATCH', `/config/stream/upstreams/echo/servers/${addr(e1)}`, { slow_start: 5 })).status, 400, 'stream too');
  t.equal((await write('PATCH', `/config/stream/upstreams/echo/servers/${addr(e1)}`, { sid: 'x' })).status, 400, 'no sid in stream');
});

t.test('-t: least_time modes by protocol, its parameter, its conflicts', async (t) => {
  const http = (body: string) => `http { upstream u { ${body} } server { listen 127.0.0.1:1; location / { proxy_pass http://u; } } }`;
  const stream = (body: string) => `stream { upstream u { ${body} } server { listen 127.0.0.1:1; proxy_pass u; } }`;
  t.equal((await checkConfig(http('least_time header; server 127.0.0.1:1;'))).code, 0, 'http header');
  t.equal((await checkConfig(http('least_time last_byte inflight; server 127.0.0.1:1 weight=2 backup;'))).code, 0, 'http last_byte inflight, with a backup');
  t.equal((await checkConfig(stream('least_time connect; server 127.0.0.1:1;'))).code, 0, 'stream connect');
  t.equal((await checkConfig(stream('least_time last_byte inflight; server 127.0.0.1:1;'))).code, 0, 'stream last_byte inflight');
  for (const [conf, message] of [
    [http('least_time connect; server 127.0.0.1:1;'), /invalid parameter "connect"/],
    [http('least_time first_byte; server 127.0.0.1:1;'), /invalid parameter "first_byte"/],
    [stream('least_time header; server 127.0.0.1:1;'), /invalid parameter "header"/],
    [http('least_time header always; server 127.0.0.1:1;'), /invalid parameter "always"/],
    [http('least_time; server 127.0.0.1:1;'), /invalid number of arguments in "least_time" directive/],
    [http('least_conn; least_time header; server 127.0.0.1:1;'), /load balancing method redefined/],
    [http('least_time header; server 127.0.0.1:1 slow_start=10s; server 127.0.0.1:2;'), /does not support parameter "slow_start"/],
  ] as const) {
    const r = await checkConfig(conf);
    t.not(r.code, 0, conf);
    t.match(r.err, message, conf);
  }
});
