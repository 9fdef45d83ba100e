// How long an upstream connection is reused, from nginx's documentation of
// ngx_http_upstream_module: keepalive_requests (a connection closes once it has carried
// that many requests), keepalive_timeout (an idle one closes after it) and keepalive_time
// (one older than it closes once its request ends). The backend names the connection each
// request came on, as nginx's own test (upstream_keepalive.t) reads $connection.
import t from 'tap';
import type { Socket } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { freePorts, Zonal } from '../zonal.js';

const [front, port] = await freePorts(2);
const ids = new WeakMap<Socket, number>();
let connections = 0;
const backend = createHttpServer((req, res) => {
  let id = ids.get(req.socket);
  if (id === undefined) ids.set(req.socket, (id = ++connections));
  res.writeHead(200, { 'X-Connection': String(id) }).end('ok');
});
// No Keep-Alive hint of its own: the upstream's keepalive_timeout alone decides.
backend.keepAliveTimeout = 60_000;
await new Promise<void>((resolve) => backend.listen(port, '127.0.0.1', () => resolve()));
t.teardown(() => new Promise((r) => backend.close(r)));

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    upstream requests {
        server 127.0.0.1:${port};
        keepalive 1;
        keepalive_requests 3;
        keepalive_timeout 1s;
    }
    upstream time {
        server 127.0.0.1:${port};
        keepalive 1;
        keepalive_time 1s;
    }
    upstream plain {
        server 127.0.0.1:${port};
        keepalive 1;
    }
    server {
        listen 127.0.0.1:${front};
        location /plain { proxy_pass http://plain; }
        location /closing { proxy_set_header Connection $arg_c; proxy_pass http://plain; }
        location /requests { proxy_pass http://requests; }
        location /time { proxy_pass http://time; }
    }
}
`,
});
t.teardown(() => z.stop());

/** The backend's number of the connection a request through zonal came on. */
const connection = async (path: string) => {
  const r = await fetch(`http://127.0.0.1:${front}${path}`);
  if (r.status !== 200) throw new Error(`${path}: ${r.status}`);
  await r.text();
  return Number(r.headers.get('x-connection'));
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('keepalive_requests 3: three requests on one connection, the fourth on a new one', async (t) => {
  const first = await connection('/requests');
  t.equal(await connection('/requests'), first, 'kept');
  t.equal(await connection('/requests'), first, 'kept again');
  t.not(await connection('/requests'), first, 'closed after its third request');
});

t.test('keepalive_timeout 1s: an idle connection closes after it', async (t) => {
  await sleep(1500);
  const first = await connection('/requests');
  t.equal(await connection('/requests'), first, 'kept while not idle');
  await sleep(1500);
  t.not(await connection('/requests'), first, 'a new connection after 1.5 s idle');
});

t.test('keepalive_time 1s: a connection older than it closes once its request ends', async (t) => {
  const first = await connection('/time');
  t.equal(await connection('/time'), first, 'kept while young');
  // Requests keep it busy past its time: each ends well within the 60 s idle timeout.
  await sleep(600);
  t.equal(await connection('/time'), first, 'still young at 0.6 s');
  await sleep(600);
  await connection('/time');
  t.not(await connection('/time'), first, 'not reused past 1 s from its opening');
});

t.test('proxy_set_header Connection close: the request is its connection\'s last; empty changes nothing', async (t) => {
  const first = await connection('/plain');
  t.equal(await connection('/closing'), first, 'an empty value: zonal\'s own keep-alive');
  t.equal(await connection('/closing?c=close'), first, 'the request goes on the kept connection');
  t.not(await connection('/plain'), first, 'which closed after it');
});

t.test('-t: the values nginx refuses, and the directives stream upstreams do not have', async (t) => {
  const { loadConfig, formatConfigError } = await import('../../../src/server/config/load.js');
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'zonal-ka-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const check = (text: string) => {
    writeFileSync(join(dir, 'z.conf'), text);
    return loadConfig(join(dir, 'z.conf')).errors.map(formatConfigError);
  };
  const upstream = (line: string) => `http { upstream u { server 127.0.0.1:1; ${line} } server { listen 127.0.0.1:1; location / { proxy_pass http://u; } } }\n`;
  t.same(check(upstream('keepalive_requests 0; keepalive_time 0; keepalive_timeout 0;')), [], 'zero is a value');
  t.match(check(upstream('keepalive_requests x;'))[0], 'invalid value "x" in "keepalive_requests" directive');
  t.match(check(upstream('keepalive_timeout 1y1;'))[0], '"keepalive_timeout" directive invalid value');
  t.match(check(upstream('keepalive_time -1;'))[0], '"keepalive_time" directive invalid value');
  t.match(check(upstream('keepalive_requests 1; keepalive_requests 2;'))[0], '"keepalive_requests" directive is duplicate');
  const stream = check('stream { upstream s { server 127.0.0.1:1; keepalive_requests 3; } server { listen 127.0.0.1:2; proxy_pass s; } }\n');
  t.match(stream[0], /"keepalive_requests" directive is not allowed here/);
});
