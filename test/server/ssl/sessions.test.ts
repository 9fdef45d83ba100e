// TLS sessions and handshakes as nginx's ssl module sets them: ssl_session_cache shared
// across the workers (a client resumes whichever worker takes its next connection),
// `off`, ssl_session_tickets with ssl_session_ticket_key, ssl_protocols, ssl_ciphers and
// ssl_password_file (an encrypted key, the passphrase on the second line). Two workers,
// node:tls clients, the status zone's ssl counters.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { freePorts, getJson, Zonal } from '../zonal.js';
import { certificates } from './certs.js';
import { get } from './client.js';

const certs = certificates();
const [shared, off, tickets, limited, admin] = await freePorts(5);
const config = `
worker_processes 2;
http {
    add_header X-TLS "$ssl_session_reused|$ssl_protocol|$ssl_cipher|$pid";
    ssl_certificate server.crt;
    ssl_certificate_key server.key;
    server {
        listen 127.0.0.1:${shared} ssl;
        status_zone shared;
        ssl_session_cache shared:SSL:1m;
        ssl_session_tickets off;
        ssl_session_timeout 1h;
        location / { return 200 ok; }
    }
    server {
        listen 127.0.0.1:${off} ssl;
        ssl_session_cache off;
        ssl_session_tickets off;
        location / { return 200 ok; }
    }
    server {
        listen 127.0.0.1:${tickets} ssl;
        ssl_session_ticket_key ticket.key;
        location / { return 200 ok; }
    }
    server {
        listen 127.0.0.1:${limited} ssl;
        ssl_certificate_key locked.key;
        ssl_password_file passwords;
        ssl_protocols TLSv1.2;
        ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256;
        location / { return 200 ok; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location /status/ { api /status/; }
    }
}
`;
const z = await Zonal.start({ 'zonal.conf': config, ...certs, 'ticket.key': randomBytes(24).toString('hex'), passwords: 'wrong\nsecret\n' });
t.teardown(() => z.stop());

const field = (h: string | undefined, i: number) => (h ?? '').split('|')[i];

t.test('shared: a TLS 1.2 session resumes in both workers, counted in ssl.reuses', async (t) => {
  const first = await get({ port: shared, maxVersion: 'TLSv1.2' });
  t.equal(first.status, 200);
  t.equal(field(first.headers['x-tls'], 0), '.', 'a new session');
  t.ok(first.session, 'the server gave a session id');
  // Until both workers have resumed it (bounded: 20 connections all in one worker is
  // a chance in half a million).
  const pids = new Set([field(first.headers['x-tls'], 3)]);
  let resumed = 0;
  for (let i = 0; i < 20 && (pids.size < 2 || resumed < 4); i++) {
    const again = await get({ port: shared, maxVersion: 'TLSv1.2', session: first.session });
    t.ok(again.reused, `connection ${i + 2} resumed`);
    t.equal(field(again.headers['x-tls'], 0), 'r', '$ssl_session_reused');
    pids.add(field(again.headers['x-tls'], 3));
    resumed++;
  }
  t.equal(pids.size, 2, 'both workers resumed the session one of them made');
  const { body } = await getJson(`http://127.0.0.1:${admin}/status/http/server_zones/shared`);
  t.equal(body.ssl.handshaked, resumed + 1);
  t.equal(body.ssl.reuses, resumed);
  const slabs = await getJson(`http://127.0.0.1:${admin}/status/slabs/SSL`);
  t.equal(slabs.status, 200, 'the cache is a zone of its own');
  t.ok(slabs.body.pages.used > 0, 'the cache takes its pages');
});

t.test('off: a session is never resumed by id', async (t) => {
  const first = await get({ port: off, maxVersion: 'TLSv1.2' });
  for (let i = 0; i < 3; i++) {
    const again = await get({ port: off, maxVersion: 'TLSv1.2', ...(first.session ? { session: first.session } : {}) });
    t.notOk(again.reused);
  }
});

t.test('tickets with ssl_session_ticket_key: TLS 1.3 resumes', async (t) => {
  const first = await get({ port: tickets });
  t.equal(first.protocol, 'TLSv1.3');
  t.ok(first.session, 'a ticket came');
  const again = await get({ port: tickets, session: first.session });
  t.ok(again.reused);
  t.equal(field(again.headers['x-tls'], 0), 'r');
});

t.test('ssl_protocols, ssl_ciphers and an encrypted key opened by ssl_password_file', async (t) => {
  const a = await get({ port: limited });
  t.equal(a.status, 200, 'the key opened with the second passphrase');
  t.equal(field(a.headers['x-tls'], 1), 'TLSv1.2', 'TLS 1.3 is not offered');
  t.equal(field(a.headers['x-tls'], 2), 'ECDHE-RSA-AES128-GCM-SHA256');
  await t.rejects(get({ port: limited, minVersion: 'TLSv1.3' }), 'a TLS 1.3 client finds no protocol');
  await t.rejects(get({ port: limited, maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES256-GCM-SHA384' }), 'nor a client without the cipher');
});
