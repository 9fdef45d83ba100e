// nginx's auto redirect through bin/zonal (issue 35, item 5): a request for the path of a
// prefix location ending with '/' whose content is `api` or `proxy_pass`, without that
// slash, is answered 301 to the path with the slash (the query kept), as Angie answers
// `GET /status` (reference/angie-status-samples/get_no_trailing_slash.txt). An exact
// location of the URI wins; a location without the slash, or without api/proxy_pass,
// does not redirect. The directory redirect of `root` writes its Location the same way.
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePorts, getJson, Zonal } from './zonal.js';

const [site, admin, backendPort] = await freePorts(3);

// The peer answers with the URI it was sent, and counts what reached it.
const reached: string[] = [];
const backend = createServer((req: IncomingMessage, res: ServerResponse) => {
  reached.push(req.url ?? '');
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify({ url: req.url }));
});
await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', resolve));
t.teardown(() => backend.close());

const files = mkdtempSync(join(tmpdir(), 'zonal-redirect-files-'));
t.teardown(() => rmSync(files, { recursive: true, force: true }));
mkdirSync(join(files, 'files', 'sub'), { recursive: true });

const config = `
worker_processes 1;
http {
    upstream back { server 127.0.0.1:${backendPort}; }
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        location / { return 200 "root\\n"; }
        location /status/ { status_zone status_api; api /status/; }
        location /app/ { status_zone app; proxy_pass http://back; }
        location /exact/ { api /status/; }
        location = /exact { return 200 "exact\\n"; }
        location /noslash { proxy_pass http://back; }
        location /plain/ { return 200 "plain\\n"; }
        location /guarded/ { deny all; proxy_pass http://back; }
        location ~ ^/app$ { return 200 "regex\\n"; }
        location /outer/ {
            location /outer/inner/ { proxy_pass http://back; }
        }
        location /files/ { root ${files}; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location /status/ { api /status/; }
    }
}
`;

const zonal = await Zonal.start({ 'zonal.conf': config });
t.teardown(() => zonal.stop());

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request with node:http, which follows no redirect and lets the Host be set. */
function send(method: string, path: string, port = site, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 5 s`)));
    req.on('error', reject);
    req.end();
  });
}

/** nginx's 301 page, as the server writes its pages. */
const PAGE_301 = '<html>\r\n<head><title>301 Moved Permanently</title></head>\r\n<body>\r\n<center><h1>301 Moved Permanently</h1></center>\r\n<hr><center>zonal</center>\r\n</body>\r\n</html>\r\n';

t.test('GET /status on an api location answers 301 to /status/, as Angie does', async (t) => {
  const r = await send('GET', '/status');
  t.equal(r.status, 301);
  t.equal(r.headers.location, `http://127.0.0.1:${site}/status/`, 'absolute, from the Host header and the local port');
  t.equal(r.headers['content-type'], 'text/html');
  t.equal(r.headers['content-length'], String(Buffer.byteLength(PAGE_301)));
  t.equal(r.body, PAGE_301, "nginx's 301 page");
  const followed = await getJson(r.headers.location!);
  t.equal(followed.status, 200, 'the Location answers');
  t.type(followed.body.http, 'object', 'with the status tree');
});

t.test('the query is kept; HEAD answers the same without a body', async (t) => {
  const q = await send('GET', '/status?pretty=off&x=%20y');
  t.equal(q.status, 301);
  t.equal(q.headers.location, `http://127.0.0.1:${site}/status/?pretty=off&x=%20y`);
  const empty = await send('GET', '/status?');
  t.equal(empty.headers.location, `http://127.0.0.1:${site}/status/`, 'an empty query adds no "?", as nginx');
  const head = await send('HEAD', '/status');
  t.equal(head.status, 301);
  t.equal(head.headers.location, `http://127.0.0.1:${site}/status/`);
  t.equal(head.headers['content-length'], String(Buffer.byteLength(PAGE_301)), 'Content-Length as for GET');
  t.equal(head.body, '', 'no body');
  const post = await send('POST', '/status?a=1');
  t.equal(post.status, 301, 'any method');
  t.equal(post.headers.location, `http://127.0.0.1:${site}/status/?a=1`);
});

t.test('the Location takes the host of the Host header and the port the request came to', async (t) => {
  const named = await send('GET', '/status', site, { Host: 'Example.COM:8080' });
  t.equal(named.status, 301);
  t.equal(named.headers.location, `http://example.com:${site}/status/`, "lower-case, the Host's port replaced by the local one (port_in_redirect)");
  // HTTP/1.0 without a Host: the local address.
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(site, '127.0.0.1', () => socket.end('GET /status HTTP/1.0\r\n\r\n'));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (text += d));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer in 5 s')));
  });
  t.match(raw, /^HTTP\/1\.1 301 Moved Permanently\r\n/, 'HTTP/1.0: 301');
  t.match(raw, new RegExp(`\r\nLocation: http://127\\.0\\.0\\.1:${site}/status/\r\n`), 'without a Host: the local address');
});

t.test('a proxy_pass location redirects the same way, without reaching the peer', async (t) => {
  const before = reached.length;
  const r = await send('GET', '/app?x=1');
  t.equal(r.status, 301);
  t.equal(r.headers.location, `http://127.0.0.1:${site}/app/?x=1`);
  t.equal(r.body, PAGE_301);
  t.equal((await send('HEAD', '/app')).status, 301, 'HEAD /app');
  t.equal(reached.length, before, 'the peer saw none of them');
  const proxied = await send('GET', '/app/x?y=1');
  t.equal(proxied.status, 200, '/app/x is proxied');
  t.same(JSON.parse(proxied.body), { url: '/app/x?y=1' });
  // The redirect ends the search: the regex location matching /app is not tried (nginx).
  t.equal((await send('GET', '/app')).headers.location, `http://127.0.0.1:${site}/app/`, 'before a regex that matches /app');
  // Nested levels redirect as theirs.
  const nested = await send('GET', '/outer/inner?q');
  t.equal(nested.status, 301);
  t.equal(nested.headers.location, `http://127.0.0.1:${site}/outer/inner/?q`);
});

t.test('an exact location of the URI wins; no slash or no api/proxy_pass: no redirect', async (t) => {
  const exact = await send('GET', '/exact');
  t.equal(exact.status, 200, 'location = /exact answers /exact');
  t.equal(exact.body, 'exact\n');
  t.equal(exact.headers.location, undefined);
  const before = reached.length;
  const noslash = await send('GET', '/noslash');
  t.equal(noslash.status, 200, 'location /noslash proxies /noslash');
  t.same(JSON.parse(noslash.body), { url: '/noslash' });
  t.equal(reached.length, before + 1);
  const plain = await send('GET', '/plain');
  t.equal(plain.status, 200, 'location /plain/ without api or proxy_pass: /plain goes to location /');
  t.equal(plain.body, 'root\n');
  t.equal(plain.headers.location, undefined);
  const outer = await send('GET', '/outer');
  t.equal(outer.status, 200, 'location /outer/ has neither: no redirect');
  t.equal(outer.body, 'root\n');
});

t.test('the redirect comes before the access checks, as in nginx', async (t) => {
  const r = await send('GET', '/guarded');
  t.equal(r.status, 301);
  t.equal(r.headers.location, `http://127.0.0.1:${site}/guarded/`);
  t.equal((await send('GET', '/guarded/')).status, 403, 'the location itself is denied');
});

t.test("a redirect counts in its location's zone", async (t) => {
  const zone = `http://127.0.0.1:${admin}/status/http/location_zones/status_api/responses/`;
  const before = (await getJson(zone)).body;
  const count = (body: Record<string, number>) => (body['301'] ?? 0) as number;
  t.equal((await send('GET', '/status')).status, 301);
  t.ok(await eventually(async () => count((await getJson(zone)).body) === count(before) + 1), 'status_api counted one more 301');
});

t.test('an admin listener redirects the same way', async (t) => {
  const r = await send('GET', '/status?pretty=off', admin);
  t.equal(r.status, 301);
  t.equal(r.headers.location, `http://127.0.0.1:${admin}/status/?pretty=off`);
  t.equal(r.headers['content-type'], 'text/html');
  t.equal(r.body, PAGE_301);
  const head = await send('HEAD', '/status', admin);
  t.equal(head.status, 301);
  t.equal(head.headers.location, `http://127.0.0.1:${admin}/status/`);
  t.equal(head.body, '');
  t.equal((await send('GET', '/status/', admin)).status, 200, '/status/ answers');
});

t.test("root's directory redirect writes its Location the same way", async (t) => {
  const r = await send('GET', '/files/sub?q=1');
  t.equal(r.status, 301);
  t.equal(r.headers.location, `http://127.0.0.1:${site}/files/sub/?q=1`);
  t.equal(r.body, PAGE_301);
});
