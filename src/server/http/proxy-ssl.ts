// TLS to the peers of `proxy_pass https://`: nginx's `proxy_ssl_*` settings turned into
// the options of node's tls.connect, made once per location (the CA file read once, its
// secure context shared by every connection).
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { ConnectionOptions, PeerCertificate } from 'node:tls';
import { createPrivateKey } from 'node:crypto';
import type { ProxySsl } from '../config/model.js';
import type { ProxyOptions } from '../proxy/config.js';
import { nodeTls } from '../ssl/modules.js';

/** What a location's connections to a peer share: pools are kept apart by `key`. */
export interface TlsProfile {
  readonly key: string;
  readonly options: ConnectionOptions;
  readonly reuse: boolean;
}

export function tlsProfile(ssl: ProxySsl, client?: Pick<ProxyOptions, 'sslCertificate' | 'sslCertificateKey' | 'sslPasswordFile'>): TlsProfile {
  const options: ConnectionOptions = { rejectUnauthorized: ssl.verify };
  // SNI carries host names only (RFC 6066): an address as the name sends none.
  if (ssl.serverName && isIP(ssl.name) === 0) options.servername = ssl.name;
  // proxy_ssl_certificate: the certificate zonal presents when the peer asks for one.
  const own = client?.sslCertificate !== undefined && client.sslCertificateKey !== undefined ? clientCertificate(client.sslCertificate, client.sslCertificateKey, client.sslPasswordFile) : {};
  if (ssl.verify) {
    const { checkServerIdentity, createSecureContext } = nodeTls();
    options.secureContext = createSecureContext({ ca: readFileSync(ssl.trusted!, 'utf8'), ...own });
    // The certificate must name proxy_ssl_name, whatever address the peer has.
    options.checkServerIdentity = (_host: string, cert: PeerCertificate) => checkServerIdentity(ssl.name, cert);
  } else Object.assign(options, own);
  const key = JSON.stringify([ssl, client?.sslCertificate, client?.sslCertificateKey]);
  return { key, options, reuse: ssl.sessionReuse };
}

/** A certificate and its key, decrypted with the first passphrase of the password file
 * that opens it (nginx's proxy_ssl_password_file: one a line, tried in order). */
function clientCertificate(certFile: string, keyFile: string, passwordFile: string | undefined): { cert: string; key: string; passphrase?: string } {
  const cert = readFileSync(certFile, 'utf8');
  const key = readFileSync(keyFile, 'utf8');
  if (passwordFile === undefined) return { cert, key };
  const passphrases = readFileSync(passwordFile, 'utf8').split(/\r?\n/).filter((l) => l !== '');
  for (const passphrase of passphrases) {
    try {
      createPrivateKey({ key, passphrase });
      return { cert, key, passphrase };
    } catch {
      // the next one
    }
  }
  throw new Error(`cannot load certificate key "${keyFile}": no passphrase of "${passwordFile}" opens it`);
}
