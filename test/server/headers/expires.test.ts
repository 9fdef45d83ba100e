// `expires`, from nginx's documentation of ngx_http_headers_module: Expires and
// Cache-Control on answers of 200, 201, 204, 206, 301, 302, 303, 304, 307 and 308; a time
// ahead is `max-age`, a negative one `no-cache`; `epoch` and `max` are fixed pairs;
// `modified` counts from the file's time; `@` names a time of day; variables are read per
// request; every Cache-Control the answer had (a peer's too) is replaced by one; it
// inherits on its own, apart from add_header, and `off` stops it.
import t from 'tap';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, Zonal } from '../zonal.js';
import { parseExpires, expiresHeaders } from '../../../src/server/headers/expires.js';

const [port, backendPort] = await freePorts(2);
const docs = mkdtempSync(join(tmpdir(), 'zonal-expires-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));
writeFileSync(join(docs, 'file.txt'), 'a file\n');
// A file last changed a day ago.
const modified = new Date(Date.now() - 86_400_000);
utimesSync(join(docs, 'file.txt'), modified, modified);

const backend = createServer((req, res) => {
  res.setHeader('Cache-Control', ['max-age=3600', 'private', 'must-revalidate']);
  res.setHeader('Expires', 'Wed, 21 Oct 2015 07:28:00 GMT');
  res.end('from the peer');
});
await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', () => resolve()));
t.teardown(() => new Promise((r) => backend.close(r)));

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    expires 1h;
    server {
        listen 127.0.0.1:${port};
        root ${docs};
        location = /file.txt { }
        location /inherited { return 200 "x"; }
        location /negative { expires -1; return 200 "x"; }
        location /epoch { expires epoch; proxy_pass http://127.0.0.1:${backendPort}; }
        location /max { expires max; add_header Cache-Control public; return 200 "x"; }
        location /modified { expires modified +2d; alias ${docs}/file.txt; }
        location /variable { expires $arg_e; return 200 "x"; }
        location /off { expires off; add_header X-Own yes; return 200 "x"; }
        location /missing { return 404; }
        location /always404 { return 404 "gone"; }
    }
}
`,
});
t.teardown(() => z.stop());

const get = (path: string) => fetch(`http://127.0.0.1:${port}${path}`);
const maxAge = (r: Response) => Number(/^max-age=(\d+)$/.exec(r.headers.get('cache-control') ?? '')?.[1]);
/** How far the Expires header is from now, in seconds. */
const ahead = (r: Response) => (Date.parse(r.headers.get('expires') ?? '') - Date.now()) / 1000;

t.test('a time: max-age of it, and Expires that far ahead; inherited from http', async (t) => {
  for (const path of ['/file.txt', '/inherited']) {
    const r = await get(path);
    t.equal(maxAge(r), 3600, `${path}: ${r.headers.get('cache-control')}`);
    t.ok(Math.abs(ahead(r) - 3600) < 3, `${path}: Expires ${r.headers.get('expires')}`);
  }
});

t.test('a negative time: no-cache, and Expires in the past', async (t) => {
  const r = await get('/negative');
  t.equal(r.headers.get('cache-control'), 'no-cache');
  t.ok(ahead(r) < 0);
});

t.test("epoch replaces every Cache-Control and the Expires of a peer's answer", async (t) => {
  const r = await get('/epoch');
  t.equal(await r.text(), 'from the peer');
  t.equal(r.headers.get('cache-control'), 'no-cache', 'one Cache-Control, not the three the peer sent');
  t.equal(r.headers.get('expires'), 'Thu, 01 Jan 1970 00:00:01 GMT');
});

t.test('max, and an add_header after it adds a second Cache-Control', async (t) => {
  const r = await get('/max');
  t.equal(r.headers.get('expires'), 'Thu, 31 Dec 2037 23:55:55 GMT');
  t.equal(r.headers.get('cache-control'), 'max-age=315360000, public');
});

t.test("modified: from the file's time", async (t) => {
  const r = await get('/modified');
  t.equal(r.headers.get('last-modified'), modified.toUTCString());
  const due = Math.floor(modified.getTime() / 1000) * 1000 + 2 * 86_400_000;
  t.equal(r.headers.get('expires'), new Date(due).toUTCString(), 'two days after the file changed');
  t.ok(Math.abs(maxAge(r) - (due - Date.now()) / 1000) < 3, r.headers.get('cache-control') ?? '');
});

t.test('variables: read for each request', async (t) => {
  t.equal(maxAge(await get('/variable?e=30s')), 30);
  t.equal((await get('/variable?e=epoch')).headers.get('cache-control'), 'no-cache');
  const off = await get('/variable?e=off');
  t.equal(off.headers.get('cache-control'), null, 'off: nothing');
});

t.test('off stops the outer expires, whatever add_header says', async (t) => {
  const r = await get('/off');
  t.equal(r.headers.get('x-own'), 'yes');
  t.equal(r.headers.get('expires'), null);
  t.equal(r.headers.get('cache-control'), null);
});

t.test('not on an error', async (t) => {
  for (const path of ['/missing', '/always404']) {
    const r = await get(path);
    t.equal(r.status, 404);
    t.equal(r.headers.get('expires'), null, path);
  }
});

t.test("the directive's arguments, as nginx reads them", async (t) => {
  t.same(parseExpires(['modified', '1h']), { value: { kind: 'modified', seconds: 3600 } });
  t.same(parseExpires(['@15h30m']), { value: { kind: 'daily', seconds: 55_800 } });
  t.match(parseExpires(['soon']), { error: 'invalid value "soon" in "expires" directive' });
  t.match(parseExpires(['modified', '@1h']), { error: 'daily time cannot be used with "modified" parameter' });
  t.match(parseExpires(['@25h']), { error: 'daily time value must be less than 24 hours' });
  // 10:00 UTC: @15h30m is today at 15:30, @9h tomorrow at 9:00.
  const ten = Date.UTC(2026, 10, 28, 10, 0, 0);
  t.equal(expiresHeaders({ kind: 'daily', seconds: 55_800 }, ten)?.cacheControl, `max-age=${5.5 * 3600}`);
  t.equal(expiresHeaders({ kind: 'daily', seconds: 9 * 3600 }, ten)?.expires, new Date(Date.UTC(2026, 10, 29, 9, 0, 0)).toUTCString());
});
