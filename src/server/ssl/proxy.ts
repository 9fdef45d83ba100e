// TLS to the peers of http's `proxy_pass https://` and stream's `proxy_ssl on`: nginx's
// `proxy_ssl_*` settings turned into the options of node's tls.connect, made once per
// location or stream server (the CA file read once, its secure context shared by every
// connection).
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { ConnectionOptions, PeerCertificate } from 'node:tls';
import type { ProxySsl } from '../config/model.js';
import { nodeTls } from './modules.js';
import { keyWithPassphrase, passwordLines } from './context.js';

/** The certificate zonal presents when a peer asks (proxy_ssl_certificate, its key and
 * proxy_ssl_password_file), as absolute paths. */
export interface ProxyClientCertificate {
  readonly sslCertificate?: string;
  readonly sslCertificateKey?: string;
  readonly sslPasswordFile?: string;
}

/** What a location's connections to a peer share: pools are kept apart by `key`. */
export interface TlsProfile {
  readonly key: string;
  readonly options: ConnectionOptions;
  readonly reuse: boolean;
}

export function tlsProfile(ssl: ProxySsl, client?: ProxyClientCertificate): TlsProfile {
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
 * that opens it. */
function clientCertificate(certFile: string, keyFile: string, passwordFile: string | undefined): { cert: string; key: string; passphrase?: string } {
  const passwords = passwordFile === undefined ? undefined : { file: passwordFile, lines: passwordLines(readFileSync(passwordFile, 'utf8')) };
  return { cert: readFileSync(certFile, 'utf8'), ...keyWithPassphrase(keyFile, passwords) };
}
