// Cache hits through bin/zonal, one worker: the first hit of an entry in a second goes
// through node:http and the next ones reuse its bytes (src/server/cache/prebuilt.ts).
// Both must be the same bytes, with add_header's and $upstream_cache_status, and every
// counter (the cache's, the server and location zones', connections) as for any answer.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CacheBackend } from './backend.js';
import { RawClient, request } from '../../transport/raw.js';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';

const [site, admin, bport] = await freePorts(3);
const backend = new CacheBackend(bport);
await backend.start();
const dir = mkdtempSync(join(tmpdir(), 'zonal-cache-hit-'));

const conf = `
worker_processes 1;
http {
    proxy_cache_path ${dir}/c levels=1:2 keys_zone=hits:1m;
    upstream b { server 127.0.0.1:${bport}; keepalive 4; }
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        add_header X-Cache-Status $upstream_cache_status always;
        add_header X-Fixed "one value";
        location / {
            status_zone root;
            proxy_pass http://b;
            proxy_cache hits;
            proxy_cache_valid 200 10m;
            proxy_cache_bypass $http_x_bypass;
        }
        location /uri/ {
            proxy_pass http://b;
            proxy_cache hits;
            proxy_cache_valid 200 10m;
            # A block with add_header replaces the outer list.
            add_header X-Uri $uri;
            add_header X-Cache-Status $upstream_cache_status;
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
  await backend.stop();
  rmSync(dir, { recursive: true, force: true });
});

const status = (path: string) => getJson(`http://127.0.0.1:${admin}/status/${path}`).then((r) => r.body);

/** One connection's requests, one after another; every byte it received for them. */
async function onOneConnection(requests: Buffer[], head = false): Promise<{ raw: Buffer; responses: Awaited<ReturnType<RawClient['read']>>[]; sent: number }> {
  const c = await RawClient.connect(site);
  const chunks: Buffer[] = [];
  c.socket.on('data', (d: Buffer) => chunks.push(d));
  const responses = [];
  let sent = 0;
  try {
    for (const r of requests) {
      sent += r.length;
      await c.send(r);
      responses.push(await c.read({ head }));
    }
    return { raw: Buffer.concat(chunks), responses, sent };
  } finally {
    c.destroy();
  }
}

/** The responses of `raw` (whole, head and body), split at each status line. */
const split = (raw: Buffer) =>
  raw
    .toString('latin1')
    .split(/(?=HTTP\/1\.1 )/)
    .filter((s) => s !== '');
const undated = (s: string) => s.replace(/\r\nDate: [^\r]+\r\n/, '\r\nDate: <date>\r\n');

t.test('hits after the first are its bytes, and counted as it is', async (t) => {
  backend.answers.set('/same', { body: 'x'.repeat(1000), headers: { ETag: '"v1"', 'Content-Length': '1000' } });
  const miss = await onOneConnection([request('GET', '/same')]);
  t.equal(miss.responses[0].headers['x-cache-status'], 'MISS');
  type Counts = Awaited<ReturnType<typeof status>>;
  let zoneBefore: Counts, rootBefore: Counts, cacheBefore: Counts;
  let run: Awaited<ReturnType<typeof onOneConnection>> | undefined;
  let hits: string[] = [];
  // Five hits in one second (the Date's): asked again when a second turned (bounded).
  // The counters are read before each attempt, so that only the judged five count.
  for (let attempt = 0; attempt < 5; attempt++) {
    zoneBefore = await status('http/server_zones/site');
    rootBefore = await status('http/location_zones/root');
    cacheBefore = await status('http/caches/hits');
    run = await onOneConnection(Array.from({ length: 5 }, () => request('GET', '/same')));
    hits = split(run.raw);
    if (new Set(hits.map((h) => /\r\nDate: ([^\r]+)/.exec(h)?.[1])).size === 1) break;
  }
  t.equal(hits.length, 5, 'five responses');
  t.ok(
    run!.responses.every((r) => r.status === 200 && r.body.toString() === 'x'.repeat(1000) && r.headers['x-cache-status'] === 'HIT' && r.headers['x-fixed'] === 'one value'),
    "each a hit, with the body and add_header's",
  );
  t.equal(new Set(hits).size, 1, 'the five hits are the same bytes');
  const head = hits[0].slice(0, hits[0].indexOf('\r\n\r\n') + 4);
  t.match(head, /^HTTP\/1\.1 200 OK\r\nContent-Type: text\/plain\r\nETag: "v1"\r\nContent-Length: 1000\r\nX-Cache-Status: HIT\r\nX-Fixed: one value\r\nDate: [^\r]+ GMT\r\nConnection: keep-alive\r\n\r\n$/, "the head, in order (no Keep-Alive header: keepalive_timeout has no second argument)");
  t.equal(backend.count('/same'), 1, 'the backend saw the miss only');

  t.ok(await eventually(async () => (await status('http/caches/hits')).hit.responses - cacheBefore.hit.responses === 5), 'the cache counted five hits');
  const cache = await status('http/caches/hits');
  t.equal(cache.hit.bytes - cacheBefore.hit.bytes, 5000, 'and their body bytes');
  const zone = await status('http/server_zones/site');
  const root = await status('http/location_zones/root');
  t.equal(zone.requests.total - zoneBefore.requests.total, 5, 'server zone: five requests');
  t.equal(zone.responses['200'] - zoneBefore.responses['200'], 5, 'five 200s');
  t.equal(zone.data.sent - zoneBefore.data.sent, run!.raw.length, 'data.sent: every byte the client got');
  t.equal(zone.data.received - zoneBefore.data.received, run!.sent, 'data.received: every byte it sent');
  t.equal(root.data.sent - rootBefore.data.sent, run!.raw.length, 'location zone: the same bytes');
  t.equal(root.responses['200'] - rootBefore.responses['200'], 5);
});

t.test('HEAD, Connection: close and HTTP/1.0 hits: the same head, their own connection handling', async (t) => {
  backend.answers.set('/kinds', { body: 'kinds body', headers: { 'Content-Length': '10' } });
  await onOneConnection([request('GET', '/kinds')]);
  const get = await onOneConnection([request('GET', '/kinds'), request('GET', '/kinds')]);
  const [, second] = split(get.raw);
  const headRun = await onOneConnection([request('HEAD', '/kinds'), request('HEAD', '/kinds')], true);
  for (const h of split(headRun.raw)) t.equal(undated(h), undated(second.slice(0, second.indexOf('\r\n\r\n') + 4)), 'HEAD: the head of a GET, no body');

  const c = await RawClient.connect(site);
  await c.send(request('GET', '/kinds', { Connection: 'close' }));
  const closed = await c.read();
  t.equal(closed.headers.connection, 'close');
  t.equal(closed.headers['x-cache-status'], 'HIT');
  t.equal(closed.body.toString(), 'kinds body');
  await c.waitClosed();
  t.pass('the connection closed after the hit');

  const old = await RawClient.connect(site);
  await old.send('GET /kinds HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
  const r1 = await old.read();
  await old.send('GET /kinds HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
  const r2 = await old.read();
  t.same([r1.headers.connection, r2.headers.connection, r2.body.toString()], ['keep-alive', 'keep-alive', 'kinds body'], 'HTTP/1.0 keep-alive kept');
  old.destroy();
  t.equal(backend.count('/kinds'), 1);
});

t.test('add_header with a request variable: each hit its own value', async (t) => {
  backend.answers.set('/uri/a', { body: 'a', headers: { 'Content-Length': '1' } });
  await onOneConnection([request('GET', '/uri/a')]);
  const run = await onOneConnection([request('GET', '/uri/a'), request('GET', '/uri/a?q=1'), request('GET', '/uri/a')]);
  t.same(
    run.responses.map((r) => [r.headers['x-uri'], r.headers['x-cache-status'], r.body.toString()]),
    [
      ['/uri/a', 'HIT', 'a'],
      ['/uri/a', 'MISS', 'a'],
      ['/uri/a', 'HIT', 'a'],
    ],
    'the variable evaluated for each (the query makes another key)',
  );
});

t.test('a new version of the entry is answered, not the bytes of the old one', async (t) => {
  backend.answers.set('/v', { body: 'one', headers: { 'Content-Length': '3' } });
  await onOneConnection([request('GET', '/v')]);
  t.same((await onOneConnection([request('GET', '/v'), request('GET', '/v')])).responses.map((r) => r.body.toString()), ['one', 'one']);
  // A bypass writes the entry again: the next hits answer its new body.
  backend.answers.set('/v', { body: 'two!', headers: { 'Content-Length': '4' } });
  const bypass = await onOneConnection([request('GET', '/v', { 'X-Bypass': '1' })]);
  t.same([bypass.responses[0].headers['x-cache-status'], bypass.responses[0].body.toString()], ['BYPASS', 'two!']);
  const after = await onOneConnection([request('GET', '/v'), request('GET', '/v')]);
  t.same(
    after.responses.map((r) => [r.headers['x-cache-status'], r.headers['content-length'], r.body.toString()]),
    [
      ['HIT', '4', 'two!'],
      ['HIT', '4', 'two!'],
    ],
  );
  t.equal(backend.count('/v'), 2);
});
