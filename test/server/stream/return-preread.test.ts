// nginx's stream return, ssl_preread and proxy_protocol toward the peer, through bin/zonal,
// as nginx's documentation describes them (ngx_stream_return_module,
// ngx_stream_ssl_preread_module, ngx_stream_proxy_module): `return` sends its value and
// closes; `ssl_preread on` reads the ClientHello without terminating TLS, so that
// `proxy_pass $ssl_preread_server_name` routes by SNI to a peer that terminates TLS
// itself, and the variables reach the log; `proxy_protocol on` sends the peer a PROXY v1
// header with the client's addresses; proxy_next_upstream_timeout bounds the retries.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { connect as connectPlain, createServer, type Server } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { join } from 'node:path';
import { selfSigned } from '../../helpers.js';
import { eventually, freePorts, Zonal } from '../zonal.js';
import { EchoBackend, exchange } from './peers.js';

const { cert, key } = selfSigned('preread.test');
const [returned, preread, prereadTimeout, proxied, proxiedTls, retried, retriedAll, silentA, silentB, alpha, beta, headerPeer, headerTlsPeer, mixed] = await freePorts(14);
const alphaBackend = new EchoBackend(alpha, { tls: { cert, key }, greeting: 'alpha\n' });
const betaBackend = new EchoBackend(beta, { tls: { cert, key }, greeting: 'beta\n' });
await alphaBackend.start();
await betaBackend.start();
t.teardown(() => Promise.all([alphaBackend.stop(), betaBackend.stop()]));

/** A peer that records the first line it reads (the PROXY header) and echoes the rest. */
const headers: string[] = [];
function headerServer(port: number): Promise<Server> {
  const server = createServer((s) => {
    s.on('error', () => {});
    let got = Buffer.alloc(0);
    const first = (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const end = got.indexOf('\r\n');
      if (end < 0) return;
      s.off('data', first);
      headers.push(got.toString('latin1', 0, end + 2));
      s.write(got.subarray(end + 2));
      s.pipe(s);
    };
    s.on('data', first);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}
const plainHeaderPeer = await headerServer(headerPeer);
t.teardown(() => plainHeaderPeer.close());
// For proxy_ssl: the header comes before the handshake, then the TLS echo backend's bytes.
const tlsEcho = new EchoBackend(mixed, { tls: { cert, key } });
await tlsEcho.start();
t.teardown(() => tlsEcho.stop());
const tlsHeaderPeer = createServer((s) => {
  s.on('error', () => {});
  s.once('readable', () => {
    const line: Buffer[] = [];
    for (let b: Buffer | null; (b = s.read(1) as Buffer | null) !== null; ) {
      line.push(b);
      if (b[0] === 0x0a) break;
    }
    headers.push(Buffer.concat(line).toString('latin1'));
    // The rest (the ClientHello on) goes to the TLS echo backend.
    const onward = connectPlain(mixed, '127.0.0.1');
    onward.on('error', () => s.destroy());
    s.pipe(onward).pipe(s);
  });
});
await new Promise<void>((resolve) => tlsHeaderPeer.listen(headerTlsPeer, '127.0.0.1', () => resolve()));
t.teardown(() => tlsHeaderPeer.close());

const silent = await Promise.all(
  [silentA, silentB].map((port) => new Promise<Server>((resolve) => {
    const server = createServer((s) => s.on('error', () => {}));
    server.listen(port, '127.0.0.1', () => resolve(server));
  })),
);
t.teardown(() => silent.forEach((s) => s.close()));

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 2;
stream {
    log_format preread '$ssl_preread_server_name|$ssl_preread_protocol|$ssl_preread_alpn_protocols|$upstream_addr';
    upstream alpha.test { server 127.0.0.1:${alpha}; }
    upstream beta.test { server 127.0.0.1:${beta}; }
    server { listen 127.0.0.1:${returned}; return "hello $remote_addr\\n"; }
    server {
        listen 127.0.0.1:${preread};
        ssl_preread on;
        access_log preread.log preread;
        proxy_pass $ssl_preread_server_name;
    }
    server { listen 127.0.0.1:${prereadTimeout}; ssl_preread on; preread_timeout 300ms; return "[$ssl_preread_server_name]"; }
    server { listen 127.0.0.1:${proxied}; proxy_protocol on; proxy_pass 127.0.0.1:${headerPeer}; }
    server { listen 127.0.0.1:${proxiedTls}; proxy_protocol on; proxy_ssl on; proxy_pass 127.0.0.1:${headerTlsPeer}; }
    # Peers that take the connection and never answer the TLS handshake: each attempt
    # fails at proxy_connect_timeout. max_fails=0: a failure leaves the peer available.
    upstream silent { server 127.0.0.1:${silentA} max_fails=0; server 127.0.0.1:${silentB} max_fails=0; }
    log_format tried '$upstream_addr';
    server { listen 127.0.0.1:${retried}; access_log retried.log tried; proxy_ssl on; proxy_connect_timeout 300ms; proxy_next_upstream_timeout 100ms; proxy_pass silent; }
    server { listen 127.0.0.1:${retriedAll}; access_log retried-all.log tried; proxy_ssl on; proxy_connect_timeout 300ms; proxy_pass silent; }
}
`,
});
t.teardown(() => z.stop());

/** A TLS client through the preread server: what the peer (which terminates TLS) says first. */
function greeting(port: number, servername: string | undefined, alpn?: string[]): Promise<string> {
  return new Promise((resolve) => {
    const s = connectTls({ port, host: '127.0.0.1', rejectUnauthorized: false, ...(servername ? { servername } : {}), ...(alpn ? { ALPNProtocols: alpn } : {}) });
    let got = '';
    s.setEncoding('utf8');
    s.on('data', (d) => {
      got += d;
      if (got.endsWith('\n')) s.end();
    });
    s.on('close', () => resolve(got));
    // A session that ends before the handshake: what came is the answer.
    s.on('error', () => resolve(got));
    s.setTimeout(10_000, () => s.destroy(new Error('timed out')));
  });
}

t.test('return sends its value, with variables, and closes', async (t) => {
  const a = await exchange(returned, '', { expect: 0 });
  t.equal(a.received.toString(), 'hello 127.0.0.1\n');
  const b = await exchange(returned, 'ignored input', { expect: 0 });
  t.equal(b.received.toString(), 'hello 127.0.0.1\n');
});

t.test('ssl_preread routes by SNI without terminating TLS', async (t) => {
  t.equal(await greeting(preread, 'alpha.test'), 'alpha\n', 'alpha.test goes to its upstream, whose TLS the client sees');
  t.equal(await greeting(preread, 'beta.test', ['h2', 'http/1.1']), 'beta\n');
  t.equal(await greeting(preread, 'BETA.test'), 'beta\n', 'upstream names are caseless');
  t.equal(await greeting(preread, 'nowhere.test'), '', 'a name that is no upstream and no address: the session ends');
  const log = join(z.dir, 'preread.log');
  t.ok(await eventually(async () => readFileSync(log, 'utf8').split('\n').length > 4), 'four sessions logged');
  // A line is written when its session ends, which the peer's side of a proxied one may
  // make later than the next sessions' ends: the lines are looked up, not counted in order.
  const lines = readFileSync(log, 'utf8').trim().split('\n');
  const has = (re: RegExp, what: string) => t.ok(lines.some((l) => re.test(l)), what);
  has(new RegExp(`^alpha\\.test\\|TLSv1\\.3\\|\\|127\\.0\\.0\\.1:${alpha}$`), 'alpha.test, no ALPN, its peer');
  has(new RegExp(`^beta\\.test\\|TLSv1\\.3\\|h2,http/1\\.1\\|127\\.0\\.0\\.1:${beta}$`), 'beta.test with the ALPN list');
  has(new RegExp(`^beta\\.test\\|TLSv1\\.3\\|\\|127\\.0\\.0\\.1:${beta}$`, 'i'), 'BETA.test, no ALPN');
  has(/^nowhere\.test\|TLSv1\.3\|\|-$/, 'nowhere.test, no peer');
});

t.test('ssl_preread on what is not TLS: empty variables', async (t) => {
  const plain = await exchange(prereadTimeout, 'GET / HTTP/1.0\r\n\r\n', { expect: 0 });
  t.equal(plain.received.toString(), '[]', 'not a ClientHello');
  const silent = await exchange(prereadTimeout, '', { expect: 0 });
  t.equal(silent.received.toString(), '[]', 'nothing within preread_timeout: the session goes on');
});

t.test('proxy_protocol on sends the peer the client addresses first', async (t) => {
  headers.length = 0;
  const a = await exchange(proxied, 'payload');
  t.equal(a.received.toString(), 'payload', 'the client bytes follow the header');
  t.match(headers[0], new RegExp(`^PROXY TCP4 127\\.0\\.0\\.1 127\\.0\\.0\\.1 \\d+ ${proxied}\\r\\n$`));
});

t.test('proxy_protocol on with proxy_ssl: the header comes before the handshake', async (t) => {
  headers.length = 0;
  const a = await exchange(proxiedTls, 'over tls');
  t.equal(a.received.toString(), 'over tls');
  t.match(headers[0], new RegExp(`^PROXY TCP4 127\\.0\\.0\\.1 127\\.0\\.0\\.1 \\d+ ${proxiedTls}\\r\\n$`));
});

t.test('proxy_next_upstream_timeout: no other peer once the time is over', async (t) => {
  // Each attempt fails after 300 ms. Without a timeout both peers are tried; with
  // 100 ms, the first failure comes after it: one peer tried, then 502.
  t.equal((await exchange(retriedAll, 'x', { expect: 0 })).received.length, 0);
  t.equal((await exchange(retried, 'x', { expect: 0 })).received.length, 0);
  const read = (name: string) => readFileSync(join(z.dir, name), 'utf8').trim();
  t.ok(await eventually(async () => read('retried-all.log') !== '' && read('retried.log') !== ''));
  t.match(read('retried-all.log'), new RegExp(`^127\\.0\\.0\\.1:(${silentA}|${silentB}), 127\\.0\\.0\\.1:(${silentA}|${silentB})$`), 'both peers tried');
  t.match(read('retried.log'), new RegExp(`^127\\.0\\.0\\.1:(${silentA}|${silentB})$`), 'one peer tried');
});
