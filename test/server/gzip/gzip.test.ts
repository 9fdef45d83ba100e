// gzip and gzip_static through bin/zonal, as nginx's documentation describes them
// (ngx_http_gzip_module, ngx_http_gzip_static_module): which responses are compressed
// (types, length, status, method, Accept-Encoding and its q, HTTP version, the browsers
// disabled, requests through a proxy as gzip_proxied says), the head of a compressed
// answer (no Content-Length, Vary, a weak ETag), files, `return`, proxied and cached
// answers (the cache keeps the answer as the peer sent it), gzip_static's `.gz` files and
// $gzip_ratio. Bodies are checked by node's zlib.
import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { eventually, freePorts, Zonal } from '../zonal.js';

const [port, peerPort] = await freePorts(2);
const docs = mkdtempSync(join(tmpdir(), 'zonal-gzip-docs-'));
const cache = mkdtempSync(join(tmpdir(), 'zonal-gzip-cache-'));
t.teardown(() => {
  rmSync(docs, { recursive: true, force: true });
  rmSync(cache, { recursive: true, force: true });
});

const page = '<html><body>' + 'zonal compresses this page. '.repeat(200) + '</body></html>\n';
const text = 'plain text, said again and again. '.repeat(100);
const json = JSON.stringify(Array.from({ length: 400 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ['a', 'b'] })));
const big = Buffer.from('0123456789abcdef'.repeat(1 << 16)); // 1 MB
writeFileSync(join(docs, 'page.html'), page);
writeFileSync(join(docs, 'small.html'), '<p>tiny</p>');
writeFileSync(join(docs, 'style.css'), 'body { color: red; } '.repeat(50));
writeFileSync(join(docs, 'text.txt'), text);
writeFileSync(join(docs, 'big.txt'), big);
// gzip_static's copy holds other text than the file, to tell which one answered.
const precompressed = gzipSync('the precompressed copy\n');
writeFileSync(join(docs, 'pre.txt'), 'the file itself\n');
writeFileSync(join(docs, 'pre.txt.gz'), precompressed);

let peerRequests = 0;
const peer = createServer((req, res) => {
  peerRequests++;
  const path = req.url ?? '/';
  const type = { 'Content-Type': 'application/json' };
  if (path === '/json') res.writeHead(200, { ...type, 'Content-Length': Buffer.byteLength(json), ETag: '"v1"' });
  else if (path === '/chunked') res.writeHead(200, type);
  else if (path === '/encoded') res.writeHead(200, { ...type, 'Content-Encoding': 'br' });
  else if (path === '/expired') res.writeHead(200, { ...type, Expires: 'Thu, 01 Jan 1970 00:00:01 GMT' });
  else if (path === '/fresh') res.writeHead(200, { ...type, Expires: new Date(Date.now() + 3_600_000).toUTCString() });
  else if (path === '/nocache') res.writeHead(200, { ...type, 'Cache-Control': 'max-age=0, no-cache' });
  else if (path === '/created') res.writeHead(201, type);
  else if (path === '/empty') {
    res.writeHead(204);
    res.end();
    return;
  } else res.writeHead(200, { ...type, 'Last-Modified': 'Thu, 01 Jan 1970 00:00:01 GMT' });
  res.end(json);
});
await new Promise<void>((resolve) => peer.listen(peerPort, '127.0.0.1', resolve));
t.teardown(() => peer.close());

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    types { text/html html; text/plain txt; text/css css; }
    log_format ratio '$uri $gzip_ratio';
    proxy_cache_path ${cache} keys_zone=gz:1m;
    server {
        listen 127.0.0.1:${port};
        access_log ${docs}/ratio.log ratio;
        root ${docs};
        gzip on;
        gzip_types text/plain application/json;
        gzip_min_length 100;
        gzip_vary on;
        location / { }
        location /any/ { gzip_types *; alias ${docs}/; }
        location /off/ { gzip off; alias ${docs}/; }
        location /nine/ { gzip_comp_level 9; alias ${docs}/; }
        location /old/ { gzip_http_version 1.0; alias ${docs}/; }
        location /disabled/ { gzip_disable "^curl/" msie6; alias ${docs}/; }
        location /static/ { gzip_static on; alias ${docs}/; }
        location /always/ { gzip off; gzip_static always; alias ${docs}/; }
        location = /return { return 200 "${text}"; }
        location = /return-short { return 200 "short"; }
        location /p/ { proxy_pass http://127.0.0.1:${peerPort}/; }
        location /expired/ { gzip_proxied expired no-cache; proxy_pass http://127.0.0.1:${peerPort}/; }
        location /any-proxied/ { gzip_proxied any; proxy_pass http://127.0.0.1:${peerPort}/; }
        location /lm/ { gzip_proxied no_last_modified auth; proxy_pass http://127.0.0.1:${peerPort}/; }
        location /c/ { proxy_cache gz; proxy_cache_valid 200 1m; proxy_pass http://127.0.0.1:${peerPort}/; }
    }
}
`,
});
t.teardown(() => z.stop());

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function get(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
    req.end();
  });
}

const GZIP = { 'Accept-Encoding': 'gzip, deflate' };

function compressed(t: Test, a: Answer, expected: string | Buffer, what: string): void {
  t.equal(a.headers['content-encoding'], 'gzip', `${what}: Content-Encoding: gzip`);
  t.equal(a.headers['content-length'], undefined, `${what}: no Content-Length`);
  t.same(gunzipSync(a.body), Buffer.from(expected), `${what}: the body gunzips to the original`);
}

function identity(t: Test, a: Answer, expected: string | Buffer, what: string): void {
  t.equal(a.headers['content-encoding'], undefined, `${what}: not compressed`);
  t.same(a.body, Buffer.from(expected), `${what}: the body as it is`);
}

t.test('a static file of a listed type, compressed for a client that takes gzip', async (t) => {
  const a = await get('/page.html', GZIP);
  t.equal(a.status, 200);
  compressed(t, a, page, 'text/html');
  t.equal(a.headers.vary, 'Accept-Encoding');
  t.equal(a.headers['content-type'], 'text/html');
  t.ok(a.body.length < page.length / 5);
  const plain = await get('/page.html');
  identity(t, plain, page, 'no Accept-Encoding');
  t.equal(plain.headers['content-length'], String(page.length));
  t.equal(plain.headers.vary, 'Accept-Encoding', 'the answer varies with Accept-Encoding either way');
  compressed(t, await get('/text.txt', GZIP), text, 'a gzip_types type');
  compressed(t, await get('/big.txt', GZIP), big, 'a 1 MB file');
});

t.test('Accept-Encoding as nginx reads it', async (t) => {
  for (const ae of ['gzip', 'deflate, gzip', 'gzip;q=0.5', 'br;q=1.0, gzip; q=1', 'GZIP']) compressed(t, await get('/page.html', { 'Accept-Encoding': ae }), page, ae);
  for (const ae of ['gzip;q=0', 'gzip; q=0.000', 'x-gzip', 'deflate, br', 'gzipped', 'identity']) identity(t, await get('/page.html', { 'Accept-Encoding': ae }), page, ae);
});

t.test('what is never compressed', async (t) => {
  const small = await get('/small.html', GZIP);
  identity(t, small, '<p>tiny</p>', 'under gzip_min_length');
  t.equal(small.headers.vary, undefined, 'an answer that is never compressed does not vary');
  identity(t, await get('/style.css', GZIP), 'body { color: red; } '.repeat(50), 'a type not in gzip_types');
  compressed(t, await get('/any/style.css', GZIP), 'body { color: red; } '.repeat(50), 'gzip_types *');
  const head = await get('/page.html', GZIP, 'HEAD');
  t.equal(head.headers['content-encoding'], undefined, 'HEAD: not compressed');
  t.equal(head.headers['content-length'], String(page.length), 'HEAD: the length of the file');
  const missing = await get('/nope.html', GZIP);
  t.equal(missing.status, 404);
  t.equal(missing.headers['content-encoding'], 'gzip', 'a 404 page (text/html) is compressed');
  t.match(gunzipSync(missing.body).toString(), /<title>404 Not Found<\/title>/);
  identity(t, await get('/off/page.html', GZIP), page, 'gzip off');
  const created = await get('/p/created', GZIP);
  t.equal(created.status, 201);
  identity(t, created, json, 'a 201');
  const empty = await get('/p/empty', GZIP);
  t.equal(empty.status, 204);
  t.equal(empty.headers['content-encoding'], undefined, 'a 204');
  const encoded = await get('/p/encoded', GZIP);
  t.equal(encoded.headers['content-encoding'], 'br', 'an answer with a Content-Encoding is left as it is');
  t.equal(encoded.body.toString(), json);
});

t.test('return bodies', async (t) => {
  const a = await get('/return', GZIP);
  compressed(t, a, text, 'return 200 text');
  t.equal(a.headers['content-type'], 'text/plain');
  identity(t, await get('/return-short', GZIP), 'short', 'a short return');
});

t.test('proxied answers', async (t) => {
  const a = await get('/p/json', GZIP);
  compressed(t, a, json, 'a peer answer with a Content-Length');
  t.equal(a.headers.etag, 'W/"v1"', 'the strong ETag is made weak');
  t.equal(a.headers.vary, 'Accept-Encoding');
  const plain = await get('/p/json');
  identity(t, plain, json, 'no Accept-Encoding');
  t.equal(plain.headers.etag, '"v1"');
  t.equal(plain.headers['content-length'], String(Buffer.byteLength(json)));
  compressed(t, await get('/p/chunked', GZIP), json, 'a chunked peer answer');
});

t.test('gzip_proxied judges requests that came through a proxy (Via)', async (t) => {
  const via = { ...GZIP, Via: '1.1 cdn' };
  identity(t, await get('/p/json', via), json, 'gzip_proxied off (the default)');
  compressed(t, await get('/any-proxied/json', via), json, 'any');
  compressed(t, await get('/expired/expired', via), json, 'expired: an Expires in the past');
  identity(t, await get('/expired/fresh', via), json, 'expired: an Expires to come');
  compressed(t, await get('/expired/nocache', via), json, 'no-cache');
  identity(t, await get('/expired/json', via), json, 'expired, no-cache: an answer with neither');
  compressed(t, await get('/lm/json', via), json, 'no_last_modified: none');
  identity(t, await get('/lm/lastmodified', via), json, 'no_last_modified: one');
  compressed(t, await get('/lm/lastmodified', { ...via, Authorization: 'Basic eDp5' }), json, 'auth');
});

t.test('gzip_disable and gzip_http_version', async (t) => {
  identity(t, await get('/disabled/page.html', { ...GZIP, 'User-Agent': 'curl/8.0' }), page, 'a regex on User-Agent');
  identity(t, await get('/disabled/page.html', { ...GZIP, 'User-Agent': 'Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)' }), page, 'msie6');
  compressed(t, await get('/disabled/page.html', { ...GZIP, 'User-Agent': 'Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)' }), page, 'MSIE 6 with SV1');
  compressed(t, await get('/disabled/page.html', { ...GZIP, 'User-Agent': 'Wget/1.21' }), page, 'another browser');
  const http10 = (path: string) =>
    new Promise<string>((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => s.write(`GET ${path} HTTP/1.0\r\nAccept-Encoding: gzip\r\n\r\n`));
      let got = '';
      s.setEncoding('latin1');
      s.on('data', (d) => (got += d));
      s.on('end', () => resolve(got));
      s.on('error', reject);
    });
  t.notMatch(await http10('/page.html'), /Content-Encoding/i, 'HTTP/1.0 under gzip_http_version 1.1');
  t.match(await http10('/old/page.html'), /\r\nContent-Encoding: gzip\r\n/, 'HTTP/1.0 under gzip_http_version 1.0');
});

t.test('gzip_comp_level', async (t) => {
  // The gzip header's XFL byte: 2 for the best compression, 4 for the fastest.
  t.equal((await get('/nine/page.html', GZIP)).body[8], 2, 'level 9');
  t.equal((await get('/page.html', GZIP)).body[8], 4, 'level 1 (the default)');
});

t.test('gzip_static', async (t) => {
  const a = await get('/static/pre.txt', GZIP);
  t.equal(a.headers['content-encoding'], 'gzip');
  t.equal(a.headers['content-type'], 'text/plain', 'the type of the file the URI names');
  t.equal(a.headers['content-length'], String(precompressed.length), 'the .gz file as it is');
  t.equal(a.headers.vary, 'Accept-Encoding');
  t.equal(gunzipSync(a.body).toString(), 'the precompressed copy\n');
  const plain = await get('/static/pre.txt');
  identity(t, plain, 'the file itself\n', 'a client without gzip');
  t.equal(plain.headers.vary, 'Accept-Encoding', 'the answer varies: a .gz exists');
  compressed(t, await get('/static/page.html', GZIP), page, 'no .gz: gzip compresses');
  const always = await get('/always/pre.txt');
  t.equal(always.headers['content-encoding'], 'gzip', 'always: whatever the client takes');
  t.equal(gunzipSync(always.body).toString(), 'the precompressed copy\n');
  identity(t, await get('/always/page.html', GZIP), page, 'always, no .gz, gzip off');
});

t.test('cached answers are kept as the peer sent them and compressed on the way out', async (t) => {
  const before = peerRequests;
  const miss = await get('/c/json', GZIP);
  compressed(t, miss, json, 'a miss');
  const hit = await get('/c/json', GZIP);
  compressed(t, hit, json, 'a hit');
  const plain = await get('/c/json');
  identity(t, plain, json, 'a hit for a client without gzip');
  t.equal(plain.headers['content-length'], String(Buffer.byteLength(json)));
  t.equal(peerRequests - before, 1, 'one request reached the peer');
  const again = await get('/c/json', GZIP);
  compressed(t, again, json, 'another hit');
});

t.test('$gzip_ratio', async (t) => {
  await get('/page.html', GZIP);
  await get('/text.txt');
  const log = join(docs, 'ratio.log');
  t.ok(await eventually(async () => /\/text\.txt -\n/.test(readFileSync(log, 'utf8'))));
  const lines = readFileSync(log, 'utf8').split('\n');
  const ratio = lines.filter((l) => l.startsWith('/page.html ')).pop();
  t.match(ratio, /^\/page\.html \d+\.\d\d$/);
  const expected = page.length / gzipSync(page, { level: 1 }).length;
  t.ok(Math.abs(Number(ratio!.split(' ')[1]) - expected) < 1, `about ${expected.toFixed(2)}`);
  t.ok(lines.some((l) => l === '/text.txt -'), 'not compressed: not found');
});

/** The chunks of a chunked answer as they came on the wire (HTTP/1.1, connection closed). */
function wireChunks(path: string): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n`));
    const got: Buffer[] = [];
    s.on('data', (d: Buffer) => got.push(d));
    s.on('error', reject);
    s.on('end', () => {
      const all = Buffer.concat(got);
      let at = all.indexOf('\r\n\r\n') + 4;
      const chunks: Buffer[] = [];
      for (;;) {
        const eol = all.indexOf('\r\n', at);
        const size = parseInt(all.subarray(at, eol).toString(), 16);
        if (!(size > 0)) break;
        chunks.push(all.subarray(eol + 2, eol + 2 + size));
        at = eol + 2 + size + 2;
      }
      resolve(chunks);
    });
  });
}

t.test('a body given whole leaves gzip in one chunk, as nginx compresses a whole buffer', async (t) => {
  await get('/c/json', GZIP);
  const hit = await wireChunks('/c/json');
  t.equal(hit.length, 1, 'a cached answer: one chunk');
  t.same(gunzipSync(hit[0]), Buffer.from(json));
  const returned = await wireChunks('/return');
  t.equal(returned.length, 1, 'a return body: one chunk');
  t.same(gunzipSync(returned[0]), Buffer.from(text));
});
