// The ssl modules' directives (ngx_http_ssl_module, ngx_stream_ssl_module), composed into
// the loader's table by config/directives.ts:
//
//   ssl_certificate <file>; ssl_certificate_key <file>;   http, server (stream declares its own)
//   ssl_handshake_timeout <time>;                           http, server
//   ssl_verify_client on|off|optional|optional_no_ca; ssl_client_certificate <file>;
//   ssl_trusted_certificate <file>; ssl_verify_depth <n>; ssl_crl <file>;
//   ssl_session_cache off|none|[builtin[:size]] [shared:name:size]; ssl_session_timeout <time>;
//   ssl_session_tickets on|off; ssl_session_ticket_key <file>; ssl_protocols <p>...;
//   ssl_ciphers <list>; ssl_prefer_server_ciphers on|off; ssl_password_file <file>;
//   ssl_conf_command <name> <value>; ssl_dhparam <file>;
//   ssl_stapling on|off; ssl_stapling_file <file>; ssl_stapling_verify on|off;
//   ssl_stapling_responder <url>; ssl_early_data on|off; ssl_buffer_size <size>;   http, server
//   ssl_ecdh_curve <curves>;                                http, server, stream, stream server
//
// The second group is written the same in http and stream: one table entry serves the
// four contexts, and each block keeps what it says in its `tls` field; settleTls() merges a
// server's into its outer block's, with nginx's defaults.
import { readFileSync } from 'node:fs';
import { define, milliseconds, onOff, type DirectiveSpec } from '../config/spec.js';
import { whole } from '../config/numbers.js';
import type { SecureContextOptions } from 'node:tls';
import { confFile, readable } from '../config/files.js';
import { isZoneName, parseSize } from '../config/values.js';
import { parseTime } from '../../metrics/peers.js';
import type { Checker } from '../config/levels.js';
import type { Directive } from '../config/syntax.js';
import type { Origin } from '../config/model.js';
import { createPrivateKey } from 'node:crypto';
import { confCommandOptions, keyWithPassphrase, passwordLines } from './context.js';
import { nodeTls } from './modules.js';
import { VERIFY_DEPTH, type VerifyClient } from './verify.js';

export type { VerifyClient } from './verify.js';
import type { ServerTls, SessionCache } from './context.js';
export type { ServerTls, SessionCache } from './context.js';

declare module '../config/model.js' {
  interface VirtualServerConfig {
    /** Present when the server has a certificate: its TLS on the listens that are `ssl`. */
    readonly ssl?: ServerTls;
  }
}

/** What one block says of TLS, before inheritance. */
export interface TlsWritten {
  verifyClient?: VerifyClient;
  clientCertificate?: string;
  trustedCertificate?: string;
  verifyDepth?: number;
  crl?: string;
  sessionCache?: SessionCache;
  /** Seconds. */
  sessionTimeout?: number;
  sessionTickets?: boolean;
  sessionTicketKeys?: string[];
  protocols?: string[];
  ciphers?: string;
  preferServerCiphers?: boolean;
  /** ssl_password_file: its name, and its lines (read once, by the primary). */
  passwords?: { readonly file: string; readonly lines: readonly string[] };
  confCommands?: Array<readonly [string, string]>;
  /** ssl_dhparam: the file of the DH parameters the DHE ciphers use. */
  dhparam?: string;
  /** ssl_stapling, and where it is written (the warning without a file names it). */
  stapling?: { readonly on: boolean; readonly origin: Origin };
  staplingFile?: string;
  /** ssl_ecdh_curve: OpenSSL's list of groups (`auto`, nginx's default, is node's). */
  ecdhCurve?: string;
}



declare module '../config/levels.js' {
  interface HttpLevel {
    tls?: TlsWritten;
    /** nginx's deprecated `ssl on`: every listen of the servers it covers is `ssl`. */
    sslOn?: boolean;
    sslCertificate?: string;
    sslCertificateKey?: string;
    sslHandshakeTimeout?: number;
  }
  interface ServerLevel {
    tls?: TlsWritten;
    sslOn?: boolean;
  }
}
declare module '../stream/config.js' {
  interface StreamLevel {
    tls?: TlsWritten;
  }
  interface StreamServerLevel {
    tls?: TlsWritten;
  }
}

/** nginx 1.22's defaults (Debian's, the one the conformance run compares with), but the
 * protocols: TLS 1.3 is on, as since nginx 1.23.4. */
export const TLS_DEFAULTS = {
  verifyClient: 'off',
  verifyDepth: VERIFY_DEPTH,
  sessionCache: { mode: 'none' },
  sessionTimeout: 300,
  sessionTickets: true,
  sessionTicketKeys: [],
  protocols: ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'],
  ciphers: 'HIGH:!aNULL:!MD5',
  preferServerCiphers: false,
  confCommands: [],
} as const satisfies Partial<ServerTls>;

const PROTOCOLS = new Set(['SSLv2', 'SSLv3', 'TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3']);
/** OpenSSL's builtin cache size when none is given (SSL_SESSION_CACHE_MAX_SIZE_DEFAULT). */
const BUILTIN_SIZE = 20480;

const TLS_CONTEXTS = ['http', 'server', 'stream', 'stream_server'] as const;

/** An entry of the four contexts that sets a field of the block's `tls`. */
function tlsDirective(args: readonly [number, number], set: (tls: TlsWritten, d: Directive, c: Checker) => void, multiple = false, contexts: ReadonlyArray<(typeof TLS_CONTEXTS)[number]> = TLS_CONTEXTS) {
  return define({
    contexts,
    args,
    multiple,
    apply(d, level, c) {
      set((level.tls ??= {}), d, c);
    },
  });
}

const flag = (set: (tls: TlsWritten, on: boolean, d: Directive) => void, contexts: ReadonlyArray<(typeof TLS_CONTEXTS)[number]> = TLS_CONTEXTS) =>
  tlsDirective(
    [1, 1],
    (tls, d, c) => {
      const arg = d.args[0];
      if (arg !== 'on' && arg !== 'off') c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "on" or "off"`);
      else set(tls, arg === 'on', d);
    },
    false,
    contexts,
  );

/** nginx staples OCSP responses in http only (its stream module has no stapling). */
const HTTP_TLS = ['http', 'server'] as const;

const file = (set: (tls: TlsWritten, path: string) => void) => tlsDirective([1, 1], (tls, d, c) => set(tls, confFile(d, c)));

/** ssl_session_cache's arguments, or the message for the first bad one (nginx's). */
function sessionCache(args: readonly string[]): SessionCache | string {
  if (args.length === 1 && (args[0] === 'off' || args[0] === 'none')) return { mode: args[0] };
  let builtin: number | undefined;
  let shared: { name: string; size: number } | undefined;
  for (const arg of args) {
    if (arg === 'builtin') builtin = BUILTIN_SIZE;
    else if (arg.startsWith('builtin:')) {
      const n = whole(arg.slice('builtin:'.length), 1);
      if (n === undefined) return `invalid session cache "${arg}"`;
      builtin = n;
    } else if (arg.startsWith('shared:')) {
      const colon = arg.lastIndexOf(':');
      const name = arg.slice('shared:'.length, colon);
      const size = colon > 'shared:'.length - 1 ? parseSize(arg.slice(colon + 1)) : undefined;
      if (colon === 'shared:'.length - 1 || name === '' || size === undefined) return `invalid session cache "${arg}"`;
      if (!isZoneName(name)) return `invalid zone name "${name}" in "ssl_session_cache" directive: letters, digits, "_", "-" and "." only`;
      // nginx: eight pages at least.
      if (size < 8 * 4096) return `session cache "${arg}" is too small`;
      shared = { name, size };
    } else return `invalid session cache "${arg}"`;
  }
  return { mode: 'cache', ...(builtin !== undefined ? { builtin } : {}), ...(shared ? { shared } : {}) };
}

export const sslDirectives: Readonly<Record<string, DirectiveSpec>> = {
  ssl_certificate: define({
    contexts: ['http', 'server'],
    args: [1, 1],
    apply(d, server, c) {
      server.sslCertificate = confFile(d, c);
    },
  }),

  ssl_certificate_key: define({
    contexts: ['http', 'server'],
    args: [1, 1],
    apply(d, server, c) {
      server.sslCertificateKey = confFile(d, c);
    },
  }),

  // nginx 1.22's `ssl on` (deprecated since 1.15.0, gone in 1.25.1): the server's listens
  // are all `ssl`, as if each said so (server-check.ts applies it once the block is read).
  ssl: define({
    contexts: ['http', 'server'],
    args: [1, 1],
    apply(d, level, c) {
      const arg = d.args[0];
      if (arg !== 'on' && arg !== 'off') c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "on" or "off"`);
      else level.sslOn = arg === 'on';
    },
  }),

  // How long a TLS handshake may take (nginx 1.25's directive, default 60s): a client that
  // stalls it is counted in `ssl.timedout`.
  ssl_handshake_timeout: define({
    contexts: ['http', 'server'],
    args: [1, 1],
    apply(d, server, c) {
      const ms = milliseconds(d.args[0]);
      if (ms === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
      else server.sslHandshakeTimeout = ms;
    },
  }),

  ssl_verify_client: tlsDirective([1, 1], (tls, d, c) => {
    const arg = d.args[0];
    if (arg === 'on' || arg === 'off' || arg === 'optional' || arg === 'optional_no_ca') tls.verifyClient = arg;
    else c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "on", "off", "optional" or "optional_no_ca"`);
  }),
  ssl_client_certificate: file((tls, path) => (tls.clientCertificate = path)),
  ssl_trusted_certificate: file((tls, path) => (tls.trustedCertificate = path)),
  ssl_crl: file((tls, path) => (tls.crl = path)),
  // Read at load, as nginx does (it may be a FIFO, which gives its text once).
  ssl_password_file: tlsDirective([1, 1], (tls, d, c) => {
    const file = c.path(d.args[0], 'conf');
    let text: string | undefined;
    try {
      text = c.secret(file);
    } catch (e) {
      return c.error(d.origin, `cannot open "${file}" of the "${d.name}" directive (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    if (text === undefined) return c.error(d.origin, `cannot open "${file}" of the "${d.name}" directive`);
    tls.passwords = { file, lines: passwordLines(text) };
  }),
  ssl_verify_depth: tlsDirective([1, 1], (tls, d, c) => {
    const n = whole(d.args[0], 0);
    if (n === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
    else tls.verifyDepth = n;
  }),
  ssl_session_cache: tlsDirective([1, 2], (tls, d, c) => {
    const cache = sessionCache(d.args);
    if (typeof cache === 'string') c.error(d.origin, cache);
    else tls.sessionCache = cache;
  }),
  ssl_session_timeout: tlsDirective([1, 1], (tls, d, c) => {
    const s = parseTime(d.args[0], false);
    if (s === undefined || s > 2147483647) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
    else tls.sessionTimeout = s;
  }),
  ssl_session_tickets: flag((tls, on) => (tls.sessionTickets = on)),
  // node's tickets are AES-128 with a 16-byte HMAC secret: nginx's 48-byte files, which
  // hold the same three parts in the same order. nginx's 80-byte ones (AES-256) it cannot use.
  ssl_session_ticket_key: tlsDirective(
    [1, 1],
    (tls, d, c) => {
      const path = confFile(d, c);
      if (c.disk) {
        let size: number | undefined;
        try {
          size = readFileSync(path).length;
        } catch {
          // reported by confFile
        }
        if (size === 80) return c.error(d.origin, `"${path}" is an 80-byte (AES-256) ticket key, which node's TLS cannot use: a 48-byte one is needed`);
        if (size !== undefined && size !== 48) return c.error(d.origin, `"${path}" must be 48 or 80 bytes`);
      }
      (tls.sessionTicketKeys ??= []).push(path);
    },
    true,
  ),
  ssl_protocols: tlsDirective([1, 6], (tls, d, c) => {
    const bad = d.args.find((p) => !PROTOCOLS.has(p));
    if (bad !== undefined) c.error(d.origin, `invalid value "${bad}" in "${d.name}" directive`);
    else tls.protocols = [...d.args];
  }),
  ssl_ciphers: tlsDirective([1, 1], (tls, d, c) => {
    const error = contextError({ ciphers: d.args[0] });
    if (error) c.error(d.origin, `SSL_CTX_set_cipher_list("${d.args[0]}") failed (${error})`);
    else tls.ciphers = d.args[0];
  }),
  ssl_prefer_server_ciphers: flag((tls, on) => (tls.preferServerCiphers = on)),
  // node's OpenSSL offers no DHE cipher without parameters, as nginx's: they enable them.
  ssl_dhparam: tlsDirective([1, 1], (tls, d, c) => {
    const path = c.path(d.args[0], 'conf');
    if (c.disk) {
      let pem: string;
      try {
        pem = readFileSync(path, 'latin1');
      } catch (e) {
        return c.error(d.origin, `BIO_new_file("${path}") failed (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
      }
      const error = dhParametersError(pem) ?? contextError({ dhparam: pem });
      if (error) return c.error(d.origin, `PEM_read_bio_DHparams("${path}") failed (${error})`);
    }
    tls.dhparam = path;
  }),
  // OCSP stapling from a file (DER, as `openssl ocsp -respout` writes it), read by each
  // worker as it starts, so at every reload. zonal queries no responder: without a file,
  // settleTls() warns that nothing is stapled, as nginx warns when it cannot staple.
  ssl_stapling: flag((tls, on, d) => (tls.stapling = { on, origin: d.origin }), HTTP_TLS),
  ssl_stapling_file: tlsDirective(
    [1, 1],
    (tls, d, c) => {
      const path = confFile(d, c);
      if (c.disk) {
        const der = readable(path, null);
        if (der !== undefined && derSequenceError(der) !== undefined) return c.error(d.origin, `d2i_OCSP_RESPONSE_bio("${path}") failed (not a DER OCSP response)`);
      }
      tls.staplingFile = path;
    },
    false,
    HTTP_TLS,
  ),
  ssl_ecdh_curve: tlsDirective([1, 1], (tls, d, c) => {
    const error = contextError({ ecdhCurve: d.args[0] });
    if (error) c.error(d.origin, `SSL_CTX_set1_curves_list("${d.args[0]}") failed (${error})`);
    else tls.ecdhCurve = d.args[0];
  }),
  // node's TLS takes no early data: a client that sends some sends its request again
  // after the handshake, as TLS 1.3 lets a server choose. Said once, as http2 is.
  ssl_early_data: tlsDirective(
    [1, 1],
    (_tls, d, c) => {
      if (onOff(d, c)) c.warn(d.origin, `node's TLS accepts no early data: clients send their requests after the handshake ("ssl_early_data" ignored)`);
    },
    false,
    HTTP_TLS,
  ),
  // nginx's TLS record size: node's TLS writes records as its streams give them.
  ssl_buffer_size: tlsDirective(
    [1, 1],
    (_tls, d, c) => {
      if (parseSize(d.args[0]) === undefined) c.error(d.origin, `"${d.name}" directive invalid value`);
    },
    false,
    HTTP_TLS,
  ),
  // Of the responses zonal would fetch: it fetches none (a file's is stapled as it is, as nginx's).
  ssl_stapling_verify: flag(() => {}, HTTP_TLS),
  ssl_stapling_responder: tlsDirective(
    [1, 1],
    (_tls, d, c) => {
      if (!/^http:\/\/[^/?#\s]+/i.test(d.args[0])) c.error(d.origin, `invalid URL prefix in "${d.args[0]}"`);
    },
    false,
    HTTP_TLS,
  ),
  ssl_conf_command: tlsDirective(
    [2, 2],
    (tls, d, c) => {
      const [name, value] = d.args;
      const options = confCommandOptions([[name, value]]);
      if (typeof options === 'string') return c.error(d.origin, options);
      const error = contextError(options);
      if (error) return c.error(d.origin, `SSL_CONF_cmd("${name}", "${value}") failed (${error})`);
      (tls.confCommands ??= []).push([name, value]);
    },
    true,
  ),
};

/** Why a file is not PEM DH parameters (node's TLS ignores such a file without a word,
 * where nginx's OpenSSL refuses it): a DH PARAMETERS block whose DER is a SEQUENCE. */
function dhParametersError(pem: string): string | undefined {
  const block = /-----BEGIN (X9\.42 )?DH PARAMETERS-----([^-]*)-----END \1?DH PARAMETERS-----/.exec(pem);
  if (!block) return 'no start line: Expecting: DH PARAMETERS';
  return derSequenceError(Buffer.from(block[2].replace(/\s+/g, ''), 'base64')) && 'the DH PARAMETERS block is not DER';
}

/** Why bytes are not one DER SEQUENCE whose first element is a number (DH parameters, an
 * OCSP response): its length in one byte or in the 1-4 bytes that follow 0x8n. */
function derSequenceError(der: Buffer): string | undefined {
  const long = der[1] > 0x80 ? der[1] - 0x80 : 0;
  const length = long ? der.subarray(2, 2 + long).reduce((n, b) => n * 256 + b, 0) : der[1];
  const first = der[2 + long];
  // INTEGER (DH), ENUMERATED (an OCSP response's status).
  if (der.length < 3 || der[0] !== 0x30 || long > 4 || 2 + long + length !== der.length || (first !== 0x02 && first !== 0x0a)) return 'not DER';
  return undefined;
}

/** What node's TLS says of options: the error a context made of them meets, if any. */
function contextError(options: SecureContextOptions): string | undefined {
  try {
    nodeTls().createSecureContext(options);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** A server's TLS: what it says over its outer block's, with nginx's defaults. A server
 * that verifies clients needs a CA to verify them against, as nginx's. */
export function settleTls(
  inner: TlsWritten | undefined,
  outer: TlsWritten | undefined,
  certificate: { readonly certificate: string; readonly key: string; readonly handshakeTimeout: number },
  report: (message: string) => void,
  disk = false,
  warn: (at: Origin, message: string) => void = () => {},
): ServerTls {
  const pick = <K extends keyof TlsWritten>(k: K): TlsWritten[K] => inner?.[k] ?? outer?.[k];
  const tls: ServerTls = {
    ...certificate,
    verifyClient: pick('verifyClient') ?? TLS_DEFAULTS.verifyClient,
    ...optional('clientCertificate', pick('clientCertificate')),
    ...optional('trustedCertificate', pick('trustedCertificate')),
    verifyDepth: pick('verifyDepth') ?? TLS_DEFAULTS.verifyDepth,
    ...optional('crl', pick('crl')),
    sessionCache: pick('sessionCache') ?? TLS_DEFAULTS.sessionCache,
    sessionTimeout: pick('sessionTimeout') ?? TLS_DEFAULTS.sessionTimeout,
    sessionTickets: pick('sessionTickets') ?? TLS_DEFAULTS.sessionTickets,
    sessionTicketKeys: pick('sessionTicketKeys') ?? TLS_DEFAULTS.sessionTicketKeys,
    protocols: pick('protocols') ?? TLS_DEFAULTS.protocols,
    ciphers: pick('ciphers') ?? TLS_DEFAULTS.ciphers,
    preferServerCiphers: pick('preferServerCiphers') ?? TLS_DEFAULTS.preferServerCiphers,
    ...optional('passwords', pick('passwords')),
    confCommands: pick('confCommands') ?? TLS_DEFAULTS.confCommands,
    ...optional('dhparam', pick('dhparam')),
    ...optional('ecdhCurve', pick('ecdhCurve')),
    ...(pick('stapling')?.on ? stapled(pick('staplingFile'), pick('stapling')!.origin, warn) : {}),
  };
  if (tls.verifyClient !== 'off' && tls.verifyClient !== 'optional_no_ca' && tls.clientCertificate === undefined && tls.trustedCertificate === undefined)
    report('no ssl_client_certificate for ssl_verify_client');
  // With ssl_password_file, a passphrase of it must open the key now (node reads keys at
  // run time, where a worker would fail to start).
  if (disk && tls.passwords)
    try {
      const { key, passphrase } = keyWithPassphrase(tls.key, tls.passwords);
      createPrivateKey(passphrase === undefined ? key : { key, passphrase });
    } catch (e) {
      report(`cannot load certificate key "${tls.key}": ${(e as Error).message}`);
    }
  return tls;
}

/** `ssl_stapling on`: the file's response, or the warning that there is none (zonal queries
 * no OCSP responder: the tests, and many servers, have no network to reach one). */
function stapled(file: string | undefined, origin: Origin, warn: (at: Origin, message: string) => void): Pick<ServerTls, 'staplingFile'> {
  if (file !== undefined) return { staplingFile: file };
  warn(origin, `"ssl_stapling" ignored, zonal does not query OCSP responders: give the response with "ssl_stapling_file"`);
  return {};
}

const optional = <K extends string, V>(k: K, v: V | undefined) => (v === undefined ? {} : ({ [k]: v } as Record<K, V>));
