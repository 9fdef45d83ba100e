// Proxying end to end: bin/zonal with two workers in front of backends this test runs on
// loopback, checked by what the backends saw and what zonal's status says.
import t from 'tap';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import { eventually, freePorts, getJson, Zonal } from './zonal.js';

/** A backend: answers with its name, counts requests and the most in flight at once. */
class Backend {
  requests = 0;
  inflight = 0;
  maxInflight = 0;
  bodyBytes = 0;
  /** Requests whose client (the proxy) went away before the answer. */
  aborted = 0;
  /** Bytes of /big handed to the socket so far. */
  pushed = 0;
  /** The request body of a /hold request, paused until resumed. */
  held: IncomingMessage | undefined;
  delay = 0;
  status = 200;
  /** TCP connections accepted: how a proxy keeps or closes its connections. */
  connections = 0;
  /** Bytes read on connections that have closed: what a proxy sent, to the byte. */
  bytesIn = 0;
  private closed = 0;
  server: Server | undefined;
  constructor(
    readonly name: string,
    readonly port: number,
  ) {}

  start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      this.requests++;
      this.inflight++;
      this.maxInflight = Math.max(this.maxInflight, this.inflight);
      req.on('data', (d: Buffer) => (this.bodyBytes += d.length));
      res.on('close', () => {
        if (!res.writableEnded) {
          this.aborted++;
          this.inflight--;
        }
      });
      if (req.url?.includes('/hold')) {
        req.pause();
        this.held = req;
      }
      req.on('end', () => {
        const answer = () => {
          if (res.destroyed) return;
          this.inflight--;
          if (req.url?.includes('/big')) {
            // 100 MB in 64 KiB chunks, produced as the client reads.
            const chunk = Buffer.alloc(65536, 120);
            let left = 1600;
            res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(left * 65536) });
            const pump = () => {
              while (left > 0) {
                left--;
                this.pushed += chunk.length;
                if (!res.write(chunk)) return void res.once('drain', pump);
              }
              res.end();
            };
            pump();
            return;
          }
          const body = JSON.stringify({ backend: this.name, url: req.url, host: req.headers.host, xff: req.headers['x-forwarded-for'] ?? null, bytes: this.bodyBytes });
          res.writeHead(this.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
          res.end(body);
        };
        if (this.delay) setTimeout(answer, this.delay);
        else answer();
      });
    });
    this.server.on('connection', (socket) => {
      this.connections++;
      socket.on('close', () => {
        this.bytesIn += socket.bytesRead;
        this.closed++;
      });
    });
    return new Promise((resolve) => this.server!.listen(this.port, '127.0.0.1', () => resolve()));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.server) return resolve();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
      this.server = undefined;
    });
  }

  closedConnections(): number {
    return this.closed;
  }

  reset(): void {
    this.requests = 0;
    this.maxInflight = 0;
    this.bodyBytes = 0;
    this.pushed = 0;
  }
}

const ports = await freePorts(10);
const [site, admin] = ports;
const [a, b, c, d, spare, e, f] = ports.slice(2, 9).map((p, i) => new Backend('abcdefg'[i], p));
await Promise.all([a, b, c, d, e, f].map((x) => x.start()));

const conf = `
worker_processes 2;
http {
    upstream weighted {
        zone weighted 256k;
        server 127.0.0.1:${a.port} weight=5;
        server 127.0.0.1:${b.port} weight=3;
        server 127.0.0.1:${c.port} weight=2;
        keepalive 16;
    }
    upstream withbackup {
        server 127.0.0.1:${spare.port} max_fails=1 fail_timeout=1s;
        server 127.0.0.1:${d.port} backup;
    }
    upstream limited {
        server 127.0.0.1:${d.port} max_conns=2;
        queue 2 timeout=300ms;
    }
    upstream hashed {
        hash $arg_k consistent;
        server 127.0.0.1:${a.port};
        server 127.0.0.1:${b.port};
        server 127.0.0.1:${c.port};
        server 127.0.0.1:${d.port};
    }
    upstream flaky {
        server 127.0.0.1:${b.port};
        server 127.0.0.1:${c.port};
    }
    upstream reused {
        server 127.0.0.1:${e.port};
    }
    upstream closing {
        server 127.0.0.1:${e.port};
        keepalive off;
    }
    upstream counted {
        server 127.0.0.1:${f.port};
        keepalive off;
    }
    upstream health {
        server 127.0.0.1:${spare.port} max_fails=2 fail_timeout=1s slow_start=1s;
        server 127.0.0.1:${b.port};
    }
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        location /w/ { proxy_pass http://weighted; }
        location /backup/ { proxy_pass http://withbackup; }
        location /limited/ { proxy_pass http://limited; }
        location /hash/ { proxy_pass http://hashed; }
        location /health/ { proxy_pass http://health; }
        location /reused/ { proxy_pass http://reused; }
        location /closing/ { proxy_pass http://closing; }
        location /counted/ { proxy_pass http://counted; }
        location /flaky/ {
            proxy_pass http://flaky;
            proxy_next_upstream error timeout http_502;
        }
        location /slow/ {
            proxy_pass http://127.0.0.1:${a.port}/;
            proxy_read_timeout 200ms;
        }
        location /rewrite/ {
            # nginx's default limit is 1m: the 100 MB upload below needs none.
            client_max_body_size 0;
            proxy_pass http://127.0.0.1:${a.port}/inner/;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`;
const zonal = await Zonal.start({ 'zonal.conf': conf });
t.teardown(async () => {
  await zonal.stop();
  await Promise.all([a, b, c, d, spare, e, f].map((x) => x.stop()));
});

const JSON_TYPE = { 'Content-Type': 'application/json' };
const status = (path: string) => getJson(`http://127.0.0.1:${admin}/status/${path}`).then((r) => r.body);
const peerPath = (u: string, backend: Backend) => `http/upstreams/${u}/peers/127.0.0.1:${backend.port}`;

/** GETs through zonal, `n` at a time, `total` requests; answers' JSON bodies. */
async function load(path: (i: number) => string, total: number, n = 16): Promise<Array<{ status: number; body: any }>> {
  const out: Array<{ status: number; body: any }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < total) {
        const i = next++;
        const res = await fetch(`http://127.0.0.1:${site}${path(i)}`);
        const text = await res.text();
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // an error page
        }
        out.push({ status: res.status, body });
      }
    }),
  );
  return out;
}

t.test('smooth weighted round robin: 10,000 requests over two workers within ±2% of 5:3:2', async (t) => {
  for (const x of [a, b, c]) x.reset();
  const answers = await load(() => '/w/x', 10_000, 20);
  t.equal(answers.filter((r) => r.status === 200).length, 10_000, 'every request answered');
  const total = a.requests + b.requests + c.requests;
  t.equal(total, 10_000);
  for (const [x, share] of [[a, 0.5], [b, 0.3], [c, 0.2]] as const)
    t.ok(Math.abs(x.requests / total - share) <= 0.02, `${x.name}: ${x.requests} of ${total}, expected ${share * 100}%`);
  const peer = await status(peerPath('weighted', a));
  t.equal(peer.selected.total, a.requests, 'selected.total is what the backend saw');
  t.equal(peer.responses['200'], a.requests);
  t.ok(peer.data.received > 0 && peer.data.sent > 0);
  t.ok(peer.health.header_time >= 0 && peer.health.response_time >= 0);
  const upstream = await status('http/upstreams/weighted');
  t.ok(upstream.keepalive > 0 && upstream.keepalive <= 2 * 3 * 16, `idle cached connections: ${upstream.keepalive}`);
});

t.test('upstream connections are reused by default, and closed after each response with keepalive off', async (t) => {
  const before = e.connections;
  const reused = await load(() => '/reused/x', 200, 4);
  t.equal(reused.filter((r) => r.status === 200).length, 200, 'every request answered');
  // 4 clients at a time over 2 workers: each worker needs at most 4 connections.
  t.ok(e.connections - before <= 8, `200 requests opened ${e.connections - before} connections to the peer`);
  const idle = (await status('http/upstreams/reused')).keepalive;
  t.ok(idle >= 1 && idle <= 8, `the status shows the idle cached connections: ${idle}`);

  const start = e.connections;
  const closing = await load(() => '/closing/x', 100, 4);
  t.equal(closing.filter((r) => r.status === 200).length, 100, 'every request answered');
  t.equal(e.connections - start, 100, 'keepalive off: one connection per request');
  t.equal((await status('http/upstreams/closing')).keepalive, 0, 'and none cached');
});

t.test("a peer's data.sent is what the peer read, to the byte, with bodies of both framings", async (t) => {
  const sized = await fetch(`http://127.0.0.1:${site}/counted/sized`, { method: 'POST', body: 'x'.repeat(1000) });
  await sized.arrayBuffer();
  t.equal(f.bodyBytes, 1000, 'a Content-Length body arrived whole');
  const parts = [Buffer.alloc(3000, 97), Buffer.alloc(17, 98)];
  const chunked = await fetch(`http://127.0.0.1:${site}/counted/chunked`, {
    method: 'POST',
    body: Readable.toWeb(Readable.from(parts)) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  await chunked.arrayBuffer();
  t.equal(f.bodyBytes, 4017, 'a chunked body arrived whole');
  t.ok(await eventually(async () => f.closedConnections() === 2), 'the peer saw both connections close');
  const peer = await status(peerPath('counted', f));
  t.equal(peer.data.sent, f.bytesIn, `data.sent counts what the peer read (${f.bytesIn} bytes)`);
});

t.test('nginx URI replacement, Host and X-Forwarded-For', async (t) => {
  const res = await getJson(`http://127.0.0.1:${site}/rewrite/a%20b?x=1`);
  t.equal(res.status, 200);
  t.equal(res.body.url, '/inner/a%20b?x=1', 'the location part replaced by proxy_pass URI, args kept');
  t.equal(res.body.host, `127.0.0.1:${a.port}`, 'Host: $proxy_host');
  t.equal(res.body.xff, '127.0.0.1', 'X-Forwarded-For as configured');
  const plain = await getJson(`http://127.0.0.1:${site}/w/p?q=2`);
  t.equal(plain.body.url, '/w/p?q=2', 'without a URI part the request URI passes as it came');
  t.equal(plain.body.host, 'weighted', 'Host is the upstream name by default');
  t.equal(plain.body.xff, null, 'no X-Forwarded-For unless configured');
});

t.test('proxy_next_upstream http_502 retries another peer; proxy_read_timeout answers 504', async (t) => {
  c.status = 502;
  t.teardown(() => void (c.status = 200));
  b.reset();
  c.reset();
  const answers = await load(() => '/flaky/x', 20, 2);
  t.ok(answers.every((r) => r.status === 200 && r.body.backend === 'b'), 'every answer came from the healthy peer');
  t.ok(c.requests >= 1, `the failing peer was tried (${c.requests})`);
  const failing = await status(`http/upstreams/flaky/peers/127.0.0.1:${c.port}`);
  t.ok(failing.health.fails >= 1, 'its 502 counted as a failure');
  t.equal(failing.state, 'unavailable', 'max_fails=1: unavailable');

  a.delay = 1000;
  t.teardown(() => void (a.delay = 0));
  const started = Date.now();
  const slow = await fetch(`http://127.0.0.1:${site}/slow/x`);
  await slow.text();
  t.equal(slow.status, 504, 'the peer did not answer within proxy_read_timeout');
  // The peer answers after 1000 ms; the timeout is 200 ms, with some room for a busy machine.
  t.ok(Date.now() - started < 600, `answered after the timeout, not after the peer (${Date.now() - started} ms)`);
  t.ok(await eventually(async () => a.aborted >= 1, 2000), 'the request to the peer was aborted');
  const single = await status(`http/upstreams/127.0.0.1:${a.port}/peers/127.0.0.1:${a.port}`);
  t.equal(single.health.fails, 1, 'the timeout is a failure');
  t.equal(single.state, 'up', 'but the one server of a group is never unavailable (nginx)');
});

t.test('a client that goes away aborts the request to the peer', async (t) => {
  a.delay = 2000;
  t.teardown(() => void (a.delay = 0));
  const before = a.aborted;
  const gone = new AbortController();
  const pending = fetch(`http://127.0.0.1:${site}/slow/x`, { signal: gone.signal }).catch(() => 'aborted');
  t.ok(await eventually(async () => a.inflight === 1, 2000), 'the request reached the peer');
  gone.abort();
  t.equal(await pending, 'aborted');
  t.ok(await eventually(async () => a.aborted === before + 1, 2000), 'the peer saw its request aborted');
});

t.test('backup gets traffic only while the primary fails', async (t) => {
  d.reset();
  const answers = await load(() => '/backup/x', 6, 1);
  t.ok(answers.every((r) => r.status === 200 && r.body.backend === 'd'), 'the backup answered while the primary refuses');
  const primary = await status(`http/upstreams/withbackup/peers/127.0.0.1:${spare.port}`);
  t.ok(primary.health.fails >= 1, 'the primary failed');
  t.equal(primary.state, 'unavailable');
  await spare.start();
  t.teardown(() => spare.stop());
  // After fail_timeout the primary is tried again and takes the traffic back.
  t.ok(
    await eventually(async () => {
      const r = await getJson(`http://127.0.0.1:${site}/backup/x`);
      return r.body.backend === 'e';
    }, 5000),
    'the primary is back after fail_timeout',
  );
  d.reset();
  const after = await load(() => '/backup/x', 10, 2);
  t.ok(after.every((r) => r.body.backend === 'e'), 'no more traffic to the backup');
  t.equal(d.requests, 0);
  await spare.stop();
});

t.test('max_conns holds across two workers as the backend counts; the queue takes the rest', async (t) => {
  d.reset();
  d.delay = 100;
  t.teardown(() => void (d.delay = 0));
  const before = await status('http/upstreams/limited/queue');
  // 8 at once: 2 at the peer, 2 waiting, 4 overflow; the waiting ones time out (300 ms)
  // or get through as the first two finish (100 ms).
  const answers = await load(() => '/limited/x', 8, 8);
  t.ok(d.maxInflight <= 2, `the backend never saw more than 2 at once (${d.maxInflight})`);
  t.equal(d.maxInflight, 2, 'and it saw 2');
  const ok = answers.filter((r) => r.status === 200).length;
  const refused = answers.filter((r) => r.status === 502).length;
  t.equal(ok + refused, 8);
  const q = await status('http/upstreams/limited/queue');
  t.equal(q.overflows - before.overflows, refused, 'each 502 is an overflow (nothing timed out: 100 ms < 300 ms)');
  t.equal(q.queued - before.queued, ok - 2, 'the rest were queued, then served');
  t.equal(q.waiting, 0);
  t.equal(q.timedout - before.timedout, 0);

  // A slow peer: the queued request times out.
  d.delay = 800;
  const slow = await load(() => '/limited/x', 3, 3);
  t.same(slow.map((r) => r.status).sort(), [200, 200, 502], 'the third waited 300 ms and got 502');
  const q2 = await status('http/upstreams/limited/queue');
  t.equal(q2.timedout - q.timedout, 1, 'timedout 1');
  t.equal(q2.waiting, 0);

  // A client that gives up while queued.
  const held = load(() => '/limited/x', 2, 2);
  t.ok(await eventually(async () => d.inflight === 2, 2000), 'both peer slots taken');
  const gone = new AbortController();
  const waiting = fetch(`http://127.0.0.1:${site}/limited/x`, { signal: gone.signal }).catch(() => 'aborted');
  t.ok(await eventually(async () => (await status('http/upstreams/limited/queue')).waiting === 1, 2000), 'one waiting');
  gone.abort();
  t.equal(await waiting, 'aborted');
  t.ok(await eventually(async () => (await status('http/upstreams/limited/queue')).dropped - q2.dropped === 1, 2000), 'dropped 1');
  await held;
  const limited = await status(`http/upstreams/limited/peers/127.0.0.1:${d.port}`);
  t.equal(limited.max_conns, 2);
  t.equal(limited.selected.current, 0, 'nothing in flight afterwards');
});

t.test('passive health: max_fails within fail_timeout, unavailable, back; slow start', async (t) => {
  const path = `http/upstreams/health/peers/127.0.0.1:${spare.port}`;
  // The peer refuses connections: two failures make it unavailable.
  await load(() => '/health/x', 6, 1);
  const down = await status(path);
  t.equal(down.state, 'unavailable');
  t.equal(down.health.unavailable, 1, 'became unavailable once, though two workers saw failures');
  t.ok(down.health.fails >= 2);
  t.ok(down.health.downstart, 'downstart set');
  await spare.start();
  t.teardown(() => spare.stop());
  // Traffic tries it again once fail_timeout has passed: it recovers, slowly.
  let recovering = down;
  t.ok(
    await eventually(async () => {
      await load(() => '/health/x', 2, 1);
      recovering = await status(path);
      return recovering.state !== 'unavailable';
    }, 5000),
    'tried again after fail_timeout',
  );
  t.equal(recovering.state, 'recovering', 'recovering while slow_start runs');
  t.ok(await eventually(async () => {
    await load(() => '/health/x', 4, 2);
    return (await status(path)).state === 'up';
  }, 5000), 'up once slow_start passed');
  const up = await status(path);
  t.ok(up.health.downtime >= 900, `downtime counted (${up.health.downtime} ms)`);
  await spare.stop();
});

t.test('hash consistent: a key stays on its peer; adding a peer moves about 1/N of the keys', async (t) => {
  const keys = Array.from({ length: 400 }, (_, i) => `key-${i}`);
  const where = async () => {
    const out = new Map<string, string>();
    const answers = await load((i) => `/hash/x?k=${keys[i]}`, keys.length, 16);
    for (const r of answers) out.set(new URLSearchParams(r.body.url.split('?')[1]).get('k') ?? '', r.body.backend);
    return out;
  };
  const first = await where();
  const again = await where();
  t.same([...again].sort(), [...first].sort(), 'the same key goes to the same peer');
  t.ok(new Set(first.values()).size === 4, 'all four peers used');
  await spare.start();
  t.teardown(() => spare.stop());
  const put = await getJson(`http://127.0.0.1:${admin}/config/http/upstreams/hashed/servers/127.0.0.1:${spare.port}`, { method: 'PUT', body: '{}', headers: JSON_TYPE });
  t.equal(put.status, 201, 'a fifth peer through /config');
  const after = await where();
  const moved = keys.filter((k) => after.get(k) !== first.get(k));
  t.ok(moved.every((k) => after.get(k) === 'e'), 'keys moved only to the new peer');
  t.ok(moved.length > 0.1 * keys.length && moved.length < 0.3 * keys.length, `${moved.length} of ${keys.length} keys moved (about 1/5)`);
  await spare.stop();
});

t.test('/config in the middle of traffic: a new peer gets requests, down stops them, removal ends them', async (t) => {
  const base = `http://127.0.0.1:${admin}/config/http/upstreams/weighted/servers`;
  d.reset();
  // Traffic that runs until the end of the test.
  let running = true;
  const failures: number[] = [];
  const traffic = Promise.all(
    Array.from({ length: 6 }, async () => {
      while (running) {
        const res = await fetch(`http://127.0.0.1:${site}/w/x`);
        await res.text();
        if (res.status !== 200) failures.push(res.status);
      }
    }),
  );
  t.equal((await getJson(`${base}/127.0.0.1:${d.port}`, { method: 'PUT', body: '{"weight": 5}', headers: JSON_TYPE })).status, 201);
  t.ok(await eventually(async () => d.requests > 50, 5000), 'the new peer receives traffic');
  t.equal((await getJson(`${base}/127.0.0.1:${d.port}/down`, { method: 'PUT', body: 'true', headers: JSON_TYPE })).status, 200);
  t.ok(await eventually(async () => d.inflight === 0, 2000), 'what it had in flight finished');
  const atDown = d.requests;
  await load(() => '/w/x', 200, 8);
  t.equal(d.requests, atDown, 'down: no new requests');
  t.equal((await getJson(`${base}/127.0.0.1:${d.port}`, { method: 'DELETE' })).status, 200);
  running = false;
  await traffic;
  t.same(failures, [], 'no request failed meanwhile');
  const left = await status('http/upstreams/weighted/peers');
  t.notOk(`127.0.0.1:${d.port}` in left, 'removed from the status');
});

/** Resolves once `value()` has not changed for 200 ms (at most `ms`): a stream that
 * stalled on backpressure. */
async function stalled(value: () => number, ms = 5000): Promise<number> {
  const until = Date.now() + ms;
  let last = value();
  let since = Date.now();
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, 20));
    const now = value();
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= 200) break;
  }
  return last;
}

t.test('a 100 MB body streams both ways, held back by the slow side', async (t) => {
  const MB = 1024 * 1024;
  // What may sit between the two ends: socket buffers and a few stream buffers on each
  // hop, far from the 100 MB a buffering proxy would take in.
  const BOUND = 32 * MB;
  a.reset();
  // Upload to a backend that does not read yet.
  let written = 0;
  const uploaded = new Promise<number>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: site, path: '/rewrite/hold', method: 'POST', headers: { 'Content-Length': String(100 * MB) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    let left = 1600;
    const chunk = Buffer.alloc(65536, 97);
    Readable.from(
      (function* () {
        while (left-- > 0) {
          written += chunk.length;
          yield chunk;
        }
      })(),
    ).pipe(req);
  });
  t.ok(await eventually(async () => !!a.held, 5000), 'the request reached the backend');
  const sentWhileHeld = await stalled(() => written);
  t.ok(sentWhileHeld - a.bodyBytes < BOUND, `the client could send only ${(sentWhileHeld / MB).toFixed(1)} MB while the backend read ${(a.bodyBytes / MB).toFixed(1)} MB`);
  a.held!.resume();
  t.equal(await uploaded, 200);
  t.equal(a.bodyBytes, 100 * MB, 'the backend got every byte');

  // Download to a client that stops reading.
  let received = 0;
  let response: IncomingMessage | undefined;
  const downloaded = new Promise<number>((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port: site, path: '/rewrite/big' }, (res) => {
      response = res;
      res.once('data', (d: Buffer) => {
        received += d.length;
        res.pause();
        res.on('data', (more: Buffer) => (received += more.length));
      });
      res.on('end', () => resolve(received));
    })
      .on('error', reject)
      .end();
  });
  t.ok(await eventually(async () => !!response, 5000), 'the response started');
  const pushedWhilePaused = await stalled(() => a.pushed);
  t.ok(pushedWhilePaused - received < BOUND, `the backend could push only ${(pushedWhilePaused / MB).toFixed(1)} MB to a client that read ${(received / MB).toFixed(1)} MB`);
  response!.resume();
  t.equal(await downloaded, 100 * MB, 'the client got every byte');
});

t.test('workers killed with requests in flight give their max_conns slots back', async (t) => {
  d.reset();
  d.delay = 5000;
  t.teardown(() => void (d.delay = 0));
  const stuck = load(() => '/limited/x', 2, 2).catch(() => []);
  t.ok(await eventually(async () => d.inflight === 2, 3000), 'both of the peer\'s slots are taken');
  const workers = zonal.workers();
  const from = zonal.log.length;
  for (const pid of workers) process.kill(pid, 'SIGKILL');
  await zonal.waitLog(/starting another[\s\S]*starting another/, 10_000, from);
  await stuck;
  d.delay = 0;
  t.ok(await eventually(async () => (await fetch(`http://127.0.0.1:${site}/limited/x`).then((r) => r.status, () => 0)) === 200, 10_000), 'the peer takes requests again');
  const peer = await status(`http/upstreams/limited/peers/127.0.0.1:${d.port}`);
  t.equal(peer.selected.current, 0, 'nothing counted in flight');
});

t.test('reload: a zone whose size changed starts again; the others keep their counters', async (t) => {
  const weighted = await status(peerPath('weighted', a));
  const limited = await status(`http/upstreams/limited/peers/127.0.0.1:${d.port}`);
  t.ok(weighted.selected.total > 0 && limited.selected.total > 0);
  t.ok(await zonal.reload(conf.replace('zone weighted 256k;', 'zone weighted 512k;')), 'reloaded');
  t.equal((await status(peerPath('weighted', a))).selected.total, 0, 'the resized zone is a new one');
  t.equal((await status(`http/upstreams/limited/peers/127.0.0.1:${d.port}`)).selected.total, limited.selected.total, 'an unchanged zone keeps its counters');
  const slabs = await status('slabs');
  t.ok('weighted' in slabs, 'the new zone is in /status/slabs');
  t.equal((await fetch(`http://127.0.0.1:${site}/w/x`)).status, 200, 'and serves');
});
