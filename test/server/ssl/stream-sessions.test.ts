// ssl_session_cache in the stream module (ngx_stream_ssl_module), as nginx-tests'
// stream_ssl.t uses it: with ssl_session_tickets off, a TLS 1.2 session of `builtin`,
// `builtin:size` or `shared` is resumed by its id, and a TLS 1.3 one by its (stateful)
// ticket, read from the ClientHello; one of `off` never; with tickets on (the default), a
// TLS 1.3 client resumes by ticket. $ssl_ciphers in the access log; a client that sends
// no ClientHello times out as a handshake does. Real bin/zonal in front of a plain echo
// backend, node:tls clients.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect as connectPlain, createServer } from 'node:net';
import { connect, type ConnectionOptions } from 'node:tls';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { certificates } from './certs.js';

const certs = certificates();
const [builtin, sized, shared, off, tickets, silent, admin, echoPort] = await freePorts(8);
const echo = createServer((s) => s.pipe(s));
await new Promise<void>((r) => echo.listen(echoPort, '127.0.0.1', r));
t.teardown(() => echo.close());

const server = (port: number, lines: string) => `
    server {
        listen 127.0.0.1:${port} ssl;
        proxy_pass 127.0.0.1:${echoPort};
        ${lines}
    }`;
const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
stream {
    log_format tls '$ssl_protocol|$ssl_ciphers';
    ssl_certificate server.crt;
    ssl_certificate_key server.key;
    ${server(builtin, 'ssl_session_cache builtin; ssl_session_tickets off;')}
    ${server(sized, 'ssl_session_cache builtin:1000; ssl_session_tickets off;')}
    ${server(shared, 'ssl_session_cache shared:STREAM:1m; ssl_session_tickets off;')}
    ${server(off, 'ssl_session_cache off; ssl_session_tickets off;')}
    ${server(tickets, 'access_log tls.log tls;')}
    ${server(silent, 'status_zone silent; ssl_handshake_timeout 300ms;')}
}
http {
    server {
        listen 127.0.0.1:${admin} admin;
        location /status/ { api /status/; }
    }
}
`,
  ...certs,
});
t.teardown(() => z.stop());

/** One line through the proxy on a new TLS connection: whether the handshake resumed,
 * and the session the server gave (after the echo: a TLS 1.3 ticket comes after the
 * handshake). */
function session(port: number, options: ConnectionOptions = {}): Promise<{ reused: boolean; echoed: boolean; session?: Buffer }> {
  return new Promise((resolve, reject) => {
    let got: Buffer | undefined;
    let echoed = '';
    // Read at the handshake: a closed socket has no handle to tell it.
    let reused = false;
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...options }, () => {
      reused = s.isSessionReused();
      s.write('ping\n');
    });
    s.on('session', (b: Buffer) => (got = b));
    const timer = setTimeout(() => s.destroy(new Error('no echo within 5 s')), 5000);
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      echoed += d;
      if (echoed === 'ping\n') s.end();
    });
    s.on('error', (e) => (clearTimeout(timer), reject(e)));
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ reused, echoed: echoed === 'ping\n', ...(got ? { session: got } : {}) });
    });
  });
}

for (const [name, port] of [
  ['builtin', builtin],
  ['builtin:1000', sized],
  ['shared', shared],
] as const)
  t.test(`${name}: a TLS 1.2 session is resumed by its id, a TLS 1.3 one by its ticket`, async (t) => {
    for (const maxVersion of ['TLSv1.2', 'TLSv1.3'] as const) {
      const first = await session(port, { maxVersion });
      t.ok(first.echoed, 'proxied');
      t.notOk(first.reused);
      t.ok(first.session);
      const again = await session(port, { maxVersion, session: first.session });
      t.ok(again.echoed);
      t.ok(again.reused, `${maxVersion} resumed`);
    }
  });

t.test('off: a TLS 1.2 session is not resumed', async (t) => {
  const first = await session(off, { maxVersion: 'TLSv1.2' });
  const again = await session(off, { maxVersion: 'TLSv1.2', ...(first.session ? { session: first.session } : {}) });
  t.ok(again.echoed);
  t.notOk(again.reused);
});

t.test('tickets (the default): a TLS 1.3 session resumes by its ticket', async (t) => {
  const first = await session(tickets);
  t.ok(first.session, 'a ticket came');
  const again = await session(tickets, { session: first.session });
  t.ok(again.reused);
});

t.test('$ssl_ciphers: the suites the client offered', async (t) => {
  await session(tickets, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256:AES256-SHA' });
  const log = join(z.dir, 'tls.log');
  t.ok(await eventually(async () => existsSync(log) && readFileSync(log, 'utf8').includes('TLSv1.2|ECDHE-RSA-AES128-GCM-SHA256:AES256-SHA:TLS_EMPTY_RENEGOTIATION_INFO_SCSV\n')), 'logged');
});

t.test('a client that sends no ClientHello times out as a handshake, in its zone', async (t) => {
  const closed = await new Promise<boolean>((resolve) => {
    const s = connectPlain({ host: '127.0.0.1', port: silent });
    const timer = setTimeout(() => (s.destroy(), resolve(false)), 5000);
    s.on('error', () => {});
    s.on('close', () => (clearTimeout(timer), resolve(true)));
  });
  t.ok(closed, 'the server closed the connection');
  const zone = async () => (await getJson(`http://127.0.0.1:${admin}/status/stream/server_zones/silent`)).body;
  t.ok(await eventually(async () => (await zone())?.ssl?.timedout === 1), 'ssl.timedout counts it');
  t.equal((await zone()).connections.discarded, 1, 'a session discarded');
  t.ok((await session(silent)).echoed, 'a client that says hello is proxied');
});
