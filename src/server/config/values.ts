// The arguments of directives, each checked the way nginx checks it. Pure functions: a
// value, or the message of the error in nginx's words.
import { isIP } from 'node:net';
import type { LocationConfig, ReturnConfig } from './model.js';
import { compileRegex } from './regex.js';

export type Checked<T> = { readonly value: T; readonly error?: undefined } | { readonly error: string };

const ok = <T>(value: T): Checked<T> => ({ value });
const fail = <T>(error: string): Checked<T> => ({ error });

/** The compressed spelling, so that `[0::1]` and `[::1]` are one address. */
const canonicalIPv6 = (host: string) => new URL(`http://[${host}]/`).hostname.slice(1, -1);

/** `127.0.0.1:80`, `[::1]:80`, `*:80`, `localhost:80`, `80`; a bare address means port 80
 * as in nginx. Host names other than `localhost` are not resolved. */
export function parseListenAddress(arg: string): Checked<{ host: string; port: number }> {
  let host: string;
  let port: string | undefined;
  if (arg.startsWith('[')) {
    const close = arg.indexOf(']');
    host = arg.slice(1, close);
    const rest = arg.slice(close + 1);
    if (close < 0 || isIP(host) !== 6 || (rest !== '' && !rest.startsWith(':'))) return fail(`invalid IPv6 address in "${arg}" of the "listen" directive`);
    host = canonicalIPv6(host);
    port = rest ? rest.slice(1) : undefined;
  } else if (/^\d+$/.test(arg)) {
    host = '*';
    port = arg;
  } else {
    const colon = arg.lastIndexOf(':');
    host = colon < 0 ? arg : arg.slice(0, colon);
    port = colon < 0 ? undefined : arg.slice(colon + 1);
    if (host === 'unix') return fail(`unix domain sockets are not supported in "${arg}" of the "listen" directive`);
    if (host !== '*' && host !== 'localhost' && isIP(host) !== 4) return fail(`invalid host in "${arg}" of the "listen" directive`);
  }
  const number = port === undefined ? 80 : /^\d{1,5}$/.test(port) ? Number(port) : 0;
  if (number < 1 || number > 65535) return fail(`invalid port in "${arg}" of the "listen" directive`);
  return ok({ host: host === '*' ? '0.0.0.0' : host === 'localhost' ? '127.0.0.1' : host, port: number });
}

/** `host:port` as nginx prints a listen address, IPv6 in brackets. */
export const listenAddress = (l: { host: string; port: number }): string =>
  `${l.host.includes(':') ? `[${l.host}]` : l.host}:${l.port}`;

/** `allow` / `deny`: `all`, an address, or an address with a prefix length. */
export function checkAccessAddress(arg: string): string | undefined {
  if (arg === 'all') return undefined;
  if (arg.startsWith('unix:')) return `"unix:" addresses are not supported`;
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

/** The variables an `api` path may hold: those src/api/mapping.ts substitutes. */
const apiVariable = (name: string) => name === 'uri' || name === 'host' || /^arg_\w+$/.test(name) || /^[1-9]$/.test(name);

/** `api <path>`: an absolute API path, or one that begins with a variable (`$uri`). */
export function checkApiPath(arg: string): string | undefined {
  if (!arg.startsWith('/') && !arg.startsWith('$')) return `invalid API path "${arg}" in "api" directive: it must start with "/" or a variable`;
  for (let i = arg.indexOf('$'); i >= 0; i = arg.indexOf('$', i + 1)) {
    let name: string;
    if (arg[i + 1] === '{') {
      const close = arg.indexOf('}', i + 2);
      if (close < 0) return `the closing bracket in "${arg.slice(i + 2)}" variable is missing`;
      name = arg.slice(i + 2, close);
    } else {
      // A capture is one digit, as mapping.ts reads `$12` as `$1` then `2`.
      name = /^(\d|\w+)/.exec(arg.slice(i + 1))?.[0] ?? '';
    }
    if (!/^\w+$/.test(name)) return `invalid variable name in "${arg}"`;
    if (!apiVariable(name)) return `unknown "${name}" variable`;
  }
  return undefined;
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
  if (arg.startsWith('@')) return fail(`named location "${arg}" is not supported`);
  const modifier = modifiers.find((m) => arg.startsWith(m));
  if (!modifier) return ok({ modifier: '', path: arg });
  if (arg === modifier) return fail(`invalid number of arguments in "location" directive`);
  return ok({ modifier, path: arg.slice(modifier.length) });
}
