// OCSP stapling (ngx_http_ssl_module): with `ssl_stapling on` and `ssl_stapling_file`, the
// file's DER response (one `openssl ocsp` made, as a responder would answer) is stapled to
// the handshake of a client that asks for it, for the certificate of the server its SNI
// names; a new file is read at a reload. Without a file zonal queries no responder: one
// [warn] at the start says so and the server runs. Real bin/zonal; node:tls and
// `openssl s_client -status` as the clients.
import t from 'tap';
import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type ConnectionOptions } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkConfig, freePorts, Zonal } from '../zonal.js';
import { certificates } from './certs.js';

const certs = certificates();
const dir = mkdtempSync(join(tmpdir(), 'zonal-ocsp-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
for (const [name, text] of Object.entries(certs)) writeFileSync(join(dir, name), text);

/** The CA's OCSP response for server.crt, `V`alid or `R`evoked, as `openssl ocsp` answers
 * a request for it from an index file (the CA signs its own responses). */
function response(status: 'V' | 'R'): Buffer {
  const serial = new X509Certificate(certs['server.crt']).serialNumber;
  const expires = '491231235959Z';
  writeFileSync(join(dir, 'index.txt'), `${status}\t${expires}\t${status === 'R' ? '240101000000Z' : ''}\t${serial}\tunknown\t/CN=localhost\n`);
  const ocsp = (...args: string[]) => execFileSync('openssl', ['ocsp', ...args], { cwd: dir, stdio: 'ignore' });
  ocsp('-issuer', 'ca.crt', '-cert', 'server.crt', '-no_nonce', '-reqout', 'request.der');
  ocsp('-index', 'index.txt', '-rsigner', 'ca.crt', '-rkey', 'ca.key', '-CA', 'ca.crt', '-reqin', 'request.der', '-respout', 'response.der', '-ndays', '1');
  return readFileSync(join(dir, 'response.der'));
}

const good = response('V');
const staple = join(dir, 'staple.der');
writeFileSync(staple, good);
const [port] = await freePorts(1);
const z = await Zonal.start({
  'server.crt': certs['server.crt'],
  'server.key': certs['server.key'],
  'rogue.crt': certs['rogue.crt'],
  'rogue.key': certs['rogue.key'],
  'zonal.conf': `
http {
    ssl_stapling on;
    ssl_stapling_verify on;
    server {
        listen 127.0.0.1:${port} ssl;
        server_name stapled.test;
        ssl_certificate server.crt;
        ssl_certificate_key server.key;
        ssl_stapling_file ${staple};
        location / { return 200 "stapled\\n"; }
    }
    server {
        listen 127.0.0.1:${port} ssl;
        server_name other.test;
        ssl_certificate rogue.crt;
        ssl_certificate_key rogue.key;
        location / { return 200 "other\\n"; }
    }
}
`,
});
t.teardown(() => z.stop());

/** The OCSP response a client that asks for one gets in the handshake with `servername`. */
function stapled(servername: string, requestOCSP = true): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    let got: Buffer | undefined;
    // node reads requestOCSP in tls.connect too, which its types leave out.
    const options: ConnectionOptions & { requestOCSP: boolean } = { host: '127.0.0.1', port, servername, rejectUnauthorized: false, requestOCSP };
    const socket = connect(options, () => {
      socket.end();
      resolve(got);
    });
    // node tells a client that asked of none with null.
    socket.on('OCSPResponse', (r: Buffer | null) => (got = r ?? undefined));
    socket.on('error', reject);
  });
}

/** What `openssl s_client -status` says of the stapled response. */
const sClient = (servername: string) =>
  spawnSync('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', servername, '-status', '-CAfile', join(dir, 'ca.crt')], { input: '', encoding: 'utf8', timeout: 10_000 }).stdout;

t.test('without a file: one [warn] at the start, naming ssl_stapling_file, and the server runs', async (t) => {
  const warned = z.log.split('\n').filter((l) => l.includes('"ssl_stapling" ignored'));
  t.equal(warned.length, 1);
  t.match(warned[0], /\[warn\] "ssl_stapling" ignored, zonal does not query OCSP responders: give the response with "ssl_stapling_file" in .*zonal\.conf:3$/);
  t.equal(await stapled('other.test'), undefined, 'nothing stapled for its certificate');
});

t.test("the file's response, stapled for a client that asks for it", async (t) => {
  const got = await stapled('stapled.test');
  t.ok(got && got.equals(good), 'the bytes of the file');
  t.equal(await stapled('stapled.test', false), undefined, 'none for a client that does not ask');
  const said = sClient('stapled.test');
  t.match(said, /OCSP Response Status: successful/);
  t.match(said, /Cert Status: good/);
});

t.test('a reload reads the file again', async (t) => {
  const revoked = response('R');
  writeFileSync(staple, revoked);
  t.ok(await z.reload());
  // The old workers may finish handshakes meanwhile: the new ones answer once they listen.
  let got: Buffer | undefined;
  for (let i = 0; i < 100 && !got?.equals(revoked); i++) {
    got = await stapled('stapled.test');
    if (!got?.equals(revoked)) await new Promise((r) => setTimeout(r, 50));
  }
  t.ok(got?.equals(revoked), 'the new response');
  t.match(sClient('stapled.test'), /Cert Status: revoked/);
});

t.test('-t: the files and values nginx checks', async (t) => {
  const conf = (lines: string) => `http { server { listen 127.0.0.1:1 ssl; ssl_certificate ${dir}/server.crt; ssl_certificate_key ${dir}/server.key; ${lines} } }\n`;
  writeFileSync(join(dir, 'junk.der'), 'not DER at all');
  const junk = await checkConfig(conf(`ssl_stapling on; ssl_stapling_file ${dir}/junk.der;`));
  t.equal(junk.code, 1);
  t.match(junk.err, `d2i_OCSP_RESPONSE_bio("${dir}/junk.der") failed`);
  const missing = await checkConfig(conf(`ssl_stapling_file ${dir}/none.der;`));
  t.match(missing.err, `cannot read "${dir}/none.der" of the "ssl_stapling_file" directive (ENOENT)`);
  t.match((await checkConfig(conf('ssl_stapling maybe;'))).err, 'invalid value "maybe" in "ssl_stapling" directive, it must be "on" or "off"');
  t.match((await checkConfig(conf('ssl_stapling_responder ftp://ocsp.test/;'))).err, 'invalid URL prefix in "ftp://ocsp.test/"');
  const fine = await checkConfig(conf('ssl_stapling on; ssl_stapling_verify on; ssl_stapling_responder http://ocsp.test/;'));
  t.equal(fine.code, 0);
  t.match(fine.err, /\[warn\] "ssl_stapling" ignored/);
  t.notMatch((await checkConfig(conf(`ssl_stapling on; ssl_stapling_file ${staple};`))).err, /\[warn\]/, 'with a file: no warning');
  const stream = await checkConfig(`stream { server { listen 127.0.0.1:1; ssl_stapling on; proxy_pass 127.0.0.1:2; } }\n`);
  t.match(stream.err, /"ssl_stapling" directive is not allowed here/, "nginx's stream module has no stapling");
});
