// The `bytes` of a cache's miss, expired and bypass through bin/zonal: every body byte read
// from the proxied server, whether the response was written to the cache or not (the
// spec: `bytes` is what was read from the proxied server, `bytes_written` what was
// stored). Each case has a cache zone of its own, so that its counters are exact.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { MAX_CACHED_BODY } from '../../../src/server/cache/runtime.js';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';

const [site, admin, bport] = await freePorts(3);
const dir = mkdtempSync(join(tmpdir(), 'zonal-cache-bytes-'));

const NO_STORE = 'fifteen bytes!!'; // 15 bytes, as in the audit
const NOT_FOUND = 'no such page'; // 12 bytes, a status proxy_cache_valid does not name
const BYPASSED = 'bypassed body'; // 13 bytes
const STORED = 'stored once'; // 11 bytes
const CUT_SENT = 40; // of a Content-Length of 100
/** Past what the cache keeps by several of the peer's chunks (which are at most 64 KiB):
 * passed on whole, never written, and each chunk after the limit counted too. */
const BIG = Buffer.alloc(MAX_CACHED_BODY + 1024 * 1024, 0x61);

/** What the backend answers, by path; `/f/e`'s answer changes during its test. */
const methods = new Map<string, string[]>();
let expiredAnswer: { headers: Record<string, string>; body: string } = { headers: {}, body: 'first' };

const backend = createServer((req: IncomingMessage, res: ServerResponse) => {
  const url = req.url ?? '/';
  methods.set(url, [...(methods.get(url) ?? []), req.method ?? '']);
  req.resume();
  req.on('end', () => {
    const plain = { 'Content-Type': 'text/plain' };
    switch (url) {
      case '/a/nostore':
        res.writeHead(200, { ...plain, 'Cache-Control': 'no-store' });
        return res.end(NO_STORE);
      case '/a/missing':
        res.writeHead(404, plain);
        return res.end(NOT_FOUND);
      case '/a/head':
        res.writeHead(200, { ...plain, 'Content-Length': '25' });
        return res.end(req.method === 'HEAD' ? undefined : 'x'.repeat(25));
      case '/b/big':
        res.writeHead(200, { ...plain, 'Content-Length': String(BIG.length) });
        return res.end(BIG);
      case '/c/bypassed':
        res.writeHead(200, plain);
        return res.end(BYPASSED);
      case '/c/nostore':
        res.writeHead(200, { ...plain, 'Cache-Control': 'no-store' });
        return res.end(NO_STORE);
      case '/d/stored':
        res.writeHead(200, plain);
        return res.end(STORED);
      case '/e/cut':
        // The peer fails mid-body: 40 of 100 bytes, then the connection closes.
        res.writeHead(200, { ...plain, 'Content-Length': '100' });
        res.write('y'.repeat(CUT_SENT), () => res.socket?.destroy());
        return;
      case '/f/e':
        res.writeHead(200, { ...plain, ...expiredAnswer.headers });
        return res.end(expiredAnswer.body);
      default:
        res.writeHead(500, plain);
        return res.end('unexpected');
    }
  });
});
await new Promise<void>((resolve) => backend.listen(bport, '127.0.0.1', () => resolve()));

const zone = (name: string) => `proxy_cache_path ${dir}/${name} levels=1:2 keys_zone=${name}:1m;`;
const location = (name: string, extra = '') => `
        location /${name}/ {
            proxy_pass http://peer;
            proxy_cache ${name};
            proxy_cache_valid 200 10m;
            ${extra}
        }`;

const conf = `
worker_processes 2;
http {
    ${['a', 'b', 'c', 'd', 'e', 'f'].map(zone).join('\n    ')}
    upstream peer { server 127.0.0.1:${bport}; }
    server {
        listen 127.0.0.1:${site};
        add_header X-Cache-Status $upstream_cache_status always;
        ${location('a')}
        ${location('b')}
        ${location('c', 'proxy_cache_bypass $http_x_bypass;')}
        ${location('d')}
        ${location('e')}
        location /f/ {
            proxy_pass http://peer;
            proxy_cache f;
            proxy_cache_valid 200 1s;
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
  backend.closeAllConnections();
  await new Promise((r) => backend.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const cache = (name: string) => getJson(`http://127.0.0.1:${admin}/status/http/caches/${name}`).then((r) => r.body);

/** Waits until `name`'s `status` counts `n` responses (the worker counts as the response
 * goes out; the client may read the status first). */
const counted = (name: string, status: string, n: number) => eventually(async () => (await cache(name))[status].responses >= n);

async function get(path: string, init: RequestInit = {}): Promise<{ status: number; length: number; cache: string | null }> {
  const res = await fetch(`http://127.0.0.1:${site}${path}`, init);
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, length: body.length, cache: res.headers.get('x-cache-status') };
}

const NOTHING_WRITTEN = { responses_written: 0, bytes_written: 0 };

t.test('a miss that is not cacheable counts its bytes in miss.bytes, none as written', async (t) => {
  t.same(await get('/a/nostore'), { status: 200, length: 15, cache: 'MISS' }, 'Cache-Control: no-store');
  t.same(await get('/a/nostore'), { status: 200, length: 15, cache: 'MISS' }, 'not stored: a miss again');
  t.same(await get('/a/missing'), { status: 404, length: 12, cache: 'MISS' }, 'a status proxy_cache_valid does not name');
  t.ok(await counted('a', 'miss', 3));
  let c = await cache('a');
  t.same(c.miss, { responses: 3, bytes: 15 + 15 + 12, ...NOTHING_WRITTEN });
  t.equal(c.size, 0, 'nothing in the cache');

  // HEAD goes to the peer as GET (proxy_cache_convert_head on, nginx's default): its 25
  // bytes are read, counted and written, and the client gets the head only.
  t.same(await get('/a/head', { method: 'HEAD' }), { status: 200, length: 0, cache: 'MISS' });
  t.same(methods.get('/a/head'), ['GET'], 'the peer got a GET');
  t.ok(await counted('a', 'miss', 4));
  c = await cache('a');
  t.same(c.miss, { responses: 4, bytes: 42 + 25, responses_written: 1, bytes_written: 25 });
});

t.test('a body larger than the cache keeps counts all its bytes in miss.bytes and is not written', async (t) => {
  t.same(await get('/b/big'), { status: 200, length: BIG.length, cache: 'MISS' });
  t.ok(await counted('b', 'miss', 1));
  const c = await cache('b');
  t.same(c.miss, { responses: 1, bytes: BIG.length, ...NOTHING_WRITTEN });
  t.equal(c.size, 0, 'nothing in the cache');
});

t.test('bypass counts the bytes it read, written or not', async (t) => {
  const bypass = { headers: { 'X-Bypass': '1' } };
  t.same(await get('/c/bypassed', bypass), { status: 200, length: 13, cache: 'BYPASS' });
  t.same(await get('/c/nostore', bypass), { status: 200, length: 15, cache: 'BYPASS' });
  t.ok(await counted('c', 'bypass', 2));
  const c = await cache('c');
  t.same(c.bypass, { responses: 2, bytes: 13 + 15, responses_written: 1, bytes_written: 13 }, 'only the cacheable one written');
  t.same(c.miss, { responses: 0, bytes: 0, ...NOTHING_WRITTEN }, 'no lookup, no miss');
});

t.test('a stored miss counts bytes equal to bytes_written', async (t) => {
  t.same(await get('/d/stored'), { status: 200, length: 11, cache: 'MISS' });
  t.same(await get('/d/stored'), { status: 200, length: 11, cache: 'HIT' });
  t.ok(await counted('d', 'hit', 1));
  const c = await cache('d');
  t.same(c.miss, { responses: 1, bytes: 11, responses_written: 1, bytes_written: 11 });
  t.same(c.hit, { responses: 1, bytes: 11 });
  t.same(methods.get('/d/stored'), ['GET'], 'the peer was asked once');
});

t.test('a peer that fails mid-body: the bytes read are counted, nothing written', async (t) => {
  const res = await fetch(`http://127.0.0.1:${site}/e/cut`);
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-cache-status'), 'MISS');
  await t.rejects(res.arrayBuffer(), 'the client sees the response cut short');
  t.ok(await counted('e', 'miss', 1));
  const c = await cache('e');
  t.same(c.miss, { responses: 1, bytes: CUT_SENT, ...NOTHING_WRITTEN });
  t.equal(c.size, 0);
});

t.test('an expired entry answered with a response that is not cacheable: expired.bytes counts it', async (t) => {
  t.same(await get('/f/e'), { status: 200, length: 5, cache: 'MISS' });
  expiredAnswer = { headers: { 'Cache-Control': 'no-store' }, body: 'second answer' }; // 13 bytes
  // proxy_cache_valid 1s: hits until the entry's own time has passed, then expired.
  let hits = 0;
  let last = await get('/f/e');
  for (let i = 0; i < 100 && last.cache === 'HIT'; i++) {
    hits++;
    await new Promise((r) => setTimeout(r, 50));
    last = await get('/f/e');
  }
  t.same(last, { status: 200, length: 13, cache: 'EXPIRED' });
  t.ok(await counted('f', 'expired', 1));
  const c = await cache('f');
  t.same(c.miss, { responses: 1, bytes: 5, responses_written: 1, bytes_written: 5 });
  t.same(c.hit, { responses: hits, bytes: 5 * hits });
  t.same(c.expired, { responses: 1, bytes: 13, ...NOTHING_WRITTEN });
});
