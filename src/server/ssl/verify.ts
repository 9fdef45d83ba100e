// A client certificate's verification, as nginx tells it ($ssl_client_verify) and acts on
// it (ssl_verify_client). node's TLS asks for the certificate and lets OpenSSL verify it
// against the server's CAs, but accepts the handshake whatever the result (zonal sets
// rejectUnauthorized off): the result is read here once, after the handshake.
import { X509Certificate } from 'node:crypto';
import type { PeerCertificate, TLSSocket } from 'node:tls';

/** `ssl_verify_client`. */
export type VerifyClient = 'off' | 'on' | 'optional' | 'optional_no_ca';

/** nginx's ssl_verify_depth by default. */
export const VERIFY_DEPTH = 1;

export interface ClientVerification {
  /** SUCCESS, FAILED:<reason> or NONE, as nginx's $ssl_client_verify. */
  readonly verify: string;
  /** OpenSSL's error code name (node's authorizationError), when the verification failed. */
  readonly error?: string;
  readonly certificate?: X509Certificate;
}

/** OpenSSL's errors nginx lets `optional_no_ca` through (ngx_ssl_verify_error_optional):
 * the chain is fine but for a CA nobody gave. */
const OPTIONAL_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

const VERIFIED = Symbol('zonal.verified');
type Verified = TLSSocket & { [VERIFIED]?: ClientVerification; _handle?: { verifyError?: () => (Error & { code?: string }) | null } | null };

/** The verification of the client's certificate on `socket`: NONE without one. `depth`:
 * ssl_verify_depth, the intermediate CAs allowed between it and a trusted CA. */
export function clientVerification(socket: TLSSocket, depth: number): ClientVerification {
  const s = socket as Verified;
  if (s[VERIFIED]) return s[VERIFIED];
  const certificate = socket.getPeerX509Certificate();
  let result: ClientVerification;
  if (!certificate) result = { verify: 'NONE' };
  else {
    // OpenSSL's result, kept in the session (a resumed one keeps it too); its reason is
    // OpenSSL's text, as nginx prints.
    const error = s._handle?.verifyError?.() ?? null;
    if (error) result = { verify: `FAILED:${error.message}`, error: error.code ?? error.message, certificate };
    else if (chainLength(socket.getPeerCertificate(true)) > depth + 2) result = { verify: 'FAILED:certificate chain too long', error: 'CERT_CHAIN_TOO_LONG', certificate };
    else result = { verify: 'SUCCESS', certificate };
  }
  s[VERIFIED] = result;
  return result;
}

/** Certificates from the client's to the self-issued CA that ends the verified chain. */
function chainLength(cert: PeerCertificate & { issuerCertificate?: PeerCertificate }): number {
  let n = 1;
  for (let c = cert; c.issuerCertificate && c.issuerCertificate !== c && n < 100; c = c.issuerCertificate) n++;
  return n;
}

/** What ssl_verify_client makes of a verification: undefined when the client may go on,
 * else whether its certificate was wrong or missing (nginx's 495 and 496). */
export function verifyRefusal(mode: VerifyClient, v: ClientVerification): 'cert-error' | 'no-cert' | undefined {
  if (mode === 'off') return undefined;
  if (v.error !== undefined && (mode !== 'optional_no_ca' || !OPTIONAL_ERRORS.has(v.error))) return 'cert-error';
  if (mode === 'on' && !v.certificate) return 'no-cert';
  return undefined;
}
