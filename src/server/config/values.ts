// The arguments of directives, each checked the way nginx checks it. Pure functions: a
// value, or the message of the error in nginx's words.
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { isPeerAddressError, parsePeerAddress, type PeerAddress } from '../../metrics/catalog.js';
import type { LocationConfig, Origin, PeerParams, ReturnConfig } from './model.js';
import { compileRegex } from './regex.js';
import { knownHttpVariable } from './variables.js';
import { apiVariables } from '../../api/mapping.js';

export type Checked<T> = { readonly value: T; readonly error?: undefined } | { readonly error: string };

const ok = <T>(value: T): Checked<T> => ({ value });
const fail = <T>(error: string): Checked<T> => ({ error });

/** The compressed spelling, so that `[0::1]` and `[::1]` are one address. */
const canonicalIPv6 = (host: string) => new URL(`http://[${host}]/`).hostname.slice(1, -1);

/** `127.0.0.1:80`, `[::1]:80`, `*:80`, `localhost:80`, `80`; a bare address means port 80
 * as in nginx. Host names other than `localhost` are not resolved. */
export function parseListenAddress(arg: string): Checked<{ host: string; port: number }> {
  // A unix domain socket: its host is `unix:<path>`, with no port.
  if (arg.startsWith('unix:')) return arg.length > 5 ? ok({ host: arg, port: 0 }) : fail(`no path in "${arg}" of the "listen" directive`);
  const split = /^\d+$/.test(arg) ? { host: '*', port: arg, v6: false } : splitHostPort(arg);
  if (!split) return fail(`invalid IPv6 address in "${arg}" of the "listen" directive`);
  const { host } = split;
  if (!split.v6) {
    if (host === 'unix') return fail(`unix domain sockets are not supported in "${arg}" of the "listen" directive`);
    if (host !== '*' && host !== 'localhost' && isIP(host) !== 4) return fail(`invalid host in "${arg}" of the "listen" directive`);
  }
  const port = portNumber(split.port);
  if (!port) return fail(`invalid port in "${arg}" of the "listen" directive`);
  return ok({ host: host === '*' ? '0.0.0.0' : host === 'localhost' ? '127.0.0.1' : host, port });
}

/** `[v6]:port`, `[v6]`, `host:port` or `host`: the host (an IPv6 one checked and written
 * compressed) and the port as written; undefined when the part in brackets is not IPv6. */
function splitHostPort(arg: string): { host: string; port?: string; v6: boolean } | undefined {
  if (arg.startsWith('[')) {
    const close = arg.indexOf(']');
    const host = arg.slice(1, close);
    const rest = arg.slice(close + 1);
    if (close < 0 || isIP(host) !== 6 || (rest !== '' && !rest.startsWith(':'))) return undefined;
    return { host: canonicalIPv6(host), port: rest ? rest.slice(1) : undefined, v6: true };
  }
  const colon = arg.lastIndexOf(':');
  return colon < 0 ? { host: arg, v6: false } : { host: arg.slice(0, colon), port: arg.slice(colon + 1), v6: false };
}

/** A port as written: 1 to 65535, 80 when absent; 0 when it is not one. */
function portNumber(port: string | undefined): number {
  const n = port === undefined ? 80 : /^\d{1,5}$/.test(port) ? Number(port) : 0;
  return n >= 1 && n <= 65535 ? n : 0;
}

/** `host:port` as nginx prints a listen address, IPv6 in brackets. */
export const listenAddress = (l: { host: string; port: number }): string =>
  l.host.startsWith('unix:') ? l.host : `${l.host.includes(':') ? `[${l.host}]` : l.host}:${l.port}`;

/** `allow` / `deny`: `all`, `unix:`, an address, or an address with a prefix length. */
export function checkAccessAddress(arg: string): string | undefined {
  // `unix:` is every client of a Unix-domain listener (nginx takes no path after it).
  if (arg === 'all' || arg === 'unix:') return undefined;
  const slash = arg.indexOf('/');
  const address = slash < 0 ? arg : arg.slice(0, slash);
  const family = isIP(address);
  if (!family) return `invalid parameter "${arg}"`;
  if (slash < 0) return undefined;
  const bits = arg.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128)) return `invalid parameter "${arg}"`;
  return undefined;
}

/** `return <code> [text|URL]`, or `return <URL>` for a 302 as nginx. */
export function parseReturn(args: readonly string[]): Checked<ReturnConfig> {
  if (args.length === 1 && /^(https?:\/\/|\$scheme)/.test(args[0])) return ok({ code: 302, text: args[0] });
  if (!/^\d{1,3}$/.test(args[0])) return fail(`invalid return code "${args[0]}"`);
  const code = Number(args[0]);
  return ok(args.length > 1 ? { code, text: args[1] } : { code });
}

/** The http variables (config/variables.ts): every place that takes variables knows
 * them all, as nginx's do. (The name `hash` keys check against.) */
export const requestVariable = knownHttpVariable;

/** The variables of a value (`$name`, `${name}`, `$1`) are all `known`; else nginx's error. */
export function checkVariables(arg: string, known: (name: string) => boolean): string | undefined {
  for (let i = arg.indexOf('$'); i >= 0; i = arg.indexOf('$', i + 1)) {
    let name: string;
    if (arg[i + 1] === '{') {
      const close = arg.indexOf('}', i + 2);
      if (close < 0) return `the closing bracket in "${arg.slice(i + 2)}" variable is missing`;
      name = arg.slice(i + 2, close);
    } else {
      // A capture is one digit, as nginx (and mapping.ts) read `$12` as `$1` then `2`.
      name = /^(\d|\w+)/.exec(arg.slice(i + 1))?.[0] ?? '';
    }
    if (!/^\w+$/.test(name)) return `invalid variable name in "${arg}"`;
    if (!known(name)) return `unknown "${name}" variable`;
  }
  return undefined;
}

/** `api <path>`: an absolute API path, or one that begins with a variable (`$uri`). */
export function checkApiPath(arg: string): string | undefined {
  if (!arg.startsWith('/') && !arg.startsWith('$')) return `invalid API path "${arg}" in "api" directive: it must start with "/" or a variable`;
  return checkVariables(arg, apiVariables.known);
}

/** A peer's address: what an upstream `server` and `proxy_pass http://<address>` name. */
export type UpstreamAddress = PeerAddress;

/** `ip:port`, `[v6]:port`, `localhost:port`, or any of them without a port (80): the
 * forms /config takes too, read by the one parser both use (metrics/catalog.ts). */
export function parseUpstreamAddress(arg: string): Checked<UpstreamAddress> & { readonly resolver?: true } {
  const parsed = parsePeerAddress(arg);
  return isPeerAddressError(parsed) ? parsed : ok(parsed);
}

/** nginx's defaults of a `server` in an upstream, at an address. */
/** The zone of the upstream a `proxy_pass` to an address makes: named by the address,
 * but a socket path's by a hash, since a zone is a file of /dev/shm, whose names cannot
 * hold the path's slashes. */
export const implicitZoneName = (address: string): string =>
  address.startsWith('unix:') ? `unix-${createHash('sha256').update(address).digest('hex').slice(0, 16)}` : address;

export const defaultPeer = (server: string, address: UpstreamAddress, origin: Origin): PeerParams => ({
  server,
  ...address,
  weight: 1,
  maxConns: 0,
  maxFails: 1,
  failTimeout: 10_000,
  backup: false,
  down: false,
  slowStart: 0,
  origin,
});

/** `proxy_pass http[s]://<host>[:<port>][<uri>]`: the host part (an upstream's name or an
 * address), the URI part as written, and whether the peers speak TLS. */
export function parseProxyPass(arg: string): Checked<{ target: string; uri?: string; ssl: boolean; url?: string }> {
  const scheme = /^(https?):\/\//i.exec(arg);
  // Variables in the scheme or the host make the peer a request's choice: the whole URL
  // is evaluated for each request (ngx_http_proxy_module's "specified using variables").
  if (!scheme && arg.startsWith('$')) {
    const error = checkVariables(arg, knownHttpVariable);
    return error ? fail(error) : ok({ target: '', ssl: true, url: arg });
  }
  if (!scheme) return fail(`invalid URL prefix in "${arg}"`);
  const ssl = scheme[1].toLowerCase() === 'https';
  const rest = arg.slice(scheme[0].length);
  // A Unix-domain socket, its URI after a colon: `http://unix:/tmp/b.sock:/uri/`.
  if (/^unix:/i.test(rest)) {
    const colon = rest.indexOf(':', 5);
    const target = `unix:${colon < 0 ? rest.slice(5) : rest.slice(5, colon)}`;
    if (target === 'unix:') return fail(`no path in the unix domain socket "${arg}"`);
    const uri = colon < 0 ? '' : rest.slice(colon + 1);
    if (uri === '') return ok({ target, ssl });
    const error = checkVariables(uri, knownHttpVariable);
    return error ? fail(error) : ok({ target, uri, ssl });
  }
  const slash = rest.indexOf('/');
  const target = slash < 0 ? rest : rest.slice(0, slash);
  if (target.includes('$')) {
    const error = checkVariables(arg, knownHttpVariable);
    return error ? fail(error) : ok({ target: '', ssl, url: arg });
  }
  // Variables in the URI make the whole URI sent (captures of an `if`, say).
  if (target === '') return fail(`no host in "${arg}" of the "proxy_pass" directive`);
  if (slash < 0) return ok({ target, ssl });
  const uri = rest.slice(slash);
  const error = checkVariables(uri, knownHttpVariable);
  return error ? fail(error) : ok({ target, uri, ssl });
}

/** nginx's sizes: bytes, or `k` / `m` with either case. */
export function parseSize(arg: string): number | undefined {
  const m = /^(\d{1,10})([kKmM]?)$/.exec(arg);
  if (!m) return undefined;
  return Number(m[1]) * (m[2] === '' ? 1 : m[2].toLowerCase() === 'k' ? 1024 : 1024 * 1024);
}

/** A header name is an HTTP token, and a literal value holds no control character: Node
 * refuses either at run time, where a configuration mistake must not reach. */
export function checkHeader(name: string, value: string): string | undefined {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return `invalid header name "${name}"`;
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value)) return `invalid header value "${value}" of "${name}"`;
  return checkVariables(value, knownHttpVariable);
}

/** A server name, lowercased unless it is a regex (which must compile). */
export function checkServerName(name: string): Checked<string> {
  if (name.startsWith('~')) {
    try {
      compileRegex(name.slice(1), true);
    } catch (e) {
      return fail(`invalid regular expression "${name.slice(1)}" in "server_name" directive: ${(e as Error).message}`);
    }
    return ok(name);
  }
  const lower = name.toLowerCase();
  const stars = lower.split('*').length - 1;
  const wildcard = stars === 0 || (stars === 1 && (lower.startsWith('*.') || lower.endsWith('.*')) && !lower.startsWith('.'));
  if (!wildcard || lower === '.' || /[\s/]/.test(lower)) return fail(`invalid server name or wildcard "${name}"`);
  return ok(lower);
}

/** A status zone's name is a key of the /status tree: it stays one path segment. */
export const isZoneName = (name: string): boolean => /^[A-Za-z0-9_.-]+$/.test(name) && name !== '.' && name !== '..';

const modifiers = ['=', '^~', '~*', '~'] as const;

/** `location [=|~|~*|^~] <path>`, the modifier also glued to the path as nginx allows
 * (`location =/x`). */
export function parseLocation(args: readonly string[]): Checked<{ modifier: LocationConfig['modifier']; path: string }> {
  if (args.length === 2) {
    const modifier = modifiers.find((m) => m === args[0]);
    return modifier ? ok({ modifier, path: args[1] }) : fail(`invalid location modifier "${args[0]}"`);
  }
  const [arg] = args;
  // A named location (`location @fallback`): reached only by try_files and error_page.
  if (arg.startsWith('@')) return arg.length > 1 ? ok({ modifier: '@', path: arg }) : fail(`invalid location name "${arg}"`);
  const modifier = modifiers.find((m) => arg.startsWith(m));
  if (!modifier) return ok({ modifier: '', path: arg });
  if (arg === modifier) return fail(`invalid number of arguments in "location" directive`);
  return ok({ modifier, path: arg.slice(modifier.length) });
}
