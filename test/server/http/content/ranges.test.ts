// Static files' validators, conditions and byte ranges through bin/zonal, as nginx's
// documentation and modules describe them: `etag on` (nginx's default) sends an ETag;
// the not_modified filter answers If-Modified-Since (an exact match, `if_modified_since
// exact`) and If-None-Match with 304, If-Unmodified-Since and If-Match that fail with
// 412; the range filter answers `Range: bytes=` with 206 (multipart/byteranges for
// several ranges), 416 when no range is in the file, and honours If-Range.
import t from 'tap';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, Zonal } from '../../zonal.js';

const [port] = await freePorts(1);
const docs = mkdtempSync(join(tmpdir(), 'zonal-ranges-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));
writeFileSync(join(docs, 't.html'), 'SEE-THIS');
const st = statSync(join(docs, 't.html'));
const ETAG = `"${Math.floor(st.mtimeMs / 1000).toString(16)}-8"`;
const MODIFIED = st.mtime.toUTCString();

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    server {
        listen 127.0.0.1:${port};
        root ${docs};
        add_header X-Added yes;
        location / { }
        location /missing/ { error_page 404 /t.html; }
    }
}
`,
});
t.teardown(() => z.stop());

const get = async (path: string, headers: Record<string, string> = {}, method = 'GET') => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers, method });
  return { status: res.status, body: await res.text(), headers: res.headers };
};

t.test('a whole answer: its ETag (mtime-size in hex), Last-Modified and Accept-Ranges', async (t) => {
  const r = await get('/t.html');
  t.equal(r.status, 200);
  t.equal(r.headers.get('etag'), ETAG);
  t.equal(r.headers.get('last-modified'), MODIFIED);
  t.equal(r.headers.get('accept-ranges'), 'bytes');
  t.equal(r.body, 'SEE-THIS');
});

t.test('conditions: 304 for the same date or tag, 412 for a failed precondition', async (t) => {
  const ims = await get('/t.html', { 'If-Modified-Since': MODIFIED });
  t.equal(ims.status, 304, 'If-Modified-Since: the Last-Modified exactly');
  t.equal(ims.headers.get('etag'), ETAG, 'a 304 keeps the validators');
  t.equal(ims.headers.get('content-type'), null, 'and drops the type');
  t.equal(ims.headers.get('accept-ranges'), null, 'and Accept-Ranges');
  t.equal(ims.headers.get('x-added'), 'yes', 'add_header applies to 304');
  t.equal(ims.body, '');
  const later = new Date(st.mtimeMs + 3600_000).toUTCString();
  t.equal((await get('/t.html', { 'If-Modified-Since': later })).status, 200, 'another date: exact, so the whole answer');
  t.equal((await get('/t.html', { 'If-None-Match': `"x", W/${ETAG}` })).status, 304, 'If-None-Match: weakly among a list');
  t.equal((await get('/t.html', { 'If-None-Match': '"x"' })).status, 200, 'another tag');
  t.equal((await get('/t.html', { 'If-None-Match': '*' })).status, 304, '*');
  const im = await get('/t.html', { 'If-Match': '"x"' });
  t.equal(im.status, 412, 'If-Match that fails');
  t.equal(im.headers.get('etag'), null, "412 is nginx's page, without the file's validators");
  t.equal((await get('/t.html', { 'If-Match': ETAG })).status, 200, 'If-Match that holds');
  t.equal((await get('/t.html', { 'If-Unmodified-Since': 'Mon, 01 Jan 2001 00:00:00 GMT' })).status, 412, 'If-Unmodified-Since before the change');
  t.equal((await get('/t.html', { 'If-Unmodified-Since': MODIFIED })).status, 200, 'If-Unmodified-Since at it');
});

t.test('ranges: one, a suffix, several, none in the file', async (t) => {
  const one = await get('/t.html', { Range: 'bytes=4-' });
  t.equal(one.status, 206);
  t.equal(one.headers.get('content-range'), 'bytes 4-7/8');
  t.equal(one.headers.get('content-length'), '4');
  t.equal(one.headers.get('accept-ranges'), null, 'a ranged answer has no Accept-Ranges');
  t.equal(one.body, 'THIS');
  const cut = await get('/t.html', { Range: 'bytes=2-100' });
  t.same([cut.status, cut.headers.get('content-range'), cut.body], [206, 'bytes 2-7/8', 'E-THIS'], 'a range past the end is cut at it');
  const suffix = await get('/t.html', { Range: 'bytes=-2' });
  t.same([suffix.status, suffix.headers.get('content-range'), suffix.body], [206, 'bytes 6-7/8', 'IS'], 'the last 2 bytes');

  const multi = await get('/t.html', { Range: 'bytes=0-2,4-' });
  t.equal(multi.status, 206);
  const type = multi.headers.get('content-type') ?? '';
  const boundary = /^multipart\/byteranges; boundary=(\d{20})$/.exec(type)?.[1];
  t.ok(boundary, `multipart/byteranges with nginx's boundary: ${type}`);
  t.equal(
    multi.body,
    `\r\n--${boundary}\r\nContent-Type: text/html\r\nContent-Range: bytes 0-2/8\r\n\r\nSEE` +
      `\r\n--${boundary}\r\nContent-Type: text/html\r\nContent-Range: bytes 4-7/8\r\n\r\nTHIS` +
      `\r\n--${boundary}--\r\n`,
    'each part with its type and range, as nginx writes them',
  );
  t.equal(Number(multi.headers.get('content-length')), Buffer.byteLength(multi.body), 'and its length said first');

  const none = await get('/t.html', { Range: 'bytes=20-' });
  t.equal(none.status, 416);
  t.equal(none.headers.get('content-range'), 'bytes */8');
  t.match(none.body, /416 Requested Range Not Satisfiable/);
  const overlap = await get('/t.html', { Range: 'bytes=0-7,0-7' });
  t.same([overlap.status, overlap.body], [200, 'SEE-THIS'], 'ranges adding up past the body: the whole body');
  const notBytes = await get('/t.html', { Range: 'items=0-1' });
  t.equal(notBytes.status, 200, 'not a bytes range: the whole body');

  const head = await get('/t.html', { Range: 'bytes=4-' }, 'HEAD');
  t.same([head.status, head.headers.get('content-range'), head.body], [206, 'bytes 4-7/8', ''], 'HEAD: the ranged head');
});

t.test('If-Range: the range only while the ETag or Last-Modified it names is the file', async (t) => {
  t.equal((await get('/t.html', { Range: 'bytes=4-', 'If-Range': ETAG })).status, 206, 'its ETag');
  t.equal((await get('/t.html', { Range: 'bytes=4-', 'If-Range': MODIFIED })).status, 206, 'its Last-Modified');
  const other = await get('/t.html', { Range: 'bytes=4-', 'If-Range': '"other"' });
  t.same([other.status, other.body], [200, 'SEE-THIS'], 'another ETag: the whole file');
  t.equal((await get('/t.html', { Range: 'bytes=4-', 'If-Range': 'Mon, 01 Jan 2001 00:00:00 GMT' })).status, 200, 'another date: the whole file');
});

t.test("an error page's file is neither ranged nor conditional", async (t) => {
  const r = await get('/missing/x', { Range: 'bytes=4-', 'If-None-Match': ETAG });
  t.equal(r.status, 404);
  t.equal(r.body, 'SEE-THIS');
  t.equal(r.headers.get('accept-ranges'), null);
});
