// What a peer asks of nginx through X-Accel-* headers (ngx_http_proxy_module, "X-Accel-
// Redirect" in nginx's documentation), and $upstream_http_<name>: X-Accel-Redirect sends
// the request on to another location (a URI with its arguments, or a named location) as a
// GET, keeping Content-Type, Set-Cookie, Content-Disposition, Cache-Control, Expires and
// Accept-Ranges of the peer's answer and nothing else of it; a URI that climbs with `..`
// is refused with 404; X-Accel-Limit-Rate paces the peer's answer.
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, Zonal } from '../zonal.js';
import { exchange } from '../http/raw.js';

const [port, backendPort] = await freePorts(2);
const docs = mkdtempSync(join(tmpdir(), 'zonal-xar-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));
mkdirSync(join(docs, 'protected'));
writeFileSync(join(docs, 'protected', 'report.txt'), 'the protected file\n');

/** Answers with the X-Accel-* headers its query names. */
const backend = createServer((req, res) => {
  req.resume();
  const q = new URL(req.url ?? '/', 'http://x').searchParams;
  if (q.has('rate')) {
    res.setHeader('X-Accel-Limit-Rate', q.get('rate')!);
    return res.end(Buffer.alloc(2000, 'r'));
  }
  res.setHeader('X-Accel-Redirect', q.get('xar') ?? '');
  res.setHeader('Content-Type', 'text/blah');
  res.setHeader('Set-Cookie', 'session=1');
  res.setHeader('Content-Disposition', 'attachment');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('Something', 'other');
  res.end('the peer body, dropped');
});
await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', () => resolve()));
t.teardown(() => new Promise((r) => backend.close(r)));

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    server {
        listen 127.0.0.1:${port};
        location /proxy { proxy_pass http://127.0.0.1:${backendPort}/app; }
        location /protected/ { internal; root ${docs}; }
        location /show {
            return 200 "xar: $upstream_http_x_accel_redirect uri: $uri args: $args method: $request_method";
        }
        location @named { return 200 "named xar: $upstream_http_x_accel_redirect uri: $uri"; }
    }
}
`,
});
t.teardown(() => z.stop());

/** A raw HTTP/1.0 request, for what node's client would hide (the method, odd targets). */
async function send(method: string, target: string): Promise<{ status: number; head: string; body: string }> {
  const r = await exchange(port, `${method} ${target} HTTP/1.0\r\nHost: localhost\r\n\r\n`);
  const [head, body = ''] = r.text.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]), head, body };
}

t.test('X-Accel-Redirect to an internal location serves its file, with the headers nginx keeps', async (t) => {
  const r = await send('GET', '/proxy?xar=/protected/report.txt');
  t.equal(r.status, 200);
  t.equal(r.body, 'the protected file\n');
  t.match(r.head, /^Content-Type: text\/blah\r?$/m);
  t.match(r.head, /^Set-Cookie: session=1\r?$/m);
  t.match(r.head, /^Content-Disposition: attachment\r?$/m);
  t.match(r.head, /^Cache-Control: no-cache\r?$/m);
  t.notMatch(r.head, /^Something/m, 'the others are not');
  t.notMatch(r.head, /^X-Accel/im, 'nor the X-Accel-* headers');
});

t.test('the request goes on as a GET, with the arguments of the URI, and the variable names it', async (t) => {
  const r = await send('POST', '/proxy?xar=/show?a=1');
  t.equal(r.body, 'xar: /show?a=1 uri: /show args: a=1 method: GET');
  t.match(r.head, /^Content-Type: text\/blah\r?$/m, "a return there keeps the peer's type, as nginx's return names none");
  const head = await send('HEAD', '/proxy?xar=/show');
  t.equal(head.status, 200, 'a HEAD stays one');
  t.equal(head.body, '');
  const escaped = await send('GET', '/proxy?xar=/show%2520me');
  t.match(escaped.body, /^xar: \/show%20me uri: \/show me args:  method: GET$/, 'the URI decoded once, the variable as the peer sent it');
});

t.test('a named location keeps the URI of the request', async (t) => {
  const r = await send('GET', '/proxy?xar=@named');
  t.equal(r.body, 'named xar: @named uri: /proxy');
});

t.test('a URI that climbs is refused with 404', async (t) => {
  for (const xar of ['..', '../foo', '/foo/..', '/foo/.%2e', 'relative']) {
    const r = await send('GET', `/proxy?xar=${encodeURIComponent(xar)}`);
    t.equal(r.status, 404, xar);
  }
  await z.waitLog(/unsafe URI "\/foo\/\.%2e" was detected/, 5000);
  t.pass('in the error log, in nginx words');
});

t.test('X-Accel-Limit-Rate paces the answer', async (t) => {
  let started = performance.now();
  const fast = await fetch(`http://127.0.0.1:${port}/proxy?rate=off`);
  t.equal((await fast.arrayBuffer()).byteLength, 2000);
  const fastMs = performance.now() - started;
  started = performance.now();
  const slow = await fetch(`http://127.0.0.1:${port}/proxy?rate=1000`);
  t.equal((await slow.arrayBuffer()).byteLength, 2000);
  const slowMs = performance.now() - started;
  t.ok(slowMs >= 1400, `2000 bytes at 1000 a second: ${slowMs.toFixed(0)} ms (off: ${fastMs.toFixed(0)} ms)`);
  t.equal(slow.headers.get('x-accel-limit-rate'), null, 'and the header stays hidden');
});
