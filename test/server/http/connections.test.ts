// Connections and request bodies as nginx's http core module says: keepalive_timeout
// (idle time and the Keep-Alive header), keepalive_requests, keepalive_time,
// client_max_body_size, large_client_header_buffers, client_header_timeout and send_timeout.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePorts, Zonal } from '../zonal.js';
import { exchange, statuses } from './raw.js';

const [site, other] = await freePorts(2);

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    server {
        listen 127.0.0.1:${site};
        keepalive_timeout 1 9;
        keepalive_requests 2;
        large_client_header_buffers 4 1k;
        client_header_timeout 1s;
        location / { return 200 "ok\\n"; }
        location /long { keepalive_timeout 2500ms; keepalive_requests 4; return 200 "long\\n"; }
        location /zero { keepalive_timeout 0; return 200 "zero\\n"; }
        location /time { keepalive_time 1s; keepalive_requests 100; return 200 "time\\n"; }
        location /small { client_max_body_size 10; return 200 "small\\n"; }
        location /any { client_max_body_size 0; return 200 "any\\n"; }
        location /files/ { root .; send_timeout 1s; }
        location /safari { keepalive_disable safari; return 200 "safari\\n"; }
        location /none { keepalive_disable none; return 200 "none\\n"; }
    }
    server {
        listen 127.0.0.1:${other};
        location / { return 200 "other\\n"; }
    }
}
`,
});
t.teardown(() => z.stop());

const get = (path: string, host = 'localhost') => `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;

t.test("nginx's defaults: keep-alive without a Keep-Alive header", async (t) => {
  const r = await exchange(other, get('/'), { count: 1 });
  t.match(r.text, /\r\nConnection: keep-alive\r\n/);
  t.notMatch(r.text, /Keep-Alive:/i, 'no Keep-Alive header without keepalive_timeout\'s second argument');
});

t.test('keepalive_timeout: the header, and the idle time of the server and of a location', async (t) => {
  const timed = async (path: string) => {
    const started = Date.now();
    const r = await exchange(site, get(path), { ms: 6000 });
    return { ...r, after: Date.now() - started };
  };
  const [server, location] = await Promise.all([timed('/'), timed('/long')]);
  t.match(server.text, /\r\nKeep-Alive: timeout=9\r\n/, 'the header says the second argument');
  t.ok(server.closed, 'the idle connection is closed');
  t.ok(server.after >= 900 && server.after < 2000, `after keepalive_timeout 1 (${server.after} ms)`);
  t.ok(location.closed);
  t.ok(location.after >= 2400 && location.after < 3500, `a location's own: 2500ms (${location.after} ms)`);
  const zero = await exchange(site, get('/zero'), { count: 1 });
  t.match(zero.text, /\r\nConnection: close\r\n/, 'keepalive_timeout 0: no keep-alive');
});

t.test('keepalive_requests: the last response says Connection: close', async (t) => {
  const r = await exchange(site, get('/') + get('/') + get('/'), { ms: 2000 });
  t.same(statuses(r.text), [200, 200], 'two answered, then the connection closes');
  t.equal(r.text.match(/Connection: keep-alive/g)?.length, 1);
  t.match(r.text, /Connection: close\r\n[\s\S]*ok\n$/, 'the second says close');
  t.ok(r.closed);
  const long = await exchange(site, get('/long') + get('/long') + get('/long') + get('/long') + get('/long'), { ms: 2000 });
  t.same(statuses(long.text), [200, 200, 200, 200], "a location's own: 4");
});

t.test('keepalive_disable: msie6 (the default) on POST, safari, none', async (t) => {
  const connection = async (method: string, path: string, agent: string) => {
    const r = await exchange(site, `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: ${agent}\r\nContent-Length: 0\r\n\r\n`, { count: 1 });
    return /\r\nConnection: (\S+)\r\n/.exec(r.text)?.[1];
  };
  t.equal(await connection('POST', '/', 'MSIE 5.0'), 'close', 'msie6: POST from MSIE 5');
  t.equal(await connection('GET', '/', 'MSIE 5.0'), 'keep-alive', 'msie6: not GET');
  t.equal(await connection('POST', '/', 'MSIE 7.0'), 'keep-alive', 'msie6: not MSIE 7');
  t.equal(await connection('GET', '/', 'Mac OS X Safari/7534.48.3'), 'keep-alive', 'safari is not disabled by default');
  t.equal(await connection('GET', '/safari', 'Mac OS X Safari/7534.48.3'), 'close', 'keepalive_disable safari');
  t.equal(await connection('POST', '/none', 'MSIE 5.0'), 'keep-alive', 'keepalive_disable none');
});

t.test('keepalive_time: no keep-alive once the connection is older', async (t) => {
  const r = await exchange(site, [get('/time'), get('/time'), get('/time'), get('/time')], { gap: 700, ms: 4000 });
  t.same(statuses(r.text), [200, 200, 200], 'the request past 1s is answered, and is the last');
  t.same(r.text.match(/Connection: \S+/g), ['Connection: keep-alive', 'Connection: keep-alive', 'Connection: close']);
  t.ok(r.closed);
});

t.test('client_max_body_size: 413 when Content-Length says more, before the body', async (t) => {
  const post = (path: string, length: number) => `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${length}\r\n\r\n`;
  const big = await exchange(site, post('/', 1024 * 1024 + 1), { count: 1 });
  t.same(statuses(big.text), [413], 'the default is 1m');
  t.match(big.text, /<title>413 /, "nginx's error page");
  t.match(big.text, /\r\nConnection: close\r\n/);
  const fits = await exchange(site, post('/', 1024 * 1024), { count: 1 });
  t.same(statuses(fits.text), [200], '1m itself is allowed');
  t.same(statuses((await exchange(site, post('/small', 11), { count: 1 })).text), [413], "a location's own");
  t.same(statuses((await exchange(site, post('/small', 10) + '0123456789', { count: 1 })).text), [200]);
  t.same(statuses((await exchange(site, post('/any', 100 * 1024 * 1024), { count: 1 })).text), [200], '0: no limit');
});

t.test('large_client_header_buffers: 414 for a long request line, 400 for a long header', async (t) => {
  const line = await exchange(site, get('/' + 'a'.repeat(1100)), { count: 1 });
  t.same(statuses(line.text), [414], line.text.split('\r\n')[0]);
  const header = await exchange(site, `GET / HTTP/1.1\r\nHost: localhost\r\nCookie: ${'c'.repeat(1100)}\r\n\r\n`, { count: 1 });
  t.same(statuses(header.text), [400]);
  t.match(header.text, /Request Header Or Cookie Too Large/);
  const many = Array.from({ length: 6 }, (_, i) => `X-${i}: ${'v'.repeat(900)}\r\n`).join('');
  const total = await exchange(site, `GET / HTTP/1.1\r\nHost: localhost\r\n${many}\r\n`, { count: 1 });
  t.same(statuses(total.text), [400], 'more than the 4 buffers hold');
  t.match(total.text, /Request Header Or Cookie Too Large/);
  const fits = await exchange(site, `GET /${'a'.repeat(900)} HTTP/1.1\r\nHost: localhost\r\nX-A: ${'v'.repeat(900)}\r\n\r\n`, { count: 1 });
  t.same(statuses(fits.text), [200], 'each within a buffer');
});

t.test('client_header_timeout: a head not sent in time is not waited for', async (t) => {
  const started = Date.now();
  const r = await exchange(site, 'GET / HTTP/1.1\r\nHost: local', { ms: 5000 });
  const after = Date.now() - started;
  t.ok(r.closed, 'the connection is closed');
  t.ok(after >= 900 && after < 2500, `after about 1s (${after} ms)`);
  t.same(statuses(r.text), [408]);
});

t.test('send_timeout: a client that stops reading has its connection closed', async (t) => {
  const size = 64 * 1024 * 1024;
  mkdirSync(join(z.dir, 'files'), { recursive: true });
  writeFileSync(join(z.dir, 'files', 'big.bin'), Buffer.alloc(size, 1));
  const socket = connect(site, '127.0.0.1');
  socket.pause();
  socket.write(get('/files/big.bin'));
  // Reads nothing for 2 s: the buffers between fill, and the server's writes wait.
  await new Promise((r) => setTimeout(r, 2000));
  let received = 0;
  const closed = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 10_000);
    socket.on('data', (d: Buffer) => (received += d.length));
    socket.on('close', () => (clearTimeout(timer), resolve(true)));
    socket.on('error', () => {});
    socket.resume();
  });
  socket.destroy();
  t.ok(closed, 'the connection was closed');
  t.ok(received > 0 && received < size, `the response was cut: ${received} of ${size} bytes`);
});
