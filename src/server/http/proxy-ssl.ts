// TLS to the peers of `proxy_pass https://`: nginx's `proxy_ssl_*` settings turned into
// the options of node's tls.connect, made once per location (the CA file read once, its
// secure context shared by every connection).
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { checkServerIdentity, createSecureContext, type ConnectionOptions, type PeerCertificate } from 'node:tls';
import type { ProxySsl } from '../config/model.js';

/** What a location's connections to a peer share: pools are kept apart by `key`. */
export interface TlsProfile {
  readonly key: string;
  readonly options: ConnectionOptions;
  readonly reuse: boolean;
}

export function tlsProfile(ssl: ProxySsl): TlsProfile {
  const options: ConnectionOptions = { rejectUnauthorized: ssl.verify };
  // SNI carries host names only (RFC 6066): an address as the name sends none.
  if (ssl.serverName && isIP(ssl.name) === 0) options.servername = ssl.name;
  if (ssl.verify) {
    options.secureContext = createSecureContext({ ca: readFileSync(ssl.trusted!, 'utf8') });
    // The certificate must name proxy_ssl_name, whatever address the peer has.
    options.checkServerIdentity = (_host: string, cert: PeerCertificate) => checkServerIdentity(ssl.name, cert);
  }
  return { key: JSON.stringify(ssl), options, reuse: ssl.sessionReuse };
}
