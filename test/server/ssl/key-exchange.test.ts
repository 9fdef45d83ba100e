// The key exchange (ngx_http_ssl_module, ngx_stream_ssl_module): ssl_dhparam, the DH
// parameters the DHE ciphers need, which node's OpenSSL, as nginx's, offers none without,
// with nginx's errors for a file that is missing or holds no parameters; ssl_ecdh_curve,
// the groups ECDHE may use. Real bin/zonal, node:tls clients asking for one suite.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type EphemeralKeyInfo } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkConfig, freePorts, Zonal } from '../zonal.js';
import { certificates } from './certs.js';

const certs = certificates();
const dir = mkdtempSync(join(tmpdir(), 'zonal-dh-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
// -dsaparam: made in milliseconds, where safe primes take seconds.
const dhparam = (bits: number, name: string) => execFileSync('openssl', ['dhparam', '-dsaparam', '-out', join(dir, name), String(bits)], { stdio: 'ignore' });
dhparam(2048, 'dh.pem');
dhparam(512, 'small.pem');

const [withDh, without, stream, curve] = await freePorts(4);
const z = await Zonal.start({
  'server.crt': certs['server.crt'],
  'server.key': certs['server.key'],
  'dh.pem': readFileSync(join(dir, 'dh.pem'), 'utf8'),
  'zonal.conf': `
http {
    ssl_certificate server.crt;
    ssl_certificate_key server.key;
    server {
        listen 127.0.0.1:${withDh} ssl;
        ssl_dhparam dh.pem;
        location / { return 200 "dh\\n"; }
    }
    server {
        listen 127.0.0.1:${without} ssl;
        location / { return 200 "none\\n"; }
    }
    server {
        listen 127.0.0.1:${curve} ssl;
        ssl_ecdh_curve secp384r1;
        location / { return 200 "curve\\n"; }
    }
}
stream {
    server {
        listen 127.0.0.1:${stream} ssl;
        ssl_certificate server.crt;
        ssl_certificate_key server.key;
        ssl_dhparam dh.pem;
        return "stream\\n";
    }
}
`,
});
t.teardown(() => z.stop());

/** The key exchange of a TLS 1.2 handshake that offers `cipher` alone (and the groups
 * `curves`, when given). */
const exchange = (port: number, cipher: string, curves?: string) =>
  new Promise<EphemeralKeyInfo | object>((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, maxVersion: 'TLSv1.2', ciphers: cipher, ...(curves ? { ecdhCurve: curves } : {}) }, () => {
      const info = socket.getEphemeralKeyInfo();
      socket.destroy();
      resolve(info ?? {});
    });
    socket.on('error', reject);
  });

const dhe = (port: number) => exchange(port, 'DHE-RSA-AES128-GCM-SHA256');

t.test('with ssl_dhparam, a DHE suite is negotiated with its parameters', async (t) => {
  t.same(await dhe(withDh), { type: 'DH', size: 2048 });
  t.same(await dhe(stream), { type: 'DH', size: 2048 }, 'in a stream server too');
});

t.test('without it, none: the handshake fails, as with nginx', async (t) => {
  await t.rejects(dhe(without), /handshake failure/);
});

t.test('ssl_ecdh_curve: the groups ECDHE may use', async (t) => {
  t.match(await exchange(curve, 'ECDHE-RSA-AES128-GCM-SHA256'), { type: 'ECDH', name: 'secp384r1' });
  await t.rejects(exchange(curve, 'ECDHE-RSA-AES128-GCM-SHA256', 'X25519'), /handshake failure/, 'a client without it');
  t.match(await exchange(without, 'ECDHE-RSA-AES128-GCM-SHA256', 'X25519'), { type: 'ECDH', name: 'X25519' }, "node's auto, nginx's default, takes it");
  const bad = await checkConfig('http { ssl_ecdh_curve bogus; }\n');
  t.equal(bad.code, 1);
  t.match(bad.err, /\[emerg\] SSL_CTX_set1_curves_list\("bogus"\) failed \(.+\)/);
});

t.test("-t: nginx's errors for a missing file and one without parameters", async (t) => {
  const conf = (file: string) => `http { server { listen 127.0.0.1:1 ssl; ssl_certificate ${dir}/s.crt; ssl_certificate_key ${dir}/s.key; ssl_dhparam ${file}; } }\n`;
  writeFileSync(join(dir, 's.crt'), certs['server.crt']);
  writeFileSync(join(dir, 's.key'), certs['server.key']);
  writeFileSync(join(dir, 'junk.pem'), 'junk\n');
  const missing = await checkConfig(conf(`${dir}/none.pem`));
  t.equal(missing.code, 1);
  t.match(missing.err, `[emerg] BIO_new_file("${dir}/none.pem") failed (ENOENT)`);
  t.match((await checkConfig(conf(`${dir}/junk.pem`))).err, `[emerg] PEM_read_bio_DHparams("${dir}/junk.pem") failed (no start line: Expecting: DH PARAMETERS)`);
  t.match((await checkConfig(conf(`${dir}/small.pem`))).err, `PEM_read_bio_DHparams("${dir}/small.pem") failed (DH parameter is less than 1024 bits)`);
  t.equal((await checkConfig(conf(`${dir}/dh.pem`))).code, 0);
});
