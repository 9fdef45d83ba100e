// `listen ... ssl proxy_protocol` through bin/zonal over 2 workers: the PROXY header comes
// first on the TCP connection, then the TLS handshake, counted as on a plain ssl listen
// (a resumed session, a failed and a timed out handshake); a bad header is `invalid`
// before any handshake; the header's address is the client's for the access rules and
// the limit_conn keys.
import t from 'tap';
import { connect, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { connect as connectTls, type TLSSocket } from 'node:tls';
import { selfSigned } from '../../helpers.js';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { EchoBackend, exchange } from './peers.js';

const v1 = (source: string, port = 4000) => Buffer.from(`PROXY TCP4 ${source} 192.0.2.2 ${port} 5000\r\n`, 'latin1');
/** A version 2 header, command PROXY, TCP over IPv4. */
function v2(source: string): Buffer {
  const addresses = Buffer.alloc(12);
  source.split('.').forEach((o, i) => (addresses[i] = Number(o)));
  addresses.set([192, 0, 2, 2], 4);
  addresses.writeUInt16BE(4000, 8);
  addresses.writeUInt16BE(5000, 10);
  return Buffer.concat([Buffer.from('\r\n\r\n\0\r\nQUIT\n', 'latin1'), Buffer.from([0x21, 0x11, 0, 12]), addresses]);
}

/** The TCP connection as a stream whose first write carries `header` too: the PROXY
 * header and the ClientHello leave in one segment, so the server reads past the header. */
function prefixed(raw: Socket, header: Buffer): Duplex {
  let first = true;
  const stream = new Duplex({
    read: () => void raw.resume(),
    write: (chunk: Buffer, _encoding, callback) => {
      raw.write(first ? Buffer.concat([header, chunk]) : chunk, callback);
      first = false;
    },
    final: (callback) => void raw.end(callback),
    destroy: (err, callback) => {
      raw.destroy();
      callback(err);
    },
  });
  raw.on('data', (d: Buffer) => {
    if (!stream.push(d)) raw.pause();
  });
  raw.on('end', () => stream.push(null));
  raw.on('close', () => stream.destroy());
  return stream;
}

/** A TLS client behind a PROXY header: sent with the ClientHello (`together`) or on its
 * own before the TLS client starts. Resolves once the handshake is done, with the
 * session ticket it was given (awaited up to 1 s). */
function proxiedTls(port: number, header: Buffer, options: { together: boolean; session?: Buffer }) {
  return new Promise<{ socket: TLSSocket; reused: boolean; session: Promise<Buffer | undefined> }>((resolve, reject) => {
    const raw = connect(port, '127.0.0.1');
    raw.on('error', () => {});
    if (!options.together) raw.write(header);
    const socket = connectTls({
      socket: options.together ? prefixed(raw, header) : raw,
      rejectUnauthorized: false,
      ...(options.session ? { session: options.session } : {}),
    });
    const ticket = new Promise<Buffer | undefined>((r) => {
      const timer = setTimeout(() => r(undefined), 1000);
      socket.once('session', (s: Buffer) => (clearTimeout(timer), setImmediate(() => r(s))));
    });
    socket.once('secureConnect', () => resolve({ socket, reused: socket.isSessionReused(), session: ticket }));
    socket.once('error', reject);
  });
}

const { cert, key } = selfSigned('stream.test');
const [admin, secure, slow, limited, backendPort] = await freePorts(5);
const backend = new EchoBackend(backendPort);
await backend.start();
t.teardown(() => backend.stop());

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
    limit_conn_zone $remote_addr zone=perclient:64k;
    server { listen 127.0.0.1:${secure} ssl proxy_protocol; status_zone secure; deny 192.0.2.66; proxy_pass 127.0.0.1:${backendPort}; }
    server { listen 127.0.0.1:${slow} ssl proxy_protocol; status_zone slow; ssl_handshake_timeout 300ms; proxy_pass 127.0.0.1:${backendPort}; }
    server { listen 127.0.0.1:${limited} ssl proxy_protocol; status_zone limited; limit_conn perclient 1; proxy_pass 127.0.0.1:${backendPort}; }
}
`,
});
t.teardown(() => zonal.stop());

const zoneOf = async (name: string) => (await getJson(`http://127.0.0.1:${admin}/status/stream/server_zones/${name}`)).body;
async function settled(name: string, probe: (zone: any) => boolean): Promise<any> {
  let zone: any;
  await eventually(async () => probe((zone = await zoneOf(name))));
  return zone;
}

t.test('PROXY header then TLS: proxied, handshakes counted, a session resumed', async (t) => {
  const first = await proxiedTls(secure, v1('192.0.2.1'), { together: true });
  t.notOk(first.reused);
  const session = await first.session;
  t.ok(session, 'the server gave a session ticket');
  t.equal((await exchange(0, 'secret', { socket: first.socket })).received.toString(), 'secret', 'bytes go through decrypted');
  // Version 2 this time, and the header in a segment of its own.
  const second = await proxiedTls(secure, v2('192.0.2.1'), { together: false, session });
  t.ok(second.reused, 'the second connection resumed the first session');
  t.equal((await exchange(0, 'again', { socket: second.socket })).received.toString(), 'again');
  const zone = await settled('secure', (z) => z.sessions.success === 2 && z.connections.processing === 0);
  t.same(zone.ssl, { handshaked: 2, reuses: 1, timedout: 0, failed: 0 });
  t.same(zone.connections, { total: 2, processing: 0, discarded: 0 });
  t.same(zone.data, { received: v1('192.0.2.1').length + 6 + v2('192.0.2.1').length + 5, sent: 11 }, 'the headers and the decrypted bytes, exact');
});

t.test("the access rules see the header's address", async (t) => {
  const before = await zoneOf('secure');
  // From 127.0.0.1 as the allowed ones: refused for the address its header names.
  const refused = await exchange(secure, v1('192.0.2.66'), { expect: 0 });
  t.equal(refused.received.length, 0, 'closed without a byte');
  const zone = await settled('secure', (z) => z.sessions.forbidden === 1 && z.connections.processing === 0);
  t.equal(zone.sessions.forbidden, 1);
  t.same(zone.ssl, before.ssl, 'refused before any handshake');
});

t.test('a bad PROXY header is invalid, no handshake counted', async (t) => {
  const before = await zoneOf('secure');
  const bad = await exchange(secure, 'GET / HTTP/1.0\r\n\r\n', { expect: 0 });
  t.equal(bad.received.length, 0);
  const zone = await settled('secure', (z) => z.sessions.invalid === 1 && z.connections.processing === 0);
  t.equal(zone.sessions.invalid, 1);
  t.same(zone.ssl, before.ssl);
  t.equal(zone.connections.discarded, before.connections.discarded, 'a session with its code, not a discarded connection');
});

t.test('plain bytes after a good header: a failed handshake', async (t) => {
  const before = await zoneOf('secure');
  const r = await exchange(secure, Buffer.concat([v1('192.0.2.1'), Buffer.from('GET / HTTP/1.0\r\n\r\n')]), { expect: 0 });
  t.equal(r.received.toString().includes('HTTP'), false, 'nothing was proxied');
  const zone = await settled('secure', (z) => z.ssl.failed === 1 && z.connections.processing === 0);
  t.same(zone.ssl, { ...before.ssl, failed: 1 });
  t.equal(zone.connections.discarded, before.connections.discarded + 1, 'discarded: no session exists yet');
  t.same(zone.sessions, before.sessions, 'no session code counted');
  t.equal(backend.connections, 2, 'the backend saw only the proxied sessions');
});

t.test('a client gone after the header, before its handshake: failed, as node counts it on a plain ssl listen', async (t) => {
  const before = await zoneOf('secure');
  await exchange(secure, v1('192.0.2.1'), { expect: 0 });
  const zone = await settled('secure', (z) => z.ssl.failed === before.ssl.failed + 1 && z.connections.processing === 0);
  t.same(zone.ssl, { ...before.ssl, failed: before.ssl.failed + 1 });
  t.equal(zone.connections.discarded, before.connections.discarded + 1);
  t.same(zone.sessions, before.sessions);
});

t.test('ssl_handshake_timeout after the header', async (t) => {
  const s = connect(slow, '127.0.0.1');
  s.on('error', () => {});
  const closed = new Promise<number>((resolve) => {
    const at = performance.now();
    s.on('close', () => resolve(performance.now() - at));
  });
  s.write(v1('192.0.2.1'));
  const ms = await closed;
  t.ok(ms >= 250 && ms < 3000, `closed after ${Math.round(ms)} ms (ssl_handshake_timeout 300ms)`);
  const zone = await settled('slow', (z) => z.ssl.timedout === 1 && z.connections.processing === 0);
  t.same(zone.ssl, { handshaked: 0, reuses: 0, timedout: 1, failed: 0 });
  t.equal(zone.connections.discarded, 1);
});

t.test("limit_conn keys on the header's address", async (t) => {
  const held = await proxiedTls(limited, v1('192.0.2.1'), { together: true });
  const echoed = new Promise<void>((resolve) => held.socket.once('data', () => resolve()));
  held.socket.write('hold');
  await echoed;
  // Both from 127.0.0.1: the one naming the held client's address is over its limit.
  t.equal((await exchange(limited, v1('192.0.2.1', 4001), { expect: 0 })).received.length, 0, 'the same client: refused');
  const other = await proxiedTls(limited, v1('192.0.2.9'), { together: true });
  t.equal((await exchange(0, 'other', { socket: other.socket })).received.toString(), 'other', 'another client: served');
  held.socket.end();
  const zone = await settled('limited', (z) => z.sessions.service_unavailable === 1 && z.sessions.success === 2 && z.connections.processing === 0);
  t.equal(zone.sessions.service_unavailable, 1);
  t.equal(zone.ssl.handshaked, 2, 'the refused one made no handshake');
});
