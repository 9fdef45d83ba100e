// HTTP/2 as zonal meets it: its data plane is node:http, HTTP/1.1. `listen ... http2` and
// `http2 on` are accepted with one [warn], since an HTTPS listener offers `http/1.1` alone
// in ALPN: a client that offers h2 and http/1.1 (curl, browsers) goes on with HTTP/1.1,
// and one that offers h2 alone is refused in the handshake (no_application_protocol, as
// nginx answers it since 1.21.4). HTTP/3 is refused at -t, naming it.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { connect as connectHttp2 } from 'node:http2';
import { connect } from 'node:tls';
import { checkConfig, freePorts, Zonal } from '../zonal.js';
import { certificates } from '../ssl/certs.js';

const certs = certificates();
const [tls, modern] = await freePorts(2);
const z = await Zonal.start({
  'server.crt': certs['server.crt'],
  'server.key': certs['server.key'],
  'zonal.conf': `
http {
    ssl_certificate server.crt;
    ssl_certificate_key server.key;
    server {
        listen 127.0.0.1:${tls} ssl http2;
        location / { return 200 "$server_protocol\\n"; }
    }
    server {
        listen 127.0.0.1:${modern} ssl;
        http2 on;
        location / { return 200 "$server_protocol\\n"; }
    }
}
`,
});
t.teardown(() => z.stop());

t.test('one [warn] at the start, for all the lines that ask for it', async (t) => {
  const warned = z.log.split('\n').filter((l) => l.includes('[warn]'));
  t.equal(warned.length, 1);
  t.match(warned[0], /zonal: \[warn\] zonal serves HTTP\/1\.1: clients that offer h2 use HTTP\/1\.1 \("http2" ignored\) in .*zonal\.conf:6$/);
});

t.test('ALPN: http/1.1 is chosen for a client that offers h2 first', async (t) => {
  for (const port of [tls, modern]) {
    const protocol = await new Promise<string | false | null>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: ['h2', 'http/1.1'] }, () => {
        resolve(socket.alpnProtocol);
        socket.destroy();
      });
      socket.on('error', reject);
    });
    t.equal(protocol, 'http/1.1');
  }
});

t.test('curl --http2 falls back to HTTP/1.1 and is answered', async (t) => {
  const curl = spawnSync('curl', ['-sk', '--http2', '-w', '%{http_version} %{http_code}', `https://127.0.0.1:${modern}/`], { encoding: 'utf8', timeout: 10_000 });
  t.equal(curl.stdout, 'HTTP/1.1\n1.1 200');
});

t.test("node's http2.connect, which offers h2 alone, fails cleanly in the handshake", async (t) => {
  const error = await new Promise<NodeJS.ErrnoException>((resolve) => {
    const session = connectHttp2(`https://127.0.0.1:${tls}`, { rejectUnauthorized: false });
    session.on('error', (e) => {
      session.destroy();
      resolve(e);
    });
    session.on('connect', () => {
      session.destroy();
      resolve(Object.assign(new Error('connected'), { code: 'CONNECTED' }));
    });
  });
  t.equal(error.code, 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL');
});

t.test('-t: http2 is checked as nginx checks it; HTTP/3 is refused by name', async (t) => {
  const server = (lines: string) => `http { server { ${lines} } }\n`;
  t.match((await checkConfig(server('listen 127.0.0.1:1; http2 maybe;'))).err, 'invalid value "maybe" in "http2" directive, it must be "on" or "off"');
  const off = await checkConfig(server('listen 127.0.0.1:1; http2 off;'));
  t.equal(off.code, 0);
  t.notMatch(off.err, /\[warn\]/, '"http2 off" asks for nothing zonal lacks');
  const quic = await checkConfig(server('listen 127.0.0.1:1 quic;'));
  t.equal(quic.code, 1);
  t.match(quic.err, 'invalid parameter "quic": zonal serves HTTP/1.1 over TCP, HTTP/3 (QUIC) is not implemented');
  t.match((await checkConfig(server('listen 127.0.0.1:1; http3 on;'))).err, `unknown directive "http3": zonal does not implement nginx's ngx_http_v3_module`);
  t.match((await checkConfig(server('listen 127.0.0.1:1; http2_max_concurrent_streams 64;'))).err, `unknown directive "http2_max_concurrent_streams": zonal does not implement nginx's ngx_http_v2_module`);
});
