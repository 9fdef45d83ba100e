// Checks that need a whole server, or every server of the http block: what one `listen`
// cannot know alone.
import type { ListenConfig } from '../config/model.js';
import type { Checker, HttpLevel, ServerLevel } from '../config/levels.js';
import { listenAddress } from '../config/values.js';

export function checkServer(server: ServerLevel, c: Checker): void {
  const { listens } = server;
  // nginx would listen on *:80; zonal wants every server to say where it listens.
  if (!listens.length) c.error(server.directive.origin, 'no "listen" directive in server');
  if (listens.some((l) => l.admin)) {
    for (const l of listens) {
      if (!l.admin) c.error(l.origin, `all listens of an admin server must be "admin": "${listenAddress(l)}" is not`);
      if (l.ssl) c.error(l.origin, `the "ssl" parameter is not allowed on an admin listen`);
    }
    return;
  }
}

/** The http block's certificate, key and handshake timeout are its servers' unless they
 * say their own (nginx's merge); then a server with an `ssl` listen needs both. `ssl on`
 * (the server's or the block's) makes each of the server's listens `ssl`. */
export function checkServerCertificates(http: HttpLevel, c: Checker): void {
  for (const server of http.servers) {
    if (server.listens.some((l) => l.admin)) continue;
    server.sslCertificate ??= http.sslCertificate;
    server.sslCertificateKey ??= http.sslCertificateKey;
    server.sslHandshakeTimeout ??= http.sslHandshakeTimeout;
    const sslOn = server.sslOn ?? http.sslOn ?? false;
    if (sslOn) server.listens.splice(0, server.listens.length, ...server.listens.map((l) => ({ ...l, ssl: true })));
    const ssl = server.listens.find((l) => l.ssl);
    if (!ssl) continue;
    if (server.sslCertificate === undefined) c.error(ssl.origin, `no "ssl_certificate" is defined for the ${sslOn ? '"ssl"' : '"listen ... ssl"'} directive`);
    else if (server.sslCertificateKey === undefined) c.error(ssl.origin, `no "ssl_certificate_key" is defined for certificate "${server.sslCertificate}"`);
  }
}

const wildcard = (host: string) => host === '0.0.0.0' || host === '::';
const family = (host: string) => (host.includes(':') ? 6 : 4);

/** Two listens bind the same socket, or one's wildcard takes the other's port. */
const overlap = (a: ListenConfig, b: ListenConfig) =>
  a.port === b.port && family(a.host) === family(b.host) && (a.host === b.host || wildcard(a.host) || wildcard(b.host));

/** One address is one socket: its admin-ness and its default server are the address's,
 * not a server's, so all servers listening on it must agree. Its `ssl` is too, and as in
 * nginx one server's `ssl` makes the address TLS for all: its default server then needs
 * a certificate, which the others' handshakes fall back to. */
export function checkServerAddresses(servers: readonly ServerLevel[], c: Checker): void {
  const seen: { listen: ListenConfig; server: ServerLevel }[] = [];
  const defaults = new Map<string, ListenConfig>();
  const defaultServers = new Map<string, ServerLevel>();
  const tls = new Map<string, ListenConfig>();
  for (const server of servers) {
    for (const l of server.listens) {
      const address = listenAddress(l);
      const same = seen.filter((s) => listenAddress(s.listen) === address);
      if (same.some((s) => s.server === server)) {
        c.error(l.origin, `a duplicate listen ${address}`);
        continue;
      }
      if (l.defaultServer) {
        if (defaults.has(address)) c.error(l.origin, `a duplicate default server for ${address}`);
        else {
          defaults.set(address, l);
          defaultServers.set(address, server);
        }
      }
      if (!defaultServers.has(address)) defaultServers.set(address, server);
      if (l.ssl && !tls.has(address)) tls.set(address, l);
      // The admin listener is another process's socket: even a wildcard cannot share its port.
      const other = seen.find((s) => s.server !== server && s.listen.admin !== l.admin && overlap(s.listen, l));
      if (other) c.error(l.origin, `conflicting "admin" parameter for ${address}: ${listenAddress(other.listen)} is ${other.listen.admin ? '' : 'not '}admin`);
      seen.push({ listen: l, server });
    }
  }
  for (const [address, l] of tls) {
    const server = defaultServers.get(address)!;
    // A server with an `ssl` listen of its own has been checked already.
    if (server.sslCertificate === undefined && !server.listens.some((x) => x.ssl && listenAddress(x) === address))
      c.error(l.origin, 'no "ssl_certificate" is defined for the "listen ... ssl" directive');
  }
}
