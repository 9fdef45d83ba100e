// What a worker's TLS servers (http's and stream's) share: each server's secure context
// made once, node's server options for a listen's default server, the client certificate
// asked for by the server a client's SNI names, and the session caches.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { SecureContext, TlsOptions, TLSSocket } from 'node:tls';
import type { Status } from '../../metrics/status.js';
import { errorLogOf } from '../log/error-log.js';
import type { ServerTls } from './config.js';
import { serverContextOptions } from './context.js';
import { nodeTls } from './modules.js';
import { keepSessions, sharedSessions, type SharedSessions } from './sessions.js';

export class TlsServers {
  private readonly contexts = new Map<ServerTls, SecureContext>();
  private readonly shared = new Map<string, SharedSessions | undefined>();

  constructor(
    private readonly status: Status,
    /** The ticket keys every worker shares, so that a ticket resumes in any. */
    private readonly ticketKeys: Buffer | undefined,
  ) {}

  /** A server's secure context, made once (the SNI callback's answer). */
  context(tls: ServerTls): SecureContext {
    let c = this.contexts.get(tls);
    if (!c) this.contexts.set(tls, (c = nodeTls().createSecureContext(serverContextOptions(tls, this.ticketKeys))));
    return c;
  }

  /** node's options for a TLS server whose default server is `tls`: its context's, and
   * the client certificate asked for (verified by zonal after the handshake). */
  serverOptions(tls: ServerTls): TlsOptions {
    return { ...serverContextOptions(tls, this.ticketKeys), handshakeTimeout: tls.handshakeTimeout, requestCert: tls.verifyClient !== 'off', rejectUnauthorized: false };
  }

  /** ssl_stapling_file of the servers of a listen: each one's response stapled when a
   * client asks for one (status_request), told apart by the certificate the handshake
   * chose (node's OCSPRequest names no socket). Read now: at each worker's start. */
  staple(server: import('node:tls').Server, servers: ReadonlyArray<ServerTls | undefined>): void {
    const responses = new Map<string, Buffer>();
    for (const tls of servers)
      if (tls?.staplingFile !== undefined) responses.set(certificateKey(new X509Certificate(readFileSync(tls.certificate)).raw), readFileSync(tls.staplingFile));
    if (!responses.size) return;
    server.on('OCSPRequest', (certificate: Buffer, _issuer: Buffer, callback: (error: Error | null, response?: Buffer) => void) => {
      const response = responses.get(certificateKey(certificate));
      if (response) callback(null, response);
      else callback(null);
    });
  }

  /** ssl_session_cache of a listen's default server, on its node server. */
  keepSessions(server: import('node:tls').Server, tls: ServerTls): void {
    keepSessions(server, tls.sessionCache, tls.sessionTimeout, (name, size) => {
      if (!this.shared.has(name)) {
        // The zone's size is the catalog's (the first server that names the cache).
        const zoneSize = this.status.catalog().sslSessionCaches?.find((z) => z.name === name)?.zoneSize ?? size;
        try {
          this.shared.set(name, sharedSessions(this.status.zoneNamed(name), zoneSize));
        } catch (e) {
          errorLogOf(undefined).log('alert', `ssl_session_cache "${name}" is not usable: ${(e as Error).message}`);
          this.shared.set(name, undefined);
        }
      }
      return this.shared.get(name);
    });
  }
}

const certificateKey = (der: Buffer) => der.toString('base64');

type Asking = TLSSocket & { _requestCert?: boolean; _handle?: { setVerifyMode?: (request: boolean, reject: boolean) => void } | null };

/** Asks the client of `socket` for a certificate or not, in the middle of its handshake
 * (from the SNI callback, before the server's certificate request goes): the server the
 * client names decides, as nginx's servername callback does. */
export function askClientCertificate(socket: TLSSocket, ask: boolean): void {
  const s = socket as Asking;
  if (s._requestCert === ask || !s._handle?.setVerifyMode) return;
  s._handle.setVerifyMode(ask, false);
  s._requestCert = ask;
}
