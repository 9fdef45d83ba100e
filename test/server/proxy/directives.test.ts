// The proxy module's directives, from nginx's documentation of ngx_http_proxy_module:
// proxy_http_version, proxy_method, proxy_hide_header and proxy_pass_header, proxy_intercept_errors,
// proxy_redirect (Location and Refresh), proxy_ssl_certificate with its key and password
// file, and the buffering directives zonal accepts.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, request, type IncomingHttpHeaders } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, Zonal } from '../zonal.js';

const [front, plain, secure, closed] = await freePorts(4);

/** What the plain backend saw of the last request. */
let seen: { method: string; version: string; headers: IncomingHttpHeaders; body: string } | undefined;
const backend = createHttpServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    seen = { method: req.method ?? '', version: req.httpVersion, headers: req.headers, body: Buffer.concat(chunks).toString() };
    const url = req.url ?? '/';
    if (url.includes('/data')) return res.end(Buffer.alloc(10_000, 'X'));
    if (url.includes('/vr/')) return res.writeHead(302, { Location: `http://front.test/from-host/x` }).end();
    if (url.includes('/redirect')) return res.writeHead(302, { Location: `http://127.0.0.1:${plain}/two/there`, Refresh: `3; url=http://old.example/page` }).end();
    if (url.includes('/cookie')) {
      const q = new URL(url, 'http://x').searchParams;
      return res.writeHead(200, { 'Set-Cookie': `v=1${q.has('domain') ? `; Domain=${q.get('domain')}` : ''}${q.has('path') ? `; Path=${q.get('path')}` : ''}` }).end();
    }
    if (url.includes('/missing')) return res.writeHead(404, { 'Content-Type': 'text/plain' }).end('backend says 404');
    res.writeHead(200, { Server: 'backend/1.0', 'X-Secret': 's', 'X-Accel-Expires': '10', 'X-Kept': 'k' }).end('ok');
  });
});
await new Promise<void>((resolve) => backend.listen(plain, '127.0.0.1', () => resolve()));
t.teardown(() => new Promise((r) => backend.close(r)));

/** A CA, a server certificate for the TLS backend, and a client certificate whose key is
 * encrypted with the second passphrase of a password file. */
const dir = mkdtempSync(join(tmpdir(), 'zonal-proxy-certs-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=test ca');
for (const name of ['server', 'client']) {
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
  ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2');
}
ssl('pkey', '-in', 'client.key', '-aes256', '-passout', 'pass:second', '-out', 'client-encrypted.key');
const file = (name: string) => readFileSync(join(dir, name), 'utf8');

/** Answers with the name of the client certificate it was shown, or 'none'. */
const tlsBackend = createTlsServer({ cert: file('server.pem'), key: file('server.key'), ca: file('ca.pem'), requestCert: true, rejectUnauthorized: false }, (req, res) => {
  const cert = (req.socket as import('node:tls').TLSSocket).getPeerCertificate();
  const authorized = (req.socket as import('node:tls').TLSSocket).authorized;
  res.end(authorized && cert?.subject ? `client ${cert.subject.CN}` : 'none');
});
await new Promise<void>((resolve) => tlsBackend.listen(secure, '127.0.0.1', () => resolve()));
t.teardown(() => new Promise((r) => tlsBackend.close(r)));

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    proxy_buffering off;
    proxy_request_buffering off;
    proxy_buffer_size 8k;
    proxy_buffers 8 8k;
    proxy_busy_buffers_size 16k;
    server {
        listen 127.0.0.1:${front};
        location /default/ { proxy_pass http://127.0.0.1:${plain}; }
        location /v10/ { proxy_pass http://127.0.0.1:${plain}; proxy_http_version 1.0; }
        location /hidden/ { proxy_pass http://127.0.0.1:${plain}; proxy_hide_header X-Secret; proxy_pass_header Server; }
        location /intercepted/ { proxy_pass http://127.0.0.1:${plain}; proxy_intercept_errors on; error_page 404 @missing; }
        location /unpaged/ { proxy_pass http://127.0.0.1:${plain}/intercepted/; proxy_intercept_errors on; }
        location @missing { return 404 "zonal's own 404\n"; }
        location /one/ { proxy_pass http://127.0.0.1:${plain}/two/; }
        location /off/ { proxy_pass http://127.0.0.1:${plain}/two/; proxy_redirect off; }
        location /rewritten/ {
            proxy_pass http://127.0.0.1:${plain}/two/;
            proxy_redirect ~^http://127\\.0\\.0\\.1:\\d+/two/(.*)$ http://$host/moved/$1;
            proxy_redirect http://old.example/ /new/;
        }
        location /mtls/ {
            proxy_pass https://127.0.0.1:${secure};
            proxy_ssl_certificate client.pem;
            proxy_ssl_certificate_key client-encrypted.key;
            proxy_ssl_password_file passwords;
        }
        location /nocert/ { proxy_pass https://127.0.0.1:${secure}; }
        location /cookie/ {
            proxy_pass http://127.0.0.1:${plain};
            proxy_cookie_domain www.example.org .example.com;
            proxy_cookie_domain .$host.com en.$host.org;
            proxy_cookie_domain ~^(.+)\.com$ $1.org;
            proxy_cookie_path /path/ /new/;
            proxy_cookie_path /$host/ /new/$host/;
            proxy_cookie_path ~^/regex/(.+)$ /$1;
            proxy_cookie_path ~*^/caseless/(.+)$ /$1;
            location /cookie/off/ { proxy_pass http://127.0.0.1:${plain}; proxy_cookie_domain off; }
        }
        location /down/ { proxy_pass http://127.0.0.1:${closed}; add_header X-Always yes always; add_header X-Not no; }
        location /down-paged/ { proxy_pass http://127.0.0.1:${closed}; error_page 502 @unreachable; }
        location @unreachable { return 503 "no peer\n"; }
        location /paced/ { proxy_pass http://127.0.0.1:${plain}/data; proxy_limit_rate 5000; }
        location /vr/ {
            proxy_pass http://127.0.0.1:${plain};
            proxy_redirect http://$host/from-host/ /to/;
        }
        location /method/ { proxy_pass http://127.0.0.1:${plain}; proxy_method POST; }
        location /method-var/ { proxy_pass http://127.0.0.1:${plain}; proxy_method $arg_m; }
        location /method-outer/ {
            proxy_method PUT;
            location /method-outer/inner/ { proxy_pass http://127.0.0.1:${plain}; }
        }
    }
}
`,
  'client.pem': file('client.pem'),
  'client-encrypted.key': file('client-encrypted.key'),
  passwords: 'first\nsecond\n',
});
t.teardown(() => zonal.stop());

/** A request through zonal: status, headers, body. `chunked`: the body goes without a length. */
function send(path: string, options: { method?: string; body?: string; chunked?: boolean } = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: front, path, method: options.method ?? 'GET', headers: { host: 'front.test' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.setTimeout(5000, () => req.destroy(new Error('no answer in 5 s')));
    req.on('error', reject);
    if (options.body !== undefined && options.chunked) req.write(options.body);
    req.end(options.chunked ? undefined : options.body);
  });
}

t.test('proxy_http_version: 1.1 by default (zonal keeps connections); 1.0 sends HTTP/1.0, a body with its length', async (t) => {
  await send('/default/');
  t.equal(seen?.version, '1.1');
  await send('/v10/', { method: 'POST', body: 'a body without a length', chunked: true });
  t.equal(seen?.version, '1.0', 'HTTP/1.0 request line');
  t.equal(seen?.headers['content-length'], String('a body without a length'.length), 'the body read whole, sent with its length');
  t.notOk(seen?.headers['transfer-encoding'], 'no chunked body in HTTP/1.0');
  t.equal(seen?.body, 'a body without a length');
  t.equal(seen?.headers.connection, 'close');
});

t.test('proxy_cookie_domain and proxy_cookie_path rewrite Set-Cookie, with variables and regexes', async (t) => {
  const cookie = async (query: string, path = '/cookie/') => (await send(`${path}?${query}`)).headers['set-cookie']?.[0];
  t.equal(await cookie('domain=www.Example.org'), 'v=1; Domain=example.com', 'a domain compared caseless, the replacement without its dot');
  t.equal(await cookie('domain=.Front.Test.com'), 'v=1; Domain=.en.front.test.org', 'with variables, the dot kept');
  t.equal(await cookie('domain=www.example.COM'), 'v=1; Domain=www.example.org', 'a regex, caseless for domains');
  t.equal(await cookie('domain=other.net'), 'v=1; Domain=other.net', 'no rule: as sent');
  t.equal(await cookie('path=/path/test.html'), 'v=1; Path=/new/test.html', 'a path prefix');
  t.equal(await cookie('path=/front.test/test.html'), 'v=1; Path=/new/front.test/test.html', 'with variables');
  t.equal(await cookie('path=/regex/test.html'), 'v=1; Path=/test.html', 'a regex replaces all of it');
  t.equal(await cookie('path=/CASEless/test.html'), 'v=1; Path=/test.html', '~* caseless');
  t.equal(await cookie('path=/REGEX/test.html'), 'v=1; Path=/REGEX/test.html', '~ is not');
  t.equal(await cookie('domain=www.example.org&path=/path/x'), 'v=1; Domain=example.com; Path=/new/x', 'both');
  t.equal(await cookie('domain=www.example.org&path=/path/x', '/cookie/off/'), 'v=1; Domain=www.example.org; Path=/new/x', 'off stops the domains only; the paths inherit');
});

t.test("no peer answers: the location's error_page for the code, else nginx's page with add_header ... always", async (t) => {
  const plainPage = await send('/down/');
  t.equal(plainPage.status, 502);
  t.equal(plainPage.headers['x-always'], 'yes', 'always: on an error too');
  t.equal(plainPage.headers['x-not'], undefined, 'the others only on 2xx and 3xx');
  const paged = await send('/down-paged/');
  t.same([paged.status, paged.body], [502, 'no peer\n'], "error_page's location answers, with the error's code");
});

t.test('proxy_limit_rate: the answer is read at that rate', async (t) => {
  const started = performance.now();
  const r = await send('/paced/');
  const ms = performance.now() - started;
  t.equal(r.body, 'X'.repeat(10_000), 'whole');
  t.ok(ms >= 1500, `10,000 bytes at 5,000 a second: ${ms.toFixed(0)} ms`);
});

t.test('proxy_redirect: variables in the redirect', async (t) => {
  const r = await send('/vr/');
  t.equal(r.headers.location, `http://front.test:${front}/to/x`);
});

t.test('proxy_method: a method of its own, with variables, inherited by nested locations', async (t) => {
  await send('/default/');
  t.equal(seen?.method, 'GET', "without it, the client's method");
  await send('/method/');
  t.equal(seen?.method, 'POST');
  await send('/method-var/?m=PATCH');
  t.equal(seen?.method, 'PATCH', 'from a variable');
  await send('/method-var/', { method: 'DELETE' });
  t.equal(seen?.method, 'DELETE', "a variable that is empty leaves the client's method");
  await send('/method-outer/inner/');
  t.equal(seen?.method, 'PUT', "from the outer location, as nginx's proxy_method inherits");
});

t.test("proxy_hide_header, proxy_pass_header, and nginx's hidden headers", async (t) => {
  const plainAnswer = await send('/default/');
  t.notOk(plainAnswer.headers['x-accel-expires'], 'X-Accel-* hidden by default');
  t.not(plainAnswer.headers.server, 'backend/1.0', "the peer's Server hidden by default");
  t.equal(plainAnswer.headers['x-secret'], 's');
  const hidden = await send('/hidden/');
  t.notOk(hidden.headers['x-secret'], 'proxy_hide_header X-Secret');
  t.equal(hidden.headers.server, 'backend/1.0', 'proxy_pass_header Server');
  t.equal(hidden.headers['x-kept'], 'k');
});

t.test("proxy_intercept_errors: a peer answer whose status an error_page names is replaced by that page; others pass", async (t) => {
  const passed = await send('/default/missing');
  t.same([passed.status, passed.body], [404, 'backend says 404'], 'off: the peer answer');
  const intercepted = await send('/intercepted/missing');
  t.same([intercepted.status, intercepted.body], [404, "zonal's own 404\n"], 'on: the error_page of the status');
  const unpaged = await send('/unpaged/missing');
  t.same([unpaged.status, unpaged.body], [404, 'backend says 404'], 'on, but no error_page for 404: the peer answer, as nginx passes it');
  const again = await send('/intercepted/x');
  t.same([again.status, again.body], [200, 'ok'], 'a 200 passes, and the connection still serves');
});

t.test('proxy_redirect: default, off, regex with captures and variables, Refresh', async (t) => {
  const byDefault = await send('/one/redirect');
  // A path proxy_redirect made is made a URL, as nginx's header filter does (absolute_redirect).
  t.equal(byDefault.headers.location, `http://front.test:${front}/one/there`, 'default: the proxy_pass URL becomes the location');
  const off = await send('/off/redirect');
  t.equal(off.headers.location, `http://127.0.0.1:${plain}/two/there`, 'off: as the peer sent it');
  t.equal(off.headers.refresh, '3; url=http://old.example/page');
  const rewritten = await send('/rewritten/redirect');
  t.equal(rewritten.headers.location, 'http://front.test/moved/there', 'a regex, its capture and $host');
  t.equal(rewritten.headers.refresh, '3; url=/new/page', 'Refresh rewritten too');
});

t.test('proxy_ssl_certificate: the client certificate, its key opened by the password file', async (t) => {
  t.same((await send('/mtls/')).body, 'client client', 'the peer saw the CA-signed client certificate');
  t.same((await send('/nocert/')).body, 'none', 'without it, no certificate');
});
