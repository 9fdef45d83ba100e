// proxy_pass https:// end to end: bin/zonal in front of TLS backends this test runs on
// loopback, with certificates made by openssl for this run: one backend's certificate is
// signed by a CA the configuration trusts, the other's is self-signed.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:https';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { checkFile, freePorts, getJson, Zonal } from './zonal.js';

/** A CA, a certificate it signs for backend.test and 127.0.0.1, and a self-signed one. */
function certificates(): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-tls-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  try {
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=zonal test CA');
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'good.key', '-out', 'good.csr', '-subj', '/CN=backend.test');
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:backend.test,IP:127.0.0.1\n');
    ssl('x509', '-req', '-in', 'good.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'good.pem', '-days', '1', '-extfile', 'san.ext');
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'self.key', '-out', 'self.pem', '-days', '1', '-subj', '/CN=backend.test', '-addext', 'subjectAltName=DNS:backend.test');
    const read = (f: string) => readFileSync(join(dir, f), 'utf8');
    return { ca: read('ca.pem'), goodCert: read('good.pem'), goodKey: read('good.key'), selfCert: read('self.pem'), selfKey: read('self.key') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A TLS backend: answers what it saw of each request's connection. */
class TlsBackend {
  requests = 0;
  handshakes = 0;
  resumed = 0;
  server: Server | undefined;
  constructor(
    readonly port: number,
    private readonly cert: string,
    private readonly key: string,
  ) {}

  start(): Promise<void> {
    this.server = createServer({ cert: this.cert, key: this.key }, (req, res) => {
      this.requests++;
      const socket = req.socket as TLSSocket;
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ path: req.url, servername: socket.servername || null, host: req.headers.host }));
    });
    this.server.on('secureConnection', (socket: TLSSocket) => {
      this.handshakes++;
      if (socket.isSessionReused()) this.resumed++;
    });
    return new Promise((resolve) => this.server!.listen(this.port, '127.0.0.1', () => resolve()));
  }

  stop(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }
}

const certs = certificates();
const [http, admin, goodPort, selfPort] = await freePorts(4);
const good = new TlsBackend(goodPort, certs.goodCert, certs.goodKey);
const self = new TlsBackend(selfPort, certs.selfCert, certs.selfKey);
await good.start();
await self.start();
t.teardown(() => Promise.all([good.stop(), self.stop()]));

const config = `
worker_processes 2;
http {
    upstream good {
        zone good 64k;
        server 127.0.0.1:${goodPort};
    }
    upstream once {
        zone once 64k;
        server 127.0.0.1:${goodPort};
        keepalive off;
    }
    upstream self {
        zone self 64k;
        server 127.0.0.1:${selfPort} max_fails=0;
    }
    server {
        listen 127.0.0.1:${http};
        proxy_ssl_trusted_certificate ca.pem;

        location /verified/ {
            proxy_pass https://good/;
            proxy_ssl_verify on;
            proxy_ssl_name backend.test;
            proxy_ssl_server_name on;
        }
        location /by-address/ {
            proxy_pass https://127.0.0.1:${goodPort}/;
            proxy_ssl_verify on;
            proxy_ssl_name 127.0.0.1;
        }
        location /untrusted/ {
            proxy_pass https://self/;
            proxy_ssl_verify on;
            proxy_ssl_name backend.test;
        }
        location /wrong-name/ {
            proxy_pass https://good/;
            proxy_ssl_verify on;
            proxy_ssl_name other.test;
        }
        location /unverified/ {
            proxy_pass https://self/;
        }
        location /resumed/ {
            proxy_pass https://once/;
        }
        location /fresh/ {
            proxy_pass https://once/;
            proxy_ssl_session_reuse off;
        }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / {
            api /;
        }
    }
}
`;
const zonal = await Zonal.start({ 'zonal.conf': config, 'ca.pem': certs.ca });
t.teardown(() => zonal.stop());

const get = (path: string) => getJson(`http://127.0.0.1:${http}${path}`);
const peer = (upstream: string, port: number) =>
  getJson(`http://127.0.0.1:${admin}/status/http/upstreams/${upstream}/peers/127.0.0.1:${port}`).then((r) => r.body);

t.test('a certificate that chains to the trusted CA and names proxy_ssl_name passes', async (t) => {
  const before = good.requests;
  for (let i = 0; i < 6; i++) {
    const r = await get(`/verified/item/${i}`);
    t.equal(r.status, 200, `request ${i} answered`);
    t.equal(r.body.path, `/item/${i}`, 'the URI part replaced the prefix');
    t.equal(r.body.servername, 'backend.test', 'SNI carried proxy_ssl_name');
    t.equal(r.body.host, 'good', 'Host is $proxy_host');
  }
  t.equal(good.requests - before, 6, 'the backend saw every request');
  const p = await peer('good', goodPort);
  t.equal(p.responses['200'], 6, 'the peer counted the responses');
  t.equal(p.health.fails, 0);

  const byAddress = await get('/by-address/x');
  t.equal(byAddress.status, 200, 'an IP address in the certificate is checked too');
  t.equal(byAddress.body.servername, null, 'no SNI unless proxy_ssl_server_name is on');
});

t.test('an untrusted certificate, or one naming another host, is a failed peer: 502', async (t) => {
  const before = self.requests;
  const untrusted = await get('/untrusted/a');
  t.equal(untrusted.status, 502, 'a self-signed certificate is refused');
  t.equal(self.requests, before, 'no request reached the untrusted backend');
  const p = await peer('self', selfPort);
  t.ok(p.health.fails >= 1, `the peer's failure counted (${p.health.fails})`);

  const goodBefore = good.requests;
  const wrongName = await get('/wrong-name/a');
  t.equal(wrongName.status, 502, 'a trusted certificate for another name is refused');
  t.equal(good.requests, goodBefore, 'and no request was sent');
});

t.test('without proxy_ssl_verify, as in nginx, any certificate is accepted', async (t) => {
  const r = await get('/unverified/b');
  t.equal(r.status, 200);
  t.equal(r.body.path, '/b');
});

t.test('sessions are resumed across connections unless proxy_ssl_session_reuse is off', async (t) => {
  // `keepalive off`: every request makes a connection and a handshake.
  const handshakes = good.handshakes;
  const resumed = good.resumed;
  // Two workers, each with its own last session: enough requests that each worker makes
  // more than one connection.
  for (let i = 0; i < 8; i++) t.equal((await get('/resumed/r')).status, 200);
  t.equal(good.handshakes - handshakes, 8, 'a handshake per request');
  t.ok(good.resumed - resumed >= 6, `sessions resumed (${good.resumed - resumed} of 8; each worker's first is new)`);

  const resumedBefore = good.resumed;
  for (let i = 0; i < 4; i++) t.equal((await get('/fresh/r')).status, 200);
  t.equal(good.resumed, resumedBefore, 'none resumed with proxy_ssl_session_reuse off');
});

t.test('-t refuses what cannot work, with file and line', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-tls-conf-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'not-a-cert.pem'), 'hello\n');
  const file = join(dir, 'zonal.conf');
  writeFileSync(
    file,
    `http {
    server {
        listen 127.0.0.1:${http};
        location /a/ {
            proxy_pass https://127.0.0.1:1/;
            proxy_ssl_verify on;
        }
        location /b/ {
            proxy_pass https://127.0.0.1:2/;
            proxy_ssl_trusted_certificate not-a-cert.pem;
        }
        location /c/ {
            proxy_pass https://127.0.0.1:3/;
            proxy_ssl_trusted_certificate missing.pem;
            proxy_ssl_server_name yes;
        }
    }
}
`,
  );
  const r = await checkFile(file);
  t.not(r.code, 0, '-t fails');
  t.match(r.err, `no "proxy_ssl_trusted_certificate" for "proxy_ssl_verify" in ${file}:6`);
  t.match(r.err, `no PEM certificate in it in ${file}:10`);
  t.match(r.err, new RegExp(`missing\\.pem.*in ${file.replace(/[.]/g, '\\.')}:14`));
  t.match(r.err, `invalid value "yes" in "proxy_ssl_server_name" directive, it must be "on" or "off" in ${file}:15`);
});
