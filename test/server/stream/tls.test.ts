// TLS in the stream module, through bin/zonal over 2 workers: handshakes on `listen ...
// ssl` counted (a resumed session too, in whichever worker takes it: the workers share
// their ticket keys), a failed and a timed out handshake discarded before a session
// exists, and `proxy_ssl on` to a TLS backend with sessions reused.
import t from 'tap';
import { connect } from 'node:net';
import { selfSigned } from '../../helpers.js';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { EchoBackend, exchange, tlsClient } from './peers.js';

const { cert, key } = selfSigned('stream.test');
const [admin, secure, slowHandshake, toTls, plainBackend, tlsBackendPort] = await freePorts(6);
const plain = new EchoBackend(plainBackend);
const tlsBackend = new EchoBackend(tlsBackendPort, { tls: { cert, key } });
await plain.start();
await tlsBackend.start();
t.teardown(() => Promise.all([plain.stop(), tlsBackend.stop()]));

const zonal = await Zonal.start({
  'cert.pem': cert,
  'key.pem': key,
  'zonal.conf': `
worker_processes 2;
http {
    server {
        listen 127.0.0.1:${admin} admin;
        location /status/ { api /status/; }
    }
}
stream {
    ssl_certificate cert.pem;
    ssl_certificate_key key.pem;
    server { listen 127.0.0.1:${secure} ssl; status_zone secure; proxy_pass 127.0.0.1:${plainBackend}; }
    server { listen 127.0.0.1:${slowHandshake} ssl; status_zone slow; ssl_handshake_timeout 300ms; proxy_pass 127.0.0.1:${plainBackend}; }
    server { listen 127.0.0.1:${toTls}; status_zone upstream_tls; proxy_ssl on; proxy_pass 127.0.0.1:${tlsBackendPort}; }
}
`,
});
t.teardown(() => zonal.stop());

const zoneOf = async (name: string) => (await getJson(`http://127.0.0.1:${admin}/status/stream/server_zones/${name}`)).body;

t.test('TLS handshakes on an ssl listen, a resumed session counted in reuses', async (t) => {
  const first = await tlsClient(secure);
  t.notOk(first.reused);
  const session = await first.session;
  t.ok(session, 'the server gave a session ticket');
  const echoed = await exchange(0, 'secret', { socket: first.socket });
  t.equal(echoed.received.toString(), 'secret', 'bytes go through decrypted');
  const second = await tlsClient(secure, session);
  t.ok(second.reused, 'the second connection resumed the first session');
  await exchange(0, 'again', { socket: second.socket });
  let zone: any;
  await eventually(async () => (zone = await zoneOf('secure')).sessions.success === 2);
  t.same(zone.ssl, { handshaked: 2, reuses: 1, timedout: 0, failed: 0 });
  t.same(zone.connections, { total: 2, processing: 0, discarded: 0 });
  t.same(zone.data, { received: 11, sent: 11 }, 'the bytes after decryption, exact');
});

t.test('a failed handshake (plain bytes to the TLS port) is discarded', async (t) => {
  const r = await exchange(secure, 'GET / HTTP/1.0\r\n\r\n', { expect: 0 });
  t.ok(r.received.length >= 0);
  let zone: any;
  await eventually(async () => (zone = await zoneOf('secure')).ssl.failed === 1 && zone.connections.processing === 0);
  t.equal(zone.ssl.failed, 1);
  t.equal(zone.connections.discarded, 1, 'no session was created');
  t.equal(zone.sessions.success, 2, 'no session code counted for it');
  t.equal(zone.sessions.invalid, 0);
});

t.test('a handshake that never comes times out', async (t) => {
  const s = connect(slowHandshake, '127.0.0.1');
  s.on('error', () => {});
  const closed = await new Promise<number>((resolve) => {
    const at = performance.now();
    s.on('close', () => resolve(performance.now() - at));
  });
  t.ok(closed >= 250 && closed < 3000, `closed after ${Math.round(closed)} ms (ssl_handshake_timeout 300ms)`);
  let zone: any;
  // The handshake's end is counted first, the connection's as its socket closes.
  await eventually(async () => (zone = await zoneOf('slow')).ssl.timedout === 1 && zone.connections.processing === 0);
  t.same(zone.ssl, { handshaked: 0, reuses: 0, timedout: 1, failed: 0 });
  t.equal(zone.connections.discarded, 1);
});

t.test('proxy_ssl on: TLS to the backend, sessions reused', async (t) => {
  for (let i = 0; i < 6; i++) t.equal((await exchange(toTls, `m${i}`)).received.toString(), `m${i}`);
  t.equal(tlsBackend.handshakes, 6, 'every session made a TLS connection to the backend');
  // Each of the 2 workers makes one full handshake at most; later ones resume.
  t.ok(tlsBackend.resumed >= 4, `${tlsBackend.resumed} of 6 resumed`);
  let zone: any;
  await eventually(async () => (zone = await zoneOf('upstream_tls')).sessions.success === 6);
  t.equal(zone.sessions.success, 6);
  t.same(zone.data, { received: 12, sent: 12 });
  t.notOk('ssl' in zone, 'a plain listen shows no ssl');
});
