// A TLS server's settings (ServerTls) turned into the options of node's secure contexts,
// and the passphrases of encrypted keys: shared by the http and the stream planes, and by
// the TLS toward peers (proxy_ssl_password_file).
import { readFileSync } from 'node:fs';
import { constants, createHash, createPrivateKey } from 'node:crypto';
import type { SecureContextOptions } from 'node:tls';
import type { VerifyClient } from './verify.js';

/** `ssl_session_cache`: `off` (no session is resumed by id), `none` (nginx's default: the
 * client is told sessions may be resumed, none is kept), a per-worker cache and/or one
 * shared by the workers (a shared-memory zone). */
export interface SessionCache {
  readonly mode: 'off' | 'none' | 'cache';
  /** builtin[:size]: sessions a worker keeps (nginx's OpenSSL default, 20480). */
  readonly builtin?: number;
  readonly shared?: { readonly name: string; readonly size: number };
}

/** A server's TLS as the worker runs it: the certificate and everything above, merged. */
export interface ServerTls {
  readonly certificate: string;
  readonly key: string;
  /** Milliseconds. */
  readonly handshakeTimeout: number;
  readonly verifyClient: VerifyClient;
  readonly clientCertificate?: string;
  readonly trustedCertificate?: string;
  readonly verifyDepth: number;
  readonly crl?: string;
  readonly sessionCache: SessionCache;
  readonly sessionTimeout: number;
  readonly sessionTickets: boolean;
  readonly sessionTicketKeys: readonly string[];
  readonly protocols: readonly string[];
  readonly ciphers: string;
  readonly preferServerCiphers: boolean;
  readonly passwords?: { readonly file: string; readonly lines: readonly string[] };
  readonly confCommands: ReadonlyArray<readonly [string, string]>;
  readonly dhparam?: string;
  readonly ecdhCurve?: string;
  /** With `ssl_stapling on`: the DER OCSP response stapled to the certificate. */
  readonly staplingFile?: string;
}

type SslVersion = NonNullable<SecureContextOptions['minVersion']>;
const VERSIONS: readonly SslVersion[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];
/** What turns a version off between the lowest and the highest listed. */
const NO_VERSION: Readonly<Record<string, number>> = {
  TLSv1: constants.SSL_OP_NO_TLSv1,
  'TLSv1.1': constants.SSL_OP_NO_TLSv1_1,
  'TLSv1.2': constants.SSL_OP_NO_TLSv1_2,
  'TLSv1.3': constants.SSL_OP_NO_TLSv1_3,
};

/** OpenSSL's `Options` names node's secureOptions can set (SSL_CONF_cmd's table). */
const OPTIONS: Readonly<Record<string, number>> = {
  ServerPreference: constants.SSL_OP_CIPHER_SERVER_PREFERENCE,
  PrioritizeChaCha: constants.SSL_OP_PRIORITIZE_CHACHA,
  NoRenegotiation: constants.SSL_OP_NO_RENEGOTIATION,
  UnsafeLegacyRenegotiation: constants.SSL_OP_ALLOW_UNSAFE_LEGACY_RENEGOTIATION,
  '-SessionTicket': constants.SSL_OP_NO_TICKET,
  '-EncryptThenMac': constants.SSL_OP_NO_ENCRYPT_THEN_MAC,
  '-Compression': constants.SSL_OP_NO_COMPRESSION,
};

/** The SSL_CONF commands node can express, case as OpenSSL's file commands (ignored). */
const COMMANDS = ['CipherString', 'Ciphersuites', 'MinProtocol', 'MaxProtocol', 'Curves', 'Groups', 'SignatureAlgorithms', 'Options'];

/**
 * nginx's `ssl_conf_command`s as node's context options: the ones node's TLS can say
 * (cipher lists, protocol bounds, groups, signature algorithms, some Options); any other
 * gives the message that names it, for `zonal -t`.
 */
export function confCommandOptions(commands: ReadonlyArray<readonly [string, string]>): SecureContextOptions | string {
  const out: SecureContextOptions & { secureOptions?: number } = {};
  let list: string | undefined;
  let suites: string | undefined;
  for (const [written, value] of commands) {
    const name = COMMANDS.find((n) => n.toLowerCase() === written.toLowerCase());
    if (name === undefined) return `unsupported "ssl_conf_command" "${written}": node's TLS can set only ${COMMANDS.join(', ')}`;
    if (name === 'CipherString') list = value;
    else if (name === 'Ciphersuites') suites = value;
    else if (name === 'MinProtocol' || name === 'MaxProtocol') {
      if (!VERSIONS.includes(value as SslVersion)) return `invalid value "${value}" of "ssl_conf_command ${written}": one of ${VERSIONS.join(', ')}`;
      out[name === 'MinProtocol' ? 'minVersion' : 'maxVersion'] = value as SslVersion;
    } else if (name === 'Curves' || name === 'Groups') out.ecdhCurve = value;
    else if (name === 'SignatureAlgorithms') out.sigalgs = value;
    else
      for (const option of value.split(',').map((o) => o.trim())) {
        const bit = OPTIONS[option];
        if (bit === undefined) return `unsupported option "${option}" of "ssl_conf_command Options": node's TLS can set only ${Object.keys(OPTIONS).join(', ')}`;
        out.secureOptions = (out.secureOptions ?? 0) | bit;
      }
  }
  // node takes both lists in one: TLS 1.3 suites are told apart by their TLS_ names.
  if (list !== undefined || suites !== undefined) out.ciphers = [suites, list].filter((x) => x !== undefined).join(':');
  return out;
}

/** The protocols a server takes: the lowest and highest listed, and those between turned off. */
function protocolOptions(protocols: readonly string[]): Pick<SecureContextOptions, 'minVersion' | 'maxVersion'> & { secureOptions: number } {
  const listed = VERSIONS.filter((v) => protocols.includes(v));
  // SSLv2 and SSLv3 only: node's OpenSSL has neither, so nothing is offered.
  if (listed.length === 0) return { minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3', secureOptions: constants.SSL_OP_NO_TLSv1_3 };
  const min = VERSIONS.indexOf(listed[0]);
  const max = VERSIONS.indexOf(listed[listed.length - 1]);
  let secureOptions = 0;
  for (let i = min; i <= max; i++) if (!listed.includes(VERSIONS[i])) secureOptions |= NO_VERSION[VERSIONS[i]];
  return { minVersion: VERSIONS[min], maxVersion: VERSIONS[max], secureOptions };
}

/** A password file's passphrases: one a line (nginx's). */
export const passwordLines = (text: string): string[] => text.split(/\r?\n/).filter((l) => l !== '');

/** A key and the first passphrase of a password file that opens it (nginx's
 * ssl_password_file and proxy_ssl_password_file: tried in order). */
export function keyWithPassphrase(keyFile: string, passwords: { readonly file: string; readonly lines: readonly string[] } | undefined): { key: string; passphrase?: string } {
  const key = readFileSync(keyFile, 'utf8');
  if (passwords === undefined) return { key };
  const passwordFile = passwords.file;
  for (const passphrase of passwords.lines) {
    try {
      createPrivateKey({ key, passphrase });
      return { key, passphrase };
    } catch {
      // the next one
    }
  }
  throw new Error(`cannot load certificate key "${keyFile}": no passphrase of "${passwordFile}" opens it`);
}

/**
 * A server's secure context: its certificate, the CAs its clients' certificates are
 * verified against and named to them (ssl_client_certificate's only: node names every CA
 * it trusts, so ssl_trusted_certificate's are verify.ts's), protocols, ciphers, sessions.
 * `ticketKeys`: the keys every worker shares, unless ssl_session_ticket_key names its own.
 */
export function serverContextOptions(tls: ServerTls, ticketKeys: Buffer | undefined): SecureContextOptions {
  const commands = confCommandOptions(tls.confCommands);
  if (typeof commands === 'string') throw new Error(commands);
  const protocols = protocolOptions(tls.protocols);
  const verifies = tls.verifyClient !== 'off';
  // An empty list, not none: node would trust its bundled roots then.
  const ca = verifies && tls.clientCertificate !== undefined ? [readFileSync(tls.clientCertificate, 'utf8')] : [];
  const keys = tls.sessionTicketKeys.length ? readFileSync(tls.sessionTicketKeys[0]) : ticketKeys;
  let secureOptions = protocols.secureOptions | (commands.secureOptions ?? 0);
  if (!tls.sessionTickets) secureOptions |= constants.SSL_OP_NO_TICKET;
  return {
    cert: readFileSync(tls.certificate),
    ...keyWithPassphrase(tls.key, tls.passwords),
    ...(verifies ? { ca } : {}),
    ...(verifies && tls.crl !== undefined ? { crl: readFileSync(tls.crl) } : {}),
    ...(tls.dhparam !== undefined ? { dhparam: readFileSync(tls.dhparam) } : {}),
    ciphers: tls.ciphers,
    honorCipherOrder: tls.preferServerCiphers,
    minVersion: protocols.minVersion,
    maxVersion: protocols.maxVersion,
    ...(tls.ecdhCurve !== undefined ? { ecdhCurve: tls.ecdhCurve } : {}),
    ...commands,
    secureOptions,
    sessionTimeout: tls.sessionTimeout,
    // A session resumes only in a server of the same certificate and verification, in
    // any worker: the id context is their digest (OpenSSL's limit: 32 bytes).
    sessionIdContext: createHash('md5').update(JSON.stringify([tls.certificate, tls.key, tls.verifyClient, tls.clientCertificate, tls.trustedCertificate])).digest('hex'),
    ...(keys ? { ticketKeys: keys } : {}),
  };
}
