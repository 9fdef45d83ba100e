// Unix domain sockets: `listen unix:<path>` in http and stream servers, and `server
// unix:<path>` in upstreams (proxying to a peer listening on a socket file), the peer
// named `unix:<path>` in /status/ as Angie names it.
import t from 'tap';
import { request } from 'node:http';
import { connect, createServer as createNetServer } from 'node:net';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, getJson, Zonal } from '../zonal.js';

const dir = mkdtempSync(join(tmpdir(), 'zonal-unix-'));
const sock = (name: string) => join(dir, name);
const [api, tcpBackend] = await freePorts(2);

// An HTTP backend on a socket file, and a TCP echo for the stream server.
const backend = createServer((req, res) => res.end(`backend ${req.url} host=${req.headers.host}\n`));
await new Promise<void>((r) => backend.listen(sock('backend.sock'), r));
const echo = createNetServer((s) => s.pipe(s));
await new Promise<void>((r) => echo.listen(tcpBackend, '127.0.0.1', r));
const echoUnix = createNetServer((s) => s.on('data', (d) => s.write(`unix:${d}`)));
await new Promise<void>((r) => echoUnix.listen(sock('echo.sock'), r));

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 2;
http {
    upstream u {
        zone u 256k;
        server ${`unix:${sock('backend.sock')}`};
    }
    server {
        listen unix:${sock('http.sock')};
        location / { return 200 "over a socket file\\n"; }
        location /p/ { proxy_pass http://u; }
        location /allow_unix { allow unix:; deny all; return 200 "allowed\\n"; }
        location /deny_unix { deny unix:; return 200 "not denied\\n"; }
    }
    server {
        listen 127.0.0.1:${api};
        location /direct/ { proxy_pass http://unix:${sock('backend.sock')}:/via/; }
        location /plain/ { proxy_pass http://unix:${sock('backend.sock')}; }
        location /allow_unix { allow unix:; deny all; return 200 "allowed\\n"; }
        location /deny_unix { deny unix:; return 200 "not denied\\n"; }
        location /status/ { api /status/; }
        location /p/ { proxy_pass http://u; }
    }
}
stream {
    upstream su { server unix:${sock('echo.sock')}; }
    server { listen unix:${sock('stream.sock')}; proxy_pass 127.0.0.1:${tcpBackend}; }
    server { listen unix:${sock('stream-unix.sock')}; proxy_pass su; }
    server { listen unix:${sock('stream-direct.sock')}; proxy_pass unix:${sock('echo.sock')}; }
    server { listen unix:${sock('stream-denied.sock')}; deny unix:; proxy_pass su; }
}
`,
});
t.teardown(async () => {
  await z.stop();
  backend.close();
  echo.close();
  echoUnix.close();
  rmSync(dir, { recursive: true, force: true });
});

const getUnix = (path: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ socketPath: sock('http.sock'), path, headers: { host: 'localhost' }, timeout: 3000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });

const streamRoundTrip = (file: string, text: string) =>
  new Promise<string>((resolve, reject) => {
    const s = connect(sock(file));
    let got = '';
    const timer = setTimeout(() => (s.destroy(), reject(new Error(`no echo within 3 s: ${got}`))), 3000);
    s.setEncoding('utf8');
    s.on('connect', () => s.write(text));
    s.on('data', (d: string) => {
      got += d;
      if (got.endsWith(text)) {
        clearTimeout(timer);
        s.end();
        resolve(got);
      }
    });
    s.on('error', reject);
  });

t.test('an http server listens on a socket file', async (t) => {
  const r = await getUnix('/');
  t.equal(r.status, 200);
  t.equal(r.body, 'over a socket file\n');
});

t.test('an upstream peer on a socket file is proxied to, and named unix:<path>', async (t) => {
  const r = await getUnix('/p/x');
  t.equal(r.status, 200);
  t.equal(r.body, 'backend /p/x host=u\n');
  const tcp = await fetch(`http://127.0.0.1:${api}/p/y`);
  t.equal(await tcp.text(), 'backend /p/y host=u\n', 'from a TCP listen too');
  const status = await getJson(`http://127.0.0.1:${api}/status/http/upstreams/u/peers/`);
  t.equal(status.status, 200, JSON.stringify(status.body));
  const name = `unix:${sock('backend.sock')}`;
  t.ok(Object.hasOwn(status.body, name), `the peer is ${name}: ${Object.keys(status.body)}`);
  t.equal(status.body[name]?.responses?.['200'], 2, 'its responses are counted');
});

t.test('a stream server listens on a socket file, and proxies to one', async (t) => {
  t.equal(await streamRoundTrip('stream.sock', 'hello'), 'hello');
  t.equal(await streamRoundTrip('stream-unix.sock', 'there'), 'unix:there');
});

t.test('allow unix: and deny unix: match the clients of a socket file, and no TCP client', async (t) => {
  t.same(await getUnix('/allow_unix'), { status: 200, body: 'allowed\n' }, 'allow unix: lets a socket client in');
  t.equal((await getUnix('/deny_unix')).status, 403, 'deny unix: refuses it');
  t.equal((await fetch(`http://127.0.0.1:${api}/allow_unix`)).status, 403, 'a TCP client is not unix: (deny all refuses it)');
  const tcp = await fetch(`http://127.0.0.1:${api}/deny_unix`);
  t.same([tcp.status, await tcp.text()], [200, 'not denied\n'], 'deny unix: lets a TCP client through');
});

t.test('proxy_pass http://unix:<path>:<uri>: to a socket file without an upstream, Host localhost', async (t) => {
  const direct = await fetch(`http://127.0.0.1:${api}/direct/x?y=1`);
  t.same([direct.status, await direct.text()], [200, 'backend /via/x?y=1 host=localhost\n'], "the location's prefix replaced by the URI after the path's colon");
  const plain = await fetch(`http://127.0.0.1:${api}/plain/z`);
  t.same([plain.status, await plain.text()], [200, 'backend /plain/z host=localhost\n'], 'without a URI the request URI goes as it came');
});

t.test('stream: proxy_pass unix:<path> without an upstream, and deny unix: on a socket listener', async (t) => {
  t.equal(await streamRoundTrip('stream-direct.sock', 'direct'), 'unix:direct');
  const got = await new Promise<string>((resolve) => {
    const s = connect(sock('stream-denied.sock'));
    let data = '';
    s.on('connect', () => s.write('hello'));
    s.on('data', (d) => (data += d));
    s.on('close', () => resolve(`closed:${data}`));
    s.on('error', () => {});
    setTimeout(() => (s.destroy(), resolve(`open:${data}`)), 3000);
  });
  t.equal(got, 'closed:', 'closed at once, nothing relayed');
});
