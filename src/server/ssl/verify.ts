// A client certificate's verification, as nginx tells it ($ssl_client_verify) and acts on
// it (ssl_verify_client). node's TLS asks for the certificate and lets OpenSSL verify it
// against the server's CAs, but accepts the handshake whatever the result (zonal sets
// rejectUnauthorized off): the result is read here once, after the handshake.
//
// node names every CA it trusts to the client in the CertificateRequest, while nginx
// names only ssl_client_certificate's, not ssl_trusted_certificate's: so node's TLS is
// given only the first, and a chain OpenSSL found no issuer for is verified here against
// both (signatures, validity times, the depth; not CRLs).
import { readFileSync } from 'node:fs';
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
 * ssl_verify_depth, the intermediate CAs allowed between it and a trusted CA. `trusted`:
 * ssl_trusted_certificate and ssl_client_certificate, the files of CAs a chain may end at
 * when OpenSSL (which knows only the second) found no issuer. */
export function clientVerification(socket: TLSSocket, depth: number, trusted: readonly string[] = []): ClientVerification {
  const s = socket as Verified;
  if (s[VERIFIED]) return s[VERIFIED];
  const certificate = socket.getPeerX509Certificate();
  let result: ClientVerification;
  if (!certificate) result = { verify: 'NONE' };
  else {
    // OpenSSL's result, kept in the session (a resumed one keeps it too); its reason is
    // OpenSSL's text, as nginx prints.
    const openssl = s._handle?.verifyError?.() ?? null;
    const error = openssl && !(UNKNOWN_ISSUER.has(openssl.code ?? '') && trusted.length > 0 && chainsTo(certificate, sentChain(socket), anchors(trusted), depth)) ? openssl : null;
    if (error) result = { verify: `FAILED:${error.message}`, error: error.code ?? error.message, certificate };
    else if (chainLength(socket.getPeerCertificate(true)) > depth + 2) result = { verify: 'FAILED:certificate chain too long', error: 'CERT_CHAIN_TOO_LONG', certificate };
    else result = { verify: 'SUCCESS', certificate };
  }
  s[VERIFIED] = result;
  return result;
}

/** The files of the CAs a server trusts, ssl_trusted_certificate's first. */
export const trustedFiles = (tls: { readonly trustedCertificate?: string; readonly clientCertificate?: string }): string[] =>
  [tls.trustedCertificate, tls.clientCertificate].filter((f): f is string => f !== undefined);

/** OpenSSL's errors of a chain whose issuer it did not have. */
const UNKNOWN_ISSUER = new Set(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE']);

/** The CAs of PEM files, read once per process. */
const anchorFiles = new Map<string, X509Certificate[]>();
function anchors(files: readonly string[]): X509Certificate[] {
  return files.flatMap((file) => {
    let certs = anchorFiles.get(file);
    if (!certs) {
      const pem = readFileSync(file, 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
      anchorFiles.set(file, (certs = pem.map((p) => new X509Certificate(p))));
    }
    return certs;
  });
}

/** The certificates the client sent above its own. */
function sentChain(socket: TLSSocket): X509Certificate[] {
  const out: X509Certificate[] = [];
  let c = (socket.getPeerCertificate(true) as PeerCertificate & { issuerCertificate?: PeerCertificate }).issuerCertificate;
  for (let n = 0; c && c.raw && n < 100; n++) {
    const next: PeerCertificate & { issuerCertificate?: PeerCertificate } = c;
    out.push(new X509Certificate(next.raw));
    if (next.issuerCertificate === next) break;
    c = next.issuerCertificate;
  }
  return out;
}

const issues = (issuer: X509Certificate, c: X509Certificate) => c.checkIssued(issuer) && c.verify(issuer.publicKey);
const current = (c: X509Certificate, now: number) => Date.parse(c.validFrom) <= now && now <= Date.parse(c.validTo);

/** Whether `leaf` chains, through CAs the client sent, to one of `anchors` within `depth`
 * intermediate CAs, every certificate signed by the next and within its validity. */
function chainsTo(leaf: X509Certificate, sent: readonly X509Certificate[], anchors: readonly X509Certificate[], depth: number): boolean {
  const now = Date.now();
  let c = leaf;
  for (let intermediates = 0; intermediates <= depth; intermediates++) {
    if (!current(c, now)) return false;
    const anchor = anchors.find((a) => issues(a, c));
    if (anchor) return current(anchor, now);
    const next = sent.find((s) => s.ca && s !== c && issues(s, c));
    if (!next) return false;
    c = next;
  }
  return false;
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
