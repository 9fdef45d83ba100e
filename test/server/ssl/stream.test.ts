// TLS in the stream module as nginx documents it (ngx_stream_ssl_module,
// ngx_stream_proxy_module): ssl_verify_client on ends a session whose client has no valid
// certificate (its handshake counted as failed), the ssl variables in the access log, and
// proxy_ssl toward the peers with proxy_ssl_verify, proxy_ssl_trusted_certificate,
// proxy_ssl_name, proxy_ssl_server_name and proxy_ssl_certificate. Real bin/zonal, TLS
// backends and node:tls clients.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect as connectPlain } from 'node:net';
import { connect, createServer, type Server, type TLSSocket } from 'node:tls';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { certificates } from './certs.js';

const certs = certificates();
const [verifying, proxying, untrusted, admin, goodPort, roguePort] = await freePorts(6);

/** A TLS echo backend that says first what it saw of the handshake: the SNI and the
 * subject of the client's certificate. */
function backend(port: number, cert: string, key: string): Promise<Server> {
  const server = createServer({ cert, key, requestCert: true, rejectUnauthorized: false }, (socket: TLSSocket) => {
    const peer = socket.getPeerX509Certificate();
    socket.write(`sni=${socket.servername || '-'} client=${peer ? peer.subject.replace(/\n/g, ',') : '-'}\n`);
    socket.pipe(socket);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}
const good = await backend(goodPort, certs['server.crt'], certs['server.key']);
const rogue = await backend(roguePort, certs['rogue.crt'], certs['rogue.key']);
t.teardown(() => Promise.all([good, rogue].map((s) => new Promise((r) => s.close(r)))));

const config = `
worker_processes 2;
stream {
    log_format tls '$ssl_client_verify|$ssl_client_s_dn|$ssl_protocol|$ssl_server_name|$ssl_session_reused';
    server {
        listen 127.0.0.1:${verifying} ssl;
        status_zone verifying;
        ssl_certificate server.crt;
        ssl_certificate_key server.key;
        ssl_verify_client on;
        ssl_client_certificate ca.crt;
        access_log tls.log tls;
        proxy_pass 127.0.0.1:${goodPort};
        proxy_ssl on;
    }
    server {
        listen 127.0.0.1:${proxying};
        proxy_pass 127.0.0.1:${goodPort};
        proxy_ssl on;
        proxy_ssl_verify on;
        proxy_ssl_trusted_certificate ca.crt;
        proxy_ssl_name backend.test;
        proxy_ssl_server_name on;
        proxy_ssl_certificate client.crt;
        proxy_ssl_certificate_key client.key;
    }
    server {
        listen 127.0.0.1:${untrusted};
        status_zone untrusted;
        proxy_pass 127.0.0.1:${roguePort};
        proxy_ssl on;
        proxy_ssl_verify on;
        proxy_ssl_trusted_certificate ca.crt;
    }
}
http {
    server {
        listen 127.0.0.1:${admin} admin;
        location /status/ { api /status/; }
    }
}
`;
const z = await Zonal.start({ 'zonal.conf': config, ...certs });
t.teardown(() => z.stop());

/** Connects (TLS or plain), sends `line`, and gives what came back until the end. */
function exchange(port: number, line: string, tls?: { cert?: string; key?: string; servername?: string }): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const socket = tls ? connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...tls }) : connectPlain({ host: '127.0.0.1', port });
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.once(tls ? 'secureConnect' : 'connect', () => socket.write(line));
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      got += d;
      if (got.includes(line)) socket.end();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(got);
    });
  });
}
const zone = async (name: string) => (await getJson(`http://127.0.0.1:${admin}/status/stream/server_zones/${name}`)).body;

t.test('ssl_verify_client on: no certificate or a bad one ends the connection; a good one is proxied', async (t) => {
  t.equal(await exchange(verifying, 'hello\n', { servername: 'stream.test' }), '', 'no certificate: nothing proxied');
  t.equal(await exchange(verifying, 'hello\n', { cert: certs['rogue.crt'], key: certs['rogue.key'] }), '', 'a certificate no CA signed: nothing proxied');
  const got = await exchange(verifying, 'hello\n', { cert: certs['client.crt'], key: certs['client.key'], servername: 'stream.test' });
  t.match(got, /hello\n$/, 'proxied to the peer');
  let z: any;
  t.ok(await eventually(async () => (z = await zone('verifying')).sessions.success === 1 && z.connections.processing === 0));
  t.equal(z.ssl.failed, 2, 'the refused certificates count as failed handshakes');
  t.equal(z.ssl.handshaked, 1);
  t.equal(z.connections.discarded, 2, 'no session for them');
});

t.test('the ssl variables of a session, in its log line', async (t) => {
  const file = join(z.dir, 'tls.log');
  let lines: string[] = [];
  t.ok(await eventually(async () => (lines = readFileSync(file, 'utf8').trim().split('\n').filter(Boolean)).length >= 1));
  const [verify, dn, protocol, sni, reused] = lines[0].split('|');
  t.equal(verify, 'SUCCESS');
  t.equal(dn, 'CN=client.test,O=Zonal\\x5C, Tests', 'its backslash escaped in the log, as nginx escapes it');
  t.equal(protocol, 'TLSv1.3');
  t.equal(sni, 'stream.test');
  t.equal(reused, '.');
});

t.test('proxy_ssl_verify with the trusted CA, proxy_ssl_name sent as SNI, the client certificate presented', async (t) => {
  const got = await exchange(proxying, 'ping\n');
  t.match(got, /^sni=backend\.test client=O=Zonal\\, Tests,CN=client\.test\nping\n$/);
});

t.test('a peer whose certificate the trusted CA did not sign is not reached: 502', async (t) => {
  t.equal(await exchange(untrusted, 'ping\n'), '');
  t.ok(await eventually(async () => (await zone('untrusted')).sessions.bad_gateway === 1));
});
