// What the proxy cache answers besides a plain hit, through bin/zonal, as nginx's
// documentation describes it (ngx_http_proxy_module, and the core filters every answer
// goes through): a HEAD goes to the peer as a GET and is stored (proxy_cache_convert_head);
// a cached 200 answers byte ranges (single and multipart) when the peer allowed them, and
// conditional requests with 304 or 412; proxy_cache_revalidate sends conditions only for a
// 200 or 206; an error proxy_intercept_errors takes is remembered for as long as it may
// be cached, and answered by the error page again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CacheBackend } from './backend.js';
import { freePorts, Zonal } from '../zonal.js';

const [site, bport] = await freePorts(2);
const backend = new CacheBackend(bport);
await backend.start();
const dir = mkdtempSync(join(tmpdir(), 'zonal-cache-answers-'));

const conf = `
worker_processes 1;
http {
    proxy_cache_path ${dir}/c levels=1:2 keys_zone=answers:1m;
    upstream b { server 127.0.0.1:${bport}; }
    server {
        listen 127.0.0.1:${site};
        add_header X-Cache-Status $upstream_cache_status always;
        location / {
            proxy_pass http://b;
            proxy_cache answers;
            proxy_cache_valid 200 201 10m;
        }
        location /nohead/ {
            proxy_pass http://b;
            proxy_cache answers;
            proxy_cache_valid 200 10m;
            proxy_cache_convert_head off;
        }
        location /short/ {
            proxy_pass http://b;
            proxy_cache answers;
            proxy_cache_valid 200 201 1s;
            proxy_cache_revalidate on;
        }
        location /intercept/ {
            proxy_pass http://b;
            proxy_cache answers;
            proxy_cache_valid 200 401 10m;
            proxy_intercept_errors on;
            error_page 404 401 = @fallback;
        }
        location @fallback {
            return 403 "fallback";
        }
    }
}
`;

const zonal = await Zonal.start({ 'zonal.conf': conf });
t.teardown(async () => {
  await zonal.stop();
  await backend.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function get(path: string, headers: Record<string, string> = {}, method = 'GET') {
  const res = await fetch(`http://127.0.0.1:${site}${path}`, { headers, method });
  return { status: res.status, body: await res.text(), headers: res.headers, cache: res.headers.get('x-cache-status') };
}

const MODIFIED = 'Wed, 21 Oct 2015 07:28:00 GMT';
const ETAG = '"v1"';
/** A 200 of 8 bytes with validators, allowing ranges. */
const RANGED = { body: 'SEE-THIS', headers: { 'Content-Type': 'text/html', 'Last-Modified': MODIFIED, ETag: ETAG, 'Accept-Ranges': 'bytes' } };

t.test('proxy_cache_convert_head: a HEAD is a GET to the peer, stored; off: a HEAD, not stored', async (t) => {
  const methods: string[] = [];
  backend.answers.set('/head', (req) => (methods.push(req.method ?? ''), { body: 'whole body' }));
  const first = await get('/head', {}, 'HEAD');
  t.same([first.status, first.body, first.cache], [200, '', 'MISS'], 'the client gets the head');
  t.same(methods, ['GET'], 'the peer got a GET');
  const second = await get('/head', {}, 'HEAD');
  t.same([second.status, second.body, second.cache], [200, '', 'HIT'], 'the next HEAD is a hit');
  t.equal(second.headers.get('content-length'), '10', "with the stored GET's length");
  const full = await get('/head');
  t.same([full.body, full.cache], ['whole body', 'HIT'], 'and a GET gets the whole stored body');
  t.equal(backend.count('/head'), 1);

  const off: string[] = [];
  backend.answers.set('/nohead/h', (req) => (off.push(req.method ?? ''), { body: 'whole body' }));
  t.equal((await get('/nohead/h', {}, 'HEAD')).cache, 'MISS');
  t.equal((await get('/nohead/h', {}, 'HEAD')).cache, 'MISS', 'a HEAD answer has no body to store');
  t.same(off, ['HEAD', 'HEAD'], 'off: the peer gets the HEAD');
});

t.test('byte ranges of a cached 200 whose peer allowed them', async (t) => {
  backend.answers.set('/r', RANGED);
  const miss = await get('/r', { Range: 'bytes=4-' });
  t.same([miss.status, miss.body, miss.cache], [200, 'SEE-THIS', 'MISS'], 'a miss: the whole answer');
  t.equal(backend.seen.get('/r')!.range, undefined, 'the peer never gets the Range: the entry must be whole');

  const one = await get('/r', { Range: 'bytes=4-' });
  t.same([one.status, one.body, one.cache], [206, 'THIS', 'HIT']);
  t.equal(one.headers.get('content-range'), 'bytes 4-7/8');
  t.equal(one.headers.get('content-length'), '4');

  const multi = await get('/r', { Range: 'bytes=0-2,4-' });
  t.equal(multi.status, 206);
  const boundary = /^multipart\/byteranges; boundary=(\d{20})$/.exec(multi.headers.get('content-type') ?? '')?.[1];
  t.ok(boundary, 'multipart/byteranges');
  t.equal(
    multi.body,
    `\r\n--${boundary}\r\nContent-Type: text/html\r\nContent-Range: bytes 0-2/8\r\n\r\nSEE` +
      `\r\n--${boundary}\r\nContent-Type: text/html\r\nContent-Range: bytes 4-7/8\r\n\r\nTHIS` +
      `\r\n--${boundary}--\r\n`,
  );

  const none = await get('/r', { Range: 'bytes=8-' });
  t.same([none.status, none.headers.get('content-range')], [416, 'bytes */8'], 'no range in the body: 416');
  t.equal((await get('/r', { Range: 'bytes=4-', 'If-Range': ETAG })).status, 206, 'If-Range with its ETag');
  t.equal((await get('/r', { Range: 'bytes=4-', 'If-Range': '"v0"' })).status, 200, 'If-Range with another: the whole');
  const head = await get('/r', { Range: 'bytes=-3' }, 'HEAD');
  t.same([head.status, head.headers.get('content-range'), head.body], [206, 'bytes 5-7/8', ''], 'HEAD: the ranged head');

  backend.answers.set('/unranged', { body: 'SEE-THIS' });
  await get('/unranged');
  const whole = await get('/unranged', { Range: 'bytes=4-' });
  t.same([whole.status, whole.body, whole.cache], [200, 'SEE-THIS', 'HIT'], 'a peer without Accept-Ranges: never ranged');
  t.equal(backend.count('/r'), 1, 'all from the one entry');
});

t.test('conditional requests to a cached 200: 304 and 412 from its validators', async (t) => {
  backend.answers.set('/c', RANGED);
  await get('/c');
  const ims = await get('/c', { 'If-Modified-Since': MODIFIED });
  t.same([ims.status, ims.body, ims.cache], [304, '', 'HIT']);
  t.equal(ims.headers.get('etag'), ETAG, 'with the validators');
  t.equal(ims.headers.get('content-type'), null, 'without the type');
  t.equal((await get('/c', { 'If-None-Match': ETAG })).status, 304, 'If-None-Match');
  t.equal((await get('/c', { 'If-None-Match': '"v0"' })).status, 200, 'another tag');
  t.equal((await get('/c', { 'If-Modified-Since': 'Thu, 22 Oct 2015 07:28:00 GMT' })).status, 200, 'another date');
  t.equal((await get('/c', { 'If-Match': '"v0"' })).status, 412, 'If-Match that fails');
  t.equal(backend.count('/c'), 1);
  t.equal(backend.seen.get('/c')!['if-none-match'], undefined, "the client's conditions never reach the peer");
});

t.test('proxy_cache_revalidate: conditions for an expired 200, none for another status', async (t) => {
  backend.answers.set('/short/ok', (req) => (req.headers['if-none-match'] === ETAG ? { status: 304 } : RANGED));
  backend.answers.set('/short/201', { status: 201, body: 'made', headers: { 'Last-Modified': MODIFIED, ETag: ETAG } });
  t.equal((await get('/short/ok')).cache, 'MISS');
  t.equal((await get('/short/201')).cache, 'MISS');
  t.equal((await get('/short/201')).cache, 'HIT');
  await new Promise((r) => setTimeout(r, 1100)); // proxy_cache_valid 1s
  const ok = await get('/short/ok');
  t.same([ok.body, ok.cache], ['SEE-THIS', 'REVALIDATED']);
  t.equal(backend.seen.get('/short/ok')!['if-modified-since'], MODIFIED);
  const other = await get('/short/201');
  t.same([other.status, other.cache], [201, 'EXPIRED']);
  t.same([backend.seen.get('/short/201')!['if-modified-since'], backend.seen.get('/short/201')!['if-none-match']], [undefined, undefined], 'a 201 is never revalidated');
});

t.test('proxy_intercept_errors: the error page answers, and a cacheable error is remembered', async (t) => {
  backend.answers.set('/intercept/gone', { status: 404, body: 'peer page', headers: { 'Cache-Control': 'max-age=60' } });
  const first = await get('/intercept/gone');
  t.same([first.status, first.body], [403, 'fallback'], "the location's error page");
  const second = await get('/intercept/gone');
  t.same([second.status, second.body], [403, 'fallback'], 'from the cache: the error page again');
  t.equal(backend.count('/intercept/gone'), 1, 'cached from max-age, though proxy_cache_valid does not name 404');

  backend.answers.set('/intercept/auth', { status: 401, body: 'peer page', headers: { 'Cache-Control': 'no-cache' } });
  t.equal((await get('/intercept/auth')).status, 403);
  backend.answers.set('/intercept/auth', { body: 'now fine' });
  const fine = await get('/intercept/auth');
  t.same([fine.status, fine.body, fine.cache], [200, 'now fine', 'MISS'], 'a no-cache error is not remembered');
  t.equal(backend.count('/intercept/auth'), 2);

  backend.answers.set('/intercept/ok', { body: 'fine' });
  t.same((await get('/intercept/ok')).body, 'fine', 'a status no error_page names passes');
  t.equal((await get('/intercept/ok')).cache, 'HIT');
});
