// The variables of nginx's ssl module, as node's TLS socket tells them: empty on a plain
// connection. (`$ssl_ciphers`, the client's list, is left out: node does not keep it.)
import type { TLSSocket } from 'node:tls';
import type { VariableTable } from '../../api/variables.js';
import type { HttpContext } from '../http/variables.js';

/** The TLS socket of an https request, undefined for plain http. */
const tls = (c: HttpContext) => ((c.req.socket as { encrypted?: boolean }).encrypted ? (c.req.socket as TLSSocket & { servername?: string | false }) : undefined);

/** A DER element at `i`: its tag and where its content lies. */
function element(der: Buffer, i: number): { tag: number; start: number; end: number } {
  const tag = der[i++];
  let length = der[i++];
  if (length & 0x80) {
    const bytes = length & 0x7f;
    length = 0;
    for (let k = 0; k < bytes; k++) length = length * 256 + der[i++];
  }
  return { tag, start: i, end: i + length };
}

/** `$ssl_session_id`: the id of the session (OpenSSL's SSL_SESSION_get_id, which nginx
 * prints), read from the session node gives encoded: SSL_SESSION ::= SEQUENCE { version,
 * sslVersion, cipher, sessionID OCTET STRING, ... }. */
function sessionId(socket: TLSSocket): string | undefined {
  const der = socket.getSession();
  if (!der || der.length < 2) return undefined;
  const session = element(der, 0);
  if (session.tag !== 0x30) return undefined;
  let i = session.start;
  for (let k = 0; k < 3 && i < session.end; k++) i = element(der, i).end;
  if (i >= session.end) return undefined;
  const id = element(der, i);
  return id.tag === 0x04 && id.end <= der.length ? der.subarray(id.start, id.end).toString('hex') : undefined;
}

export const sslVariables: VariableTable<HttpContext> = {
  names: {
    ssl_protocol: (c) => tls(c)?.getProtocol() ?? undefined,
    ssl_cipher: (c) => tls(c)?.getCipher()?.name,
    ssl_server_name: (c) => tls(c)?.servername || undefined,
    ssl_session_reused: (c) => {
      const socket = tls(c);
      return socket ? (socket.isSessionReused() ? 'r' : '.') : '';
    },
    ssl_session_id: (c) => {
      const socket = tls(c);
      return socket && sessionId(socket);
    },
    // zonal asks no client for a certificate (no ssl_verify_client).
    ssl_client_verify: (c) => (tls(c) ? 'NONE' : undefined),
  },
};
