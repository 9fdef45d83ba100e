// What an https listen reads of each ClientHello before node's TLS takes the connection,
// as nginx's ssl module tells it: $ssl_ciphers (the suites the client offered, named as
// OpenSSL names them, unknown ones in hex), and with ssl_session_tickets off the TLS 1.3
// ticket, by which a session of ssl_session_cache builtin, builtin:size or shared is
// resumed (OpenSSL's stateful tickets). A client that sends no ClientHello times out as a
// handshake does. Real bin/zonal, node:tls clients.
import t from 'tap';
import { connect } from 'node:net';
import { cipherNames } from '../../../src/server/ssl/client-hello.js';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { certificates } from './certs.js';
import { get } from './client.js';

const certs = certificates();
const [builtin, sized, shared, none, plain, silent, admin] = await freePorts(7);
const server = (port: number, cache: string) => `
    server {
        listen 127.0.0.1:${port} ssl;
        ssl_session_cache ${cache};
        location / { return 200 ok; }
    }`;
const config = `
worker_processes 1;
http {
    add_header X-TLS "$ssl_session_reused|$ssl_protocol|$ssl_ciphers";
    ssl_certificate server.crt;
    ssl_certificate_key server.key;
    ssl_session_tickets off;
    ${server(builtin, 'builtin')}
    ${server(sized, 'builtin:1000')}
    ${server(shared, 'shared:SSL:1m')}
    ${server(none, 'none')}
    server {
        listen 127.0.0.1:${plain};
        location / { return 200 ok; }
    }
    server {
        listen 127.0.0.1:${silent} ssl;
        status_zone silent;
        ssl_handshake_timeout 300ms;
        location / { return 200 ok; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location /status/ { api /status/; }
    }
}
`;
// One worker for the builtin caches: each worker has its own, and a client's next
// connection may land in the other.
const z = await Zonal.start({ 'zonal.conf': config, ...certs });
t.teardown(() => z.stop());

const field = (h: string | undefined, i: number) => (h ?? '').split('|')[i];

t.test('$ssl_ciphers: the suites the client offered, in its order, by OpenSSL names', async (t) => {
  const a = await get({ port: builtin, maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256:AES256-SHA' });
  t.equal(a.status, 200);
  // OpenSSL's client adds the renegotiation signal to a TLS 1.2 list, which OpenSSL names too.
  t.equal(field(a.headers['x-tls'], 2), 'ECDHE-RSA-AES128-GCM-SHA256:AES256-SHA:TLS_EMPTY_RENEGOTIATION_INFO_SCSV');
  const b = await get({ port: builtin, ciphers: 'TLS_CHACHA20_POLY1305_SHA256:ECDHE-RSA-AES256-GCM-SHA384' });
  t.equal(field(b.headers['x-tls'], 1), 'TLSv1.3');
  t.match(field(b.headers['x-tls'], 2), /^TLS_CHACHA20_POLY1305_SHA256:(TLS_\w+:)*ECDHE-RSA-AES256-GCM-SHA384:TLS_EMPTY_RENEGOTIATION_INFO_SCSV$/, 'TLS 1.3 suites first');
  const p = await fetch(`http://127.0.0.1:${plain}/`);
  t.equal(p.headers.get('x-tls'), '||', 'empty on a plain connection');
});

t.test('unknown suites in hex, as nginx prints them (GREASE values are such)', async (t) => {
  t.equal(cipherNames(Buffer.from([0x0a, 0x0a, 0x13, 0x01, 0x00, 0x2f, 0xff, 0xfe])), '0x0a0a:TLS_AES_128_GCM_SHA256:AES128-SHA:0xfffe');
});

for (const [name, port] of [
  ['builtin', builtin],
  ['builtin:1000', sized],
  ['shared', shared],
] as const)
  t.test(`TLS 1.3 with ssl_session_tickets off: a session of ${name} resumes by its ticket`, async (t) => {
    const first = await get({ port });
    t.equal(first.protocol, 'TLSv1.3');
    t.equal(field(first.headers['x-tls'], 0), '.', 'a new session');
    t.ok(first.session, 'a ticket came');
    for (let i = 0; i < 2; i++) {
      const again = await get({ port, session: first.session });
      t.ok(again.reused, `connection ${i + 2} resumed`);
      t.equal(field(again.headers['x-tls'], 0), 'r', '$ssl_session_reused');
    }
  });

t.test('ssl_session_cache none: nothing is resumed', async (t) => {
  const first = await get({ port: none });
  const again = await get({ port: none, ...(first.session ? { session: first.session } : {}) });
  t.notOk(again.reused);
  t.equal(field(again.headers['x-tls'], 0), '.');
});

t.test('a client that sends no ClientHello times out as a handshake, in its zone', async (t) => {
  const closed = await new Promise<boolean>((resolve) => {
    const s = connect({ host: '127.0.0.1', port: silent });
    const timer = setTimeout(() => (s.destroy(), resolve(false)), 5000);
    s.on('error', () => {});
    s.on('close', () => (clearTimeout(timer), resolve(true)));
  });
  t.ok(closed, 'the server closed the connection');
  t.ok(
    await eventually(async () => (await getJson(`http://127.0.0.1:${admin}/status/http/server_zones/silent`)).body?.ssl?.timedout === 1),
    'ssl.timedout counts it',
  );
  const ok = await get({ port: silent });
  t.equal(ok.status, 200, 'a client that says hello is served');
});
