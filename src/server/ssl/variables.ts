// The variables of nginx's ssl modules (http's and stream's), as node's TLS socket tells
// them: empty on a plain connection. A stream session's are read once its handshake is
// done (its sockets are gone when its log line is written); an http request's from its
// socket. `$ssl_ciphers`, the client's list, which node does not keep, is read from the
// ClientHello the listen read before node's TLS (client-hello.ts).
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { X509Certificate } from 'node:crypto';
import type { VariableTable } from '../../api/variables.js';
import type { HttpContext } from '../http/variables.js';
import type { StreamRecord } from '../stream/variables.js';
// Not ./config.js: it reads the variable tables this module is part of.
import { clientVerification, VERIFY_DEPTH } from './verify.js';
import { cipherNames, clientHelloOf } from './client-hello.js';

type Named = TLSSocket & { servername?: string | false };

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

/**
 * A name in RFC 2253 form, as nginx prints $ssl_client_s_dn (OpenSSL's XN_FLAG_RFC2253):
 * the last RDN first, RDNs joined by commas and an RDN's values by `+`, bytes above 127
 * escaped. node gives the name one RDN a line, first first, with RFC 2253's escapes of
 * special characters already made.
 */
export function rfc2253(name: string): string {
  const escaped = name.replace(/[^\x00-\x7f]/gu, (ch) => [...Buffer.from(ch, 'utf8')].map((b) => `\\${b.toString(16).toUpperCase()}`).join(''));
  return escaped.split('\n').reverse().map((rdn) => rdn.split(' + ').join('+')).join(',');
}

/**
 * A name as nginx's $ssl_client_s_dn_legacy prints it (OpenSSL's X509_NAME_oneline): each
 * entry after a slash, first first, unescaped, and bytes outside printable ASCII as \xHH.
 */
export function oneline(name: string): string {
  const entries = name.split('\n').flatMap((rdn) => rdn.split(' + '));
  const bytes = (ch: string) => [...Buffer.from(ch, 'utf8')].map((b) => `\\x${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  return entries.map((e) => `/${e.replace(/\\([,+"\\<>;#= ])/g, '$1').replace(/[^\x20-\x7e]/gu, bytes)}`).join('');
}

const cert = (s: TLSSocket): X509Certificate | undefined => clientVerification(s, VERIFY_DEPTH).certificate;

/** nginx's deprecated $ssl_client_cert: the PEM with a tab after each inner line break,
 * as a header may carry it folded. */
const folded = (pem: string) => pem.replace(/\n$/, '').replace(/\n/g, '\n\t');

/** Each variable over a TLS socket. */
const OF_SOCKET: Readonly<Record<string, (s: TLSSocket) => string | undefined>> = {
  ssl_protocol: (s) => s.getProtocol() ?? undefined,
  ssl_cipher: (s) => s.getCipher()?.name,
  ssl_server_name: (s) => (s as Named).servername || undefined,
  ssl_session_reused: (s) => (s.isSessionReused() ? 'r' : '.'),
  ssl_session_id: sessionId,
  ssl_ciphers: (s) => {
    const hello = clientHelloOf((s as TLSSocket & { _parent?: Socket })._parent);
    return hello && cipherNames(hello.ciphers);
  },
  // The verification as ssl_verify_client made it (its depth), else with the default depth.
  ssl_client_verify: (s) => clientVerification(s, VERIFY_DEPTH).verify,
  ssl_client_s_dn: (s) => {
    const c = cert(s);
    return c && rfc2253(c.subject);
  },
  ssl_client_i_dn: (s) => {
    const c = cert(s);
    return c && rfc2253(c.issuer);
  },
  ssl_client_s_dn_legacy: (s) => {
    const c = cert(s);
    return c && oneline(c.subject);
  },
  ssl_client_i_dn_legacy: (s) => {
    const c = cert(s);
    return c && oneline(c.issuer);
  },
  ssl_client_serial: (s) => cert(s)?.serialNumber,
  ssl_client_fingerprint: (s) => cert(s)?.fingerprint.replace(/:/g, '').toLowerCase(),
  ssl_client_cert: (s) => {
    const c = cert(s);
    return c && folded(c.toString());
  },
  ssl_client_raw_cert: (s) => cert(s)?.toString(),
  ssl_client_escaped_cert: (s) => {
    const c = cert(s);
    return c && encodeURIComponent(c.toString());
  },
  ssl_client_v_start: (s) => cert(s)?.validFrom,
  ssl_client_v_end: (s) => cert(s)?.validTo,
  ssl_client_v_remain: (s) => {
    const c = cert(s);
    return c && String(Math.max(0, Math.floor((Date.parse(c.validTo) - Date.now()) / 86_400_000)));
  },
};

/** The TLS socket of an https request, undefined for plain http. */
const tls = (c: HttpContext) => ((c.req.socket as { encrypted?: boolean }).encrypted ? (c.req.socket as TLSSocket) : undefined);

export const sslVariables: VariableTable<HttpContext> = {
  names: Object.fromEntries(
    Object.entries(OF_SOCKET).map(([name, of]) => [
      name,
      (c: HttpContext) => {
        const socket = tls(c);
        // On a plain connection nginx's $ssl_session_reused is empty, not "not found".
        return socket ? of(socket) : name === 'ssl_session_reused' ? '' : undefined;
      },
    ]),
  ),
};

/** A stream session's TLS variables, read when its handshake is done. */
export type TlsFacts = Readonly<Record<string, string | undefined>>;

declare module '../stream/variables.js' {
  interface StreamRecord {
    /** The TLS variables of an `ssl` listen's session, read after its handshake. */
    readonly tls?: TlsFacts;
  }
}

export function tlsFacts(socket: TLSSocket): TlsFacts {
  return Object.fromEntries(Object.entries(OF_SOCKET).map(([name, of]) => [name, of(socket)]));
}

export const streamSslVariables: VariableTable<StreamRecord> = {
  names: Object.fromEntries(Object.keys(OF_SOCKET).map((name) => [name, (r: StreamRecord) => r.tls?.[name]])),
};
