// Certificates for the TLS tests, made with openssl for this run: a CA, a client and a
// server certificate it signs, a self-signed client, and a server key encrypted with a
// passphrase. Written into a folder the test names; all PEM.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Certs {
  readonly [name: string]: string;
}

/** `ca.crt`/`ca.key`, `server.crt`/`server.key` (CN localhost, signed by the CA), `client.crt`/
 * `client.key` (CN client.test, O "Zonal, Tests", signed by the CA), `rogue.crt`/
 * `rogue.key` (self-signed), `locked.key` (the server key under the passphrase "secret"). */
export function certificates(): Certs {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-ssl-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  try {
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=Zonal Test CA');
    const signed = (name: string, subject: string, ext?: string) => {
      ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
      if (ext) writeFileSync(join(dir, `${name}.ext`), ext);
      ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', ...(ext ? ['-extfile', `${name}.ext`] : []));
    };
    signed('server', '/CN=localhost', 'subjectAltName=DNS:localhost,DNS:backend.test,IP:127.0.0.1\n');
    signed('client', '/O=Zonal, Tests/CN=client.test');
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'rogue.key', '-out', 'rogue.crt', '-days', '1', '-subj', '/CN=rogue.test');
    ssl('pkey', '-in', 'server.key', '-aes128', '-passout', 'pass:secret', '-out', 'locked.key');
    const out: Record<string, string> = {};
    for (const f of ['ca.crt', 'ca.key', 'server.crt', 'server.key', 'client.crt', 'client.key', 'rogue.crt', 'rogue.key', 'locked.key']) out[f] = readFileSync(join(dir, f), 'utf8');
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
