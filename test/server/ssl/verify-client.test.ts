// ssl_verify_client in http, as nginx documents it (ngx_http_ssl_module): `on` answers a
// client without a valid certificate 400 "No required SSL certificate was sent" or "The
// SSL certificate error"; `optional` asks for one and refuses only a bad one;
// `optional_no_ca` lets a certificate no CA vouches for through, as FAILED; the client
// certificate variables; the server the SNI names decides what is asked; another Host than
// the negotiated name is 421 when that server verifies. Real bin/zonal, node:tls clients.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { checkConfig, freePorts, getJson, Zonal } from '../zonal.js';
import { certificates } from './certs.js';
import { get } from './client.js';

const certs = certificates();
const [port, plain, admin] = await freePorts(3);
const vars = 'x$ssl_client_verify|$ssl_client_s_dn|$ssl_client_i_dn|$ssl_client_serial|$ssl_client_fingerprint|$ssl_protocol|$ssl_server_name';
const config = `
worker_processes 2;
http {
    add_header X-Verify "${vars}";
    add_header X-Cert $ssl_client_escaped_cert;
    add_header X-Legacy "$ssl_client_s_dn_legacy|$ssl_client_i_dn_legacy";
    ssl_client_certificate ca.crt;
    server {
        listen 127.0.0.1:${port} ssl;
        server_name on.test;
        status_zone on;
        ssl_certificate server.crt;
        ssl_certificate_key server.key;
        ssl_verify_client on;
        location / { return 200 "on\\n"; }
    }
    server {
        listen 127.0.0.1:${port} ssl;
        server_name optional.test;
        ssl_certificate server.crt;
        ssl_certificate_key server.key;
        ssl_verify_client optional;
        location / { return 200 "optional\\n"; }
    }
    server {
        listen 127.0.0.1:${port} ssl;
        server_name no-ca.test;
        ssl_certificate server.crt;
        ssl_certificate_key server.key;
        ssl_verify_client optional_no_ca;
        location / { return 200 "no-ca\\n"; }
    }
    server {
        listen 127.0.0.1:${port} ssl;
        server_name trusted.test;
        ssl_certificate server.crt;
        ssl_certificate_key server.key;
        ssl_verify_client optional;
        ssl_trusted_certificate rogue.crt;
        location / { return 200 "trusted\\n"; }
    }
    server {
        listen 127.0.0.1:${port} ssl;
        server_name off.test;
        ssl_certificate server.crt;
        ssl_certificate_key server.key;
        location / { return 200 "off\\n"; }
    }
    server {
        listen 127.0.0.1:${plain};
        ssl_verify_client on;
        location / { return 200 "plain\\n"; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location /status/ { api /status/; }
    }
}
`;
const z = await Zonal.start({ 'zonal.conf': config, ...certs });
t.teardown(() => z.stop());

const client = { cert: certs['client.crt'], key: certs['client.key'] };
const rogue = { cert: certs['rogue.crt'], key: certs['rogue.key'] };
const fields = (header: string | undefined) => (header ?? '').slice(1).split('|');

t.test('on: no certificate and a bad one are 400 with nginx pages; a good one passes', async (t) => {
  const none = await get({ port, servername: 'on.test' });
  t.equal(none.status, 400);
  t.match(none.body, /<title>400 No required SSL certificate was sent<\/title>/);
  t.equal(none.headers.connection, 'close', 'the connection closes after it, as nginx');
  const bad = await get({ port, servername: 'on.test', ...rogue });
  t.equal(bad.status, 400);
  t.match(bad.body, /<title>400 The SSL certificate error<\/title>/);
  const good = await get({ port, servername: 'on.test', ...client });
  t.equal(good.status, 200);
  t.equal(good.body, 'on\n');
});

t.test('the client certificate variables, as nginx prints them', async (t) => {
  const a = await get({ port, servername: 'on.test', ...client });
  const x509 = new X509Certificate(certs['client.crt']);
  const [verify, sdn, idn, serial, fingerprint, protocol, servername] = fields(a.headers['x-verify']);
  t.equal(verify, 'SUCCESS');
  t.equal(sdn, 'CN=client.test,O=Zonal\\, Tests', 'RFC 2253: last RDN first, the comma escaped');
  t.equal(idn, 'CN=Zonal Test CA');
  t.equal(serial, x509.serialNumber);
  t.equal(fingerprint, x509.fingerprint.replace(/:/g, '').toLowerCase(), 'SHA1, lowercase hex');
  t.equal(protocol, a.protocol);
  t.equal(servername, 'on.test');
  t.equal(decodeURIComponent(a.headers['x-cert']), x509.toString(), '$ssl_client_escaped_cert is the PEM, escaped');
  t.equal(a.headers['x-legacy'], '/O=Zonal, Tests/CN=client.test|/CN=Zonal Test CA', 'the _legacy ones: OpenSSL\'s one-line form, first RDN first, unescaped');
});

/** The CA names the server's CertificateRequest gives, as openssl s_client prints them. */
function acceptableCAs(servername: string): string[] {
  const out = execFileSync('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', servername], { input: '', encoding: 'utf8', stdio: ['pipe', 'pipe', 'ignore'], timeout: 10_000 });
  const block = /Acceptable client certificate CA names\n([\s\S]*?)\n(?:Requested|Client Certificate Types|Server Temp Key|---)/.exec(out);
  return block ? block[1].split('\n').map((l) => l.trim()) : [];
}

t.test('ssl_trusted_certificate: its CAs verify, and are not named to the client; ssl_client_certificate\'s are', async (t) => {
  const trusted = await get({ port, servername: 'trusted.test', ...rogue });
  t.equal(trusted.status, 200);
  t.equal(fields(trusted.headers['x-verify'])[0], 'SUCCESS', 'a certificate of the trusted CA');
  const good = await get({ port, servername: 'trusted.test', ...client });
  t.equal(fields(good.headers['x-verify'])[0], 'SUCCESS', 'and one of the client CA');
  t.same(acceptableCAs('trusted.test'), ['CN = Zonal Test CA'], 'only the client CA is named');
  const none = await get({ port, servername: 'optional.test', ...rogue });
  t.equal(none.status, 400, 'a server without it does not trust that CA');
});

t.test('optional: none is NONE, a good one SUCCESS, a bad one refused', async (t) => {
  const none = await get({ port, servername: 'optional.test' });
  t.equal(none.status, 200);
  t.equal(fields(none.headers['x-verify'])[0], 'NONE');
  t.equal(fields(none.headers['x-verify'])[1], '', 'no subject without a certificate');
  const good = await get({ port, servername: 'optional.test', ...client });
  t.equal(fields(good.headers['x-verify'])[0], 'SUCCESS');
  const bad = await get({ port, servername: 'optional.test', ...rogue });
  t.equal(bad.status, 400);
});

t.test('optional_no_ca: a certificate no CA signed goes through, FAILED with the reason', async (t) => {
  const a = await get({ port, servername: 'no-ca.test', ...rogue });
  t.equal(a.status, 200);
  t.equal(a.body, 'no-ca\n');
  t.match(fields(a.headers['x-verify'])[0], /^FAILED:self[- ]signed certificate$/);
  t.equal(fields(a.headers['x-verify'])[1], 'CN=rogue.test');
});

t.test('a server that does not verify asks for no certificate', async (t) => {
  const a = await get({ port, servername: 'off.test', ...client });
  t.equal(a.status, 200);
  t.equal(fields(a.headers['x-verify'])[0], 'NONE', 'the certificate was not asked for, so not sent');
});

t.test('another Host than the name negotiated is 421 when the server of the Host verifies', async (t) => {
  const a = await get({ port, servername: 'off.test', host: 'optional.test' });
  t.equal(a.status, 421);
  t.match(a.body, /421 Misdirected Request/);
  const other = await get({ port, servername: 'optional.test', host: 'off.test' });
  t.equal(other.status, 200, 'a server that does not verify takes any name');
  const same = await get({ port, servername: 'optional.test', host: 'optional.test' });
  t.equal(same.status, 200);
});

t.test('a plain connection has no TLS variables and is not refused', async (t) => {
  const res = await fetch(`http://127.0.0.1:${plain}/`);
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-verify'), 'x||||||', 'every TLS variable empty');
});

t.test('the refused requests count as 400 responses of the zone, after a handshake', async (t) => {
  const { body } = await getJson(`http://127.0.0.1:${admin}/status/http/server_zones/on`);
  t.equal(body.ssl.handshaked, 4, 'the four handshakes of on.test completed');
  t.equal(body.responses['400'], 2, 'the two refusals are 400 responses');
  t.equal(body.responses['200'], 2);
});

t.test('-t refuses what nginx refuses', async (t) => {
  const base = (lines: string) => `http {\n  server {\n    listen 127.0.0.1:1 ssl;\n    ssl_certificate c;\n    ssl_certificate_key k;\n${lines}\n  }\n}\n`;
  const cases: Array<[string, RegExp]> = [
    ['    ssl_verify_client maybe;', /invalid value "maybe" in "ssl_verify_client" directive/],
    ['    ssl_verify_client on;', /no ssl_client_certificate for ssl_verify_client/],
    ['    ssl_verify_depth -1;', /invalid value "-1" in "ssl_verify_depth" directive/],
    ['    ssl_session_cache shared:SSL;', /invalid session cache "shared:SSL"/],
    ['    ssl_session_cache shared:SSL:1k;', /session cache "shared:SSL:1k" is too small/],
    ['    ssl_session_cache builtin:x;', /invalid session cache "builtin:x"/],
    ['    ssl_protocols TLSv1.2 TLSv9;', /invalid value "TLSv9" in "ssl_protocols" directive/],
    ['    ssl_ciphers NO-SUCH-CIPHER;', /SSL_CTX_set_cipher_list\("NO-SUCH-CIPHER"\) failed/],
    ['    ssl_conf_command Certificate x.pem;', /unsupported "ssl_conf_command" "Certificate": node's TLS can set only CipherString, /],
    ['    ssl_conf_command Options NoSuchOption;', /unsupported option "NoSuchOption" of "ssl_conf_command Options"/],
    ['    ssl_session_tickets maybe;', /invalid value "maybe" in "ssl_session_tickets" directive, it must be "on" or "off"/],
  ];
  for (const [line, message] of cases) {
    const r = await checkConfig(base(line).replace('ssl_certificate c;', 'ssl_certificate /dev/null;').replace('ssl_certificate_key k;', 'ssl_certificate_key /dev/null;'));
    t.not(r.code, 0, line);
    t.match(r.err, message, line);
  }
});
