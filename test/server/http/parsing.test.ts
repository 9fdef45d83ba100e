// HTTP parsing and answers as nginx's (issue 32 item 4), each case on raw sockets: the
// host of an absolute-form target, invalid hosts, TRACE and CONNECT, Transfer-Encoding's
// checks, a request pipelined after an Upgrade, and bare-LF line ends.
import t from 'tap';
import { createServer, type Server } from 'node:net';
import { freePorts, Zonal } from '../zonal.js';
import { exchange, statuses } from './raw.js';

const [site, backend] = await freePorts(2);

/** A backend that counts what reaches it and answers each request with its own bytes. */
let forwarded = 0;
let bareLf = false;
const upstream: Server = createServer((socket) => {
  socket.on('data', () => {
    forwarded++;
    socket.end(bareLf ? 'HTTP/1.1 200 OK\nContent-Length: 3\nX-Lf: yes\n\nlf\n' : 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n');
  });
});
await new Promise<void>((r) => upstream.listen(backend, '127.0.0.1', r));

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    server {
        listen 127.0.0.1:${site};
        server_name localhost;
        location / { return 200 "default $host\\n"; }
        location /proxy/ { proxy_pass http://127.0.0.1:${backend}/; }
    }
    server {
        listen 127.0.0.1:${site};
        server_name example.com;
        location / { return 200 "example $host\\n"; }
    }
}
`,
});
t.teardown(async () => {
  await z.stop();
  upstream.close();
});

const body = (text: string) => text.slice(text.indexOf('\r\n\r\n') + 4);

t.test('an absolute-form target is served, with the host of the target', async (t) => {
  const r = await exchange(site, 'GET http://Example.COM:8000/x?a=1 HTTP/1.1\r\nHost: localhost\r\n\r\n', { count: 1 });
  t.same(statuses(r.text), [200], r.text);
  t.equal(body(r.text), 'example example.com\n', 'the server and $host are the target\'s');
  const v10 = await exchange(site, 'GET http://example.com HTTP/1.0\r\n\r\n', { count: 1 });
  t.equal(body(v10.text), 'example example.com\n', 'an empty path is /');
});

t.test("a Host's final dot is dropped", async (t) => {
  const r = await exchange(site, 'GET / HTTP/1.1\r\nHost: example.com.\r\n\r\n', { count: 1 });
  t.equal(body(r.text), 'example example.com\n');
  const port = await exchange(site, 'GET / HTTP/1.0\r\nHost: EXAMPLE.com.:88\r\n\r\n', { count: 1 });
  t.equal(body(port.text), 'example example.com\n', 'with a port');
  const absolute = await exchange(site, 'GET http://example.com./ HTTP/1.0\r\n\r\n', { count: 1 });
  t.equal(body(absolute.text), 'example example.com\n', 'in an absolute target');
});

t.test('an invalid Host is answered 400', async (t) => {
  const cases: Record<string, string> = {
    empty: 'GET / HTTP/1.1\r\nHost: \r\n\r\n',
    'empty (HTTP/1.0)': 'GET / HTTP/1.0\r\nHost:\r\n\r\n',
    slash: 'GET / HTTP/1.0\r\nHost: example.com/\\:552\r\n\r\n',
    'leading ..': 'GET / HTTP/1.0\r\nHost: ..example.com\r\n\r\n',
    'double dot': 'GET / HTTP/1.0\r\nHost: example..com\r\n\r\n',
    'sent twice': 'GET / HTTP/1.1\r\nHost: localhost\r\nHost: example.com\r\n\r\n',
    'absolute with ..': 'GET http://com.exa-m.45..:/ HTTP/1.0\r\n\r\n',
    'absolute with a bad Host header': 'GET http://example.com/ HTTP/1.0\r\nHost: a/b\r\n\r\n',
    'missing in HTTP/1.1': 'GET / HTTP/1.1\r\n\r\n',
  };
  for (const [name, request] of Object.entries(cases)) {
    const r = await exchange(site, request, { count: 1 });
    t.same(statuses(r.text), [400], `${name}: ${r.text.split('\r\n')[0]}`);
    t.match(r.text, /\r\nConnection: close\r\n/, `${name}: the connection closes`);
  }
  const ok = await exchange(site, 'GET / HTTP/1.0\r\nHost: 123.40.56.78:9000:80\r\n\r\n', { count: 1 });
  t.equal(body(ok.text), 'default 123.40.56.78\n', 'a second port is nginx\'s "double port hack": the host before it');
});

t.test('TRACE gets 405, CONNECT gets 400, or 405 when its target is a path or a URL', async (t) => {
  const trace = await exchange(site, 'TRACE / HTTP/1.1\r\nHost: localhost\r\n\r\nGET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
  t.same(statuses(trace.text), [405], trace.text);
  t.match(trace.text, /^HTTP\/1\.1 405 Not Allowed\r\n/, "nginx's reason");
  t.ok(trace.closed, 'the pipelined request after it is not answered: the connection closes');
  for (const target of ['/', 'http://example.com/']) {
    const r = await exchange(site, `CONNECT ${target} HTTP/1.1\r\nHost: example.com\r\n\r\nGET / HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    t.match(r.text, /^HTTP\/1\.1 405 Not Allowed\r\n/, `CONNECT ${target}: ${r.text.split('\r\n')[0]}`);
    t.same(statuses(r.text), [405], 'and nothing after it');
  }
  const connect = await exchange(site, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', { count: 1 });
  t.same(statuses(connect.text), [400], connect.text);
  t.ok((await exchange(site, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')).closed, 'and closes the connection');
});

t.test('a Transfer-Encoding other than chunked gets 501', async (t) => {
  for (const te of ['identity, chunked', 'gzip', 'identity']) {
    const r = await exchange(site, `POST /proxy/ HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: ${te}\r\n\r\n0\r\n\r\n`, { count: 1 });
    t.same(statuses(r.text), [501], `${te}: ${r.text.split('\r\n')[0]}`);
  }
});

t.test('an HTTP/1.0 request with Transfer-Encoding gets 400, and nothing is forwarded', async (t) => {
  const before = forwarded;
  const r = await exchange(site, 'POST /proxy/ HTTP/1.0\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n', { count: 1 });
  t.same(statuses(r.text), [400], r.text);
  const odd = await exchange(site, 'POST /proxy/ HTTP/1.0\r\nHost: localhost\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n', { count: 1 });
  t.same(statuses(odd.text), [400], 'the version is checked before the coding');
  // What the backend would have got is known once a request that is forwarded got there.
  const control = await exchange(site, 'GET /proxy/ HTTP/1.0\r\nHost: localhost\r\n\r\n', { count: 1 });
  t.same(statuses(control.text), [200]);
  t.equal(forwarded - before, 1, 'only the control request reached the backend');
});

t.test('a request pipelined after an Upgrade request is answered', async (t) => {
  const r = await exchange(
    site,
    'GET /a HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET /b HTTP/1.1\r\nHost: example.com\r\n\r\n',
    { count: 2 },
  );
  t.same(statuses(r.text), [200, 200], r.text);
  t.match(r.text, /default localhost\n[\s\S]*example example\.com\n/, 'both, in order');
  const three = await exchange(
    site,
    'GET /a HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\nGET /b HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\nGET /c HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    { count: 3 },
  );
  t.same(statuses(three.text), [200, 200, 200], 'two Upgrade requests in a row, then a third');
  const later = await exchange(site, ['GET /a HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n', 'GET /b HTTP/1.1\r\nHost: localhost\r\n\r\n'], { count: 2, gap: 100 });
  t.same(statuses(later.text), [200, 200], 'a request sent after the answer, on the same connection');
});

t.test('requests with bare-LF line ends stay refused', async (t) => {
  const r = await exchange(site, 'GET / HTTP/1.1\nHost: localhost\n\n', { count: 1 });
  t.same(statuses(r.text), [400], r.text);
});

t.test('an upstream response with bare-LF line ends is proxied', async (t) => {
  bareLf = true;
  t.teardown(() => void (bareLf = false));
  const r = await exchange(site, 'GET /proxy/ HTTP/1.0\r\nHost: localhost\r\n\r\n', { count: 1 });
  t.same(statuses(r.text), [200], r.text);
  t.match(r.text, /\r\nX-Lf: yes\r\n/, 'its headers are passed');
  t.equal(body(r.text), 'lf\n');
});
