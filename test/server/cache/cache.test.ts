// proxy_cache through bin/zonal with two workers: each cache counter of the status moved
// by its own cause, checked against what the backend saw and what the client got.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CacheBackend } from './backend.js';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';

const [site, admin, bport] = await freePorts(3);
const backend = new CacheBackend(bport);
await backend.start();
const dir = mkdtempSync(join(tmpdir(), 'zonal-cache-'));

const conf = `
worker_processes 2;
http {
    proxy_cache_path ${dir}/c levels=1:2 keys_zone=pcache:1m max_size=10m;
    upstream b { server 127.0.0.1:${bport}; }
    server {
        listen 127.0.0.1:${site};
        add_header X-Cache-Status $upstream_cache_status always;
        location / {
            proxy_pass http://b;
            proxy_cache pcache;
            proxy_cache_valid 200 10m;
            proxy_cache_bypass $http_x_bypass;
            proxy_no_cache $arg_nocache;
        }
        location /short/ {
            proxy_pass http://b;
            proxy_cache pcache;
            proxy_cache_valid 200 1s;
            proxy_cache_use_stale error timeout http_500 updating;
            proxy_cache_revalidate on;
        }
        location /forbidden/ {
            proxy_pass http://b;
            proxy_cache pcache;
            proxy_cache_valid 200 1s;
            proxy_cache_use_stale invalid_header http_403 http_429;
        }
        location /bg/ {
            proxy_pass http://b;
            proxy_cache pcache;
            proxy_cache_valid 200 1s;
            proxy_cache_use_stale updating;
            proxy_cache_background_update on;
        }
        location /locked/ {
            proxy_pass http://b;
            proxy_cache pcache;
            proxy_cache_valid 200 10m;
            proxy_cache_lock on;
        }
        location /iff/ {
            proxy_pass http://b;
            proxy_cache pcache;
            proxy_cache_valid 200 10m;
            if ($arg_fresh) { proxy_cache off; }
        }
        location /twice/ {
            proxy_pass http://b;
            proxy_cache pcache;
            proxy_cache_valid 200 10m;
            proxy_cache_min_uses 3;
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

const cache = () => getJson(`http://127.0.0.1:${admin}/status/http/caches/pcache`).then((r) => r.body);

async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; cache: string | null }> {
  const res = await fetch(`http://127.0.0.1:${site}${path}`, { headers });
  return { status: res.status, body: await res.text(), cache: res.headers.get('x-cache-status') };
}

/** Waits until the cache's `status` counts `n` responses (the worker counts as the
 * response goes out; the client may read the status first). */
const counted = (status: string, n: number) => eventually(async () => (await cache())[status].responses >= n);

t.test('miss then hit, with bytes, and the backend reached once', async (t) => {
  const first = await get('/a');
  t.same([first.status, first.body, first.cache], [200, 'body of /a', 'MISS']);
  for (let i = 0; i < 5; i++) {
    const again = await get('/a');
    t.same([again.body, again.cache], ['body of /a', 'HIT']);
  }
  t.equal(backend.count('/a'), 1, 'the backend saw one request');
  t.ok(await counted('hit', 5));
  const c = await cache();
  t.same(c.miss, { responses: 1, bytes: 10, responses_written: 1, bytes_written: 10 });
  t.same(c.hit, { responses: 5, bytes: 50 });
  t.ok(c.size > 10, `size ${c.size} counts the file`);
  t.equal(c.max_size, 10 * 1024 * 1024, 'max_size in bytes');
  t.equal(c.cold, false);
});

t.test('bypass: to the backend, counted, and written', async (t) => {
  const before = backend.count('/a');
  const r = await get('/a', { 'X-Bypass': '1' });
  t.same([r.body, r.cache], ['body of /a', 'BYPASS']);
  t.equal(backend.count('/a'), before + 1);
  t.ok(await counted('bypass', 1));
  t.same((await cache()).bypass, { responses: 1, bytes: 10, responses_written: 1, bytes_written: 10 });
});

t.test('proxy_no_cache: a miss that is not written', async (t) => {
  const r1 = await get('/n?nocache=1');
  const r2 = await get('/n?nocache=1');
  t.same([r1.cache, r2.cache], ['MISS', 'MISS']);
  t.equal(backend.count('/n?nocache=1'), 2);
  const c = await cache();
  t.equal(c.miss.responses - c.miss.responses_written, 2, 'two misses not written');
});

t.test('min_uses: written on the third use only', async (t) => {
  const statuses: Array<string | null> = [];
  for (let i = 0; i < 4; i++) statuses.push((await get('/twice/x')).cache);
  t.same(statuses, ['MISS', 'MISS', 'MISS', 'HIT']);
  t.equal(backend.count('/twice/x'), 3);
});

t.test('expired, then revalidated by a 304, then stale when the backend fails', async (t) => {
  backend.answers.set('/short/r', (req) =>
    req.headers['if-modified-since'] === 'Wed, 21 Oct 2015 07:28:00 GMT' ? { status: 304 } : { body: 'v1', headers: { 'Last-Modified': 'Wed, 21 Oct 2015 07:28:00 GMT' } },
  );
  t.equal((await get('/short/r')).cache, 'MISS');
  t.equal((await get('/short/r')).cache, 'HIT');
  await new Promise((r) => setTimeout(r, 1100)); // proxy_cache_valid 1s: the entry's own time
  const revalidated = await get('/short/r');
  t.same([revalidated.body, revalidated.cache], ['v1', 'REVALIDATED']);
  t.equal(backend.seen.get('/short/r')!['if-modified-since'], 'Wed, 21 Oct 2015 07:28:00 GMT', 'the backend got the condition');
  t.equal((await get('/short/r')).cache, 'HIT', 'valid again');

  backend.answers.set('/short/e', { body: 'old' });
  t.equal((await get('/short/e')).cache, 'MISS');
  await new Promise((r) => setTimeout(r, 1100));
  backend.answers.set('/short/e', { body: 'new' });
  const expired = await get('/short/e');
  t.same([expired.body, expired.cache], ['new', 'EXPIRED']);
  await new Promise((r) => setTimeout(r, 1100));
  backend.answers.set('/short/e', { status: 500, body: 'broken' });
  const stale = await get('/short/e');
  t.same([stale.status, stale.body, stale.cache], [200, 'new', 'STALE'], 'http_500: the stale entry');
  t.ok(await counted('stale', 1));
  const c = await cache();
  t.same([c.expired.responses, c.expired.responses_written], [1, 1]);
  t.same(c.revalidated, { responses: 1, bytes: 2 });
  t.same(c.stale, { responses: 1, bytes: 3 });
});

t.test('proxy_cache_use_stale http_403 and http_429: the stale entry for those statuses', async (t) => {
  backend.answers.set('/forbidden/f', { body: 'cached' });
  t.equal((await get('/forbidden/f')).cache, 'MISS');
  await new Promise((r) => setTimeout(r, 1100));
  for (const status of [403, 429]) {
    backend.answers.set('/forbidden/f', { status, body: 'refused' });
    const r = await get('/forbidden/f');
    t.same([r.status, r.body, r.cache], [200, 'cached', 'STALE'], `http_${status}`);
  }
  backend.answers.set('/forbidden/f', { status: 404, body: 'gone' });
  const unlisted = await get('/forbidden/f');
  t.same([unlisted.status, unlisted.body], [404, 'gone'], 'a status not listed passes');
});

t.test('background update: stale at once, and updating while the update runs', async (t) => {
  backend.answers.set('/bg/u', { body: 'one' });
  t.equal((await get('/bg/u')).cache, 'MISS');
  await new Promise((r) => setTimeout(r, 1100));
  backend.answers.set('/bg/u', { body: 'two', delay: 500 });
  const started = Date.now();
  const first = await get('/bg/u');
  t.same([first.body, first.cache], ['one', 'STALE'], 'the stale entry, without waiting for the update');
  t.ok(Date.now() - started < 400, 'answered before the backend did');
  const during = await get('/bg/u');
  t.same([during.body, during.cache], ['one', 'UPDATING']);
  t.ok(
    await eventually(async () => (await get('/bg/u')).body === 'two', 3000),
    'the update landed',
  );
  t.equal(backend.count('/bg/u'), 2, 'one request for the update');
  t.ok(await counted('updating', 1));
});

t.test('lock: 50 concurrent misses over 2 workers reach the backend once', async (t) => {
  backend.answers.set('/locked/x', { body: 'once', delay: 300 });
  const answers = await Promise.all(Array.from({ length: 50 }, () => get('/locked/x')));
  t.ok(answers.every((a) => a.status === 200 && a.body === 'once'), 'all 50 got the body');
  t.equal(backend.count('/locked/x'), 1, `the backend saw one request (${backend.count('/locked/x')})`);
    t.equal(answers.filter((a) => a.cache === 'MISS').length, 1, 'one miss, the others hits');
});

t.test("the peer's Set-Cookie, Cache-Control, X-Accel-Expires and Vary, as nginx reads them", async (t) => {
  backend.answers.set('/h/cookie', { headers: { 'Set-Cookie': 'a=1' } });
  backend.answers.set('/h/nostore', { headers: { 'Cache-Control': 'no-store' } });
  backend.answers.set('/h/accel', { headers: { 'X-Accel-Expires': '0', 'Cache-Control': 'max-age=60' } });
  for (const p of ['/h/cookie', '/h/nostore', '/h/accel']) {
    t.same([(await get(p)).cache, (await get(p)).cache], ['MISS', 'MISS'], `${p} is not cached`);
    t.equal(backend.count(p), 2);
  }
  backend.answers.set('/h/vary', (req) => ({ headers: { Vary: 'X-Lang' }, body: `in ${req.headers['x-lang']}` }));
  t.same(await get('/h/vary', { 'X-Lang': 'fr' }), { status: 200, body: 'in fr', cache: 'MISS' });
  t.same(await get('/h/vary', { 'X-Lang': 'fr' }), { status: 200, body: 'in fr', cache: 'HIT' });
  t.same(await get('/h/vary', { 'X-Lang': 'de' }), { status: 200, body: 'in de', cache: 'MISS' }, 'another variant is not served');
});

t.test('a chunked response is stored whole and answered with its length', async (t) => {
  backend.answers.set('/chunked', { body: Buffer.alloc(5000, 'z') });
  const first = await fetch(`http://127.0.0.1:${site}/chunked`);
  t.equal((await first.text()).length, 5000);
  const again = await fetch(`http://127.0.0.1:${site}/chunked`);
  t.equal(again.headers.get('x-cache-status'), 'HIT');
  t.equal(again.headers.get('content-length'), '5000');
  t.equal((await again.text()).length, 5000);
});

t.test('proxy_cache in an if block: the location\'s proxy_pass with the block\'s cache', async (t) => {
  t.same([(await get('/iff/x')).cache, (await get('/iff/x')).cache], ['MISS', 'HIT']);
  const fresh = [await get('/iff/x?fresh=1'), await get('/iff/x?fresh=1')];
  t.same(fresh.map((r) => [r.status, r.body, r.cache]), [
    [200, 'body of /iff/x?fresh=1', null],
    [200, 'body of /iff/x?fresh=1', null],
  ], 'proxy_cache off in the block: proxied, no cache status');
  t.equal(backend.count('/iff/x?fresh=1'), 2);
  t.equal(backend.count('/iff/x'), 1);
});

