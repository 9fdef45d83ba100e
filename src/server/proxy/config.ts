// The proxy module's configuration, declared beside its code (composed into the loader's
// table by config/directives.ts): `proxy_pass` and the `proxy_*` directives of http,
// server and location. proxy_cache and its kin are the cache module's (cache/config.ts).
import type { At, Context, InheritableLevel } from '../config/levels.js';
import type { NextUpstreamCondition, Origin, ProxySsl } from '../config/model.js';
import type { ProxyClientCertificate } from '../ssl/proxy.js';
import { confFile, readable } from '../config/files.js';
import { milliseconds, whole } from '../config/numbers.js';
import { compileRegex } from '../config/regex.js';
import { define, type DirectiveSpec } from '../config/spec.js';
import type { Directive } from '../config/syntax.js';
import { checkHeader, checkVariables, parseProxyPass, parseSize } from '../config/values.js';
import { knownHttpVariable } from '../config/variables.js';

/** `proxy_redirect <redirect> <replacement>`, `proxy_cookie_domain` and
 * `proxy_cookie_path`: `from` a text (with variables, read per request) or a regex (`~`,
 * `~*`), `to` a text with variables ($1..$9 for a regex's captures). */
export interface ProxyRedirect {
  readonly from: string | RegExp;
  readonly to: string;
}

/**
 * The proxy settings this module adds to a location's proxying (ProxyConfig.options),
 * inherited as nginx merges them.
 */
export interface ProxyOptions {
  /** `proxy_next_upstream_timeout` in ms; 0: no limit (nginx's default). */
  readonly nextUpstreamTimeout: number;
  /** `proxy_http_version`: zonal's default 1.1 keeps connections to the peers (nginx's is
   * 1.0, one connection per request); 1.0 sends HTTP/1.0 and closes after each. */
  readonly httpVersion: '1.0' | '1.1';
  /** `proxy_buffering`, `proxy_request_buffering`, `proxy_buffer_size`, `proxy_buffers`,
   * `proxy_busy_buffers_size`: accepted and kept; zonal streams both ways with
   * backpressure whatever they say (docs/server.md). */
  readonly buffering: boolean;
  readonly requestBuffering: boolean;
  /** `proxy_hide_header` names (lowercase) on top of nginx's default list, less those
   * `proxy_pass_header` lets through. */
  readonly hideHeaders: readonly string[];
  readonly passHeaders: readonly string[];
  /** `proxy_intercept_errors on`: a peer's answer of 300 or more is replaced by the
   * server's own page for its code. */
  readonly interceptErrors: boolean;
  /** `proxy_redirect`: the rewrites of Location and Refresh, in order; empty for `off`.
   * `default` is already turned into its rewrite. */
  readonly redirects: readonly ProxyRedirect[];
  /** `proxy_cookie_domain` and `proxy_cookie_path`: the rewrites of a Set-Cookie's Domain
   * and Path, in order; empty for `off` or none. */
  readonly cookieDomains?: readonly ProxyRedirect[];
  readonly cookiePaths?: readonly ProxyRedirect[];
  /** `proxy_ssl_certificate`, `proxy_ssl_certificate_key`, `proxy_ssl_password_file`:
   * absolute paths of the client certificate presented to the peers. */
  readonly sslCertificate?: string;
  readonly sslCertificateKey?: string;
  readonly sslPasswordFile?: string;
  /** `proxy_method`: the method sent to the peers instead of the client's, with variables. */
  readonly method?: string;
  /** `proxy_limit_rate`: bytes per second read from a peer for one request; absent: no limit. */
  readonly limitRate?: number;
  /** `proxy_ignore_headers`: the peer's headers (lowercase) whose meaning is not acted
   * on: X-Accel-Redirect and X-Accel-Limit-Rate here, the cache's (Cache-Control,
   * Expires, X-Accel-Expires, Set-Cookie, Vary) in cache/policy.ts. Absent: none. */
  readonly ignoreHeaders?: ReadonlySet<string>;
}

/** `proxy_redirect` as written in a block: `default`, `off` or rewrites. */
type RedirectSetting = { readonly kind: 'off' } | { readonly kind: 'list'; readonly list: Array<ProxyRedirect | 'default'> };
/** `proxy_cookie_domain` or `proxy_cookie_path` as written in a block: `off` is an empty list. */
type RewriteList = ProxyRedirect[];

// The loader's levels and model carry the module's settings without knowing the module
// (as limits/config.ts does).
declare module '../config/levels.js' {
  interface InheritableLevel {
    proxyNextUpstreamTimeout?: number;
    proxyHttpVersion?: '1.0' | '1.1';
    proxyBuffering?: boolean;
    proxyRequestBuffering?: boolean;
    /** Only those written in this block: a block with any replaces the outer list (nginx). */
    proxyHideHeaders?: string[];
    proxyPassHeaders?: string[];
    proxyInterceptErrors?: boolean;
    proxyRedirect?: RedirectSetting;
    proxyCookieDomain?: RewriteList;
    proxyCookiePath?: RewriteList;
    proxySslCertificate?: At<string>;
    proxySslCertificateKey?: string;
    proxySslPasswordFile?: string;
    proxyMethod?: string;
    proxyLimitRate?: number;
    proxyIgnoreHeaders?: string[];
  }
}
declare module '../config/model.js' {
  interface ProxyConfig {
    /** This module's further settings (proxy/config.ts). */
    readonly options: ProxyOptions;
  }
}

/** What a level says of the options, inherited: the outer level's where it says nothing. */
export type MergedProxyOptions = Pick<
  InheritableLevel,
  | 'proxyNextUpstreamTimeout'
  | 'proxyHttpVersion'
  | 'proxyBuffering'
  | 'proxyRequestBuffering'
  | 'proxyHideHeaders'
  | 'proxyPassHeaders'
  | 'proxyInterceptErrors'
  | 'proxyRedirect'
  | 'proxyCookieDomain'
  | 'proxyCookiePath'
  | 'proxySslCertificate'
  | 'proxySslCertificateKey'
  | 'proxySslPasswordFile'
  | 'proxyMethod'
  | 'proxyLimitRate'
  | 'proxyIgnoreHeaders'
>;

export function mergeProxyOptions(outer: MergedProxyOptions, level: InheritableLevel): MergedProxyOptions {
  return {
    proxyNextUpstreamTimeout: level.proxyNextUpstreamTimeout ?? outer.proxyNextUpstreamTimeout,
    proxyHttpVersion: level.proxyHttpVersion ?? outer.proxyHttpVersion,
    proxyBuffering: level.proxyBuffering ?? outer.proxyBuffering,
    proxyRequestBuffering: level.proxyRequestBuffering ?? outer.proxyRequestBuffering,
    proxyHideHeaders: level.proxyHideHeaders ?? outer.proxyHideHeaders,
    proxyPassHeaders: level.proxyPassHeaders ?? outer.proxyPassHeaders,
    proxyInterceptErrors: level.proxyInterceptErrors ?? outer.proxyInterceptErrors,
    proxyRedirect: level.proxyRedirect ?? outer.proxyRedirect,
    proxyCookieDomain: level.proxyCookieDomain ?? outer.proxyCookieDomain,
    proxyCookiePath: level.proxyCookiePath ?? outer.proxyCookiePath,
    proxySslCertificate: level.proxySslCertificate ?? outer.proxySslCertificate,
    proxySslCertificateKey: level.proxySslCertificateKey ?? outer.proxySslCertificateKey,
    proxySslPasswordFile: level.proxySslPasswordFile ?? outer.proxySslPasswordFile,
    proxyMethod: level.proxyMethod ?? outer.proxyMethod,
    proxyLimitRate: level.proxyLimitRate ?? outer.proxyLimitRate,
    proxyIgnoreHeaders: level.proxyIgnoreHeaders ?? outer.proxyIgnoreHeaders,
  };
}

/** The options of a location's `proxy_pass`: `pass` its URL as written (`http://u/a/`),
 * `location` the location's path (for `proxy_redirect default`). Errors go to `error`. */
export function proxyOptions(
  m: MergedProxyOptions,
  pass: { readonly url: string; readonly uri?: string; readonly regex: boolean },
  location: string,
  error: (at: At<unknown>['origin'], message: string) => void,
): ProxyOptions {
  const redirect = m.proxyRedirect ?? { kind: 'list', list: ['default'] };
  // nginx's default: the proxy_pass URL becomes the location's path (without a URI part,
  // `http://u/` becomes `/`). With variables in the URI, or a regex location, there is
  // no such prefix: nginx then makes no default rewrite.
  const byDefault = (): ProxyRedirect[] => {
    // Nor with variables in the host (a URL with variables has no URI part of its own).
    if (pass.uri === undefined) return pass.url.includes('$') ? [] : [{ from: `${pass.url}/`, to: '/' }];
    return !pass.uri.includes('$') && !pass.regex ? [{ from: pass.url, to: location }] : [];
  };
  const redirects = redirect.kind === 'off' ? [] : redirect.list.flatMap((r) => (r === 'default' ? byDefault() : [r]));
  return {
    nextUpstreamTimeout: m.proxyNextUpstreamTimeout ?? 0,
    httpVersion: m.proxyHttpVersion ?? '1.1',
    buffering: m.proxyBuffering ?? true,
    requestBuffering: m.proxyRequestBuffering ?? true,
    hideHeaders: m.proxyHideHeaders ?? [],
    passHeaders: m.proxyPassHeaders ?? [],
    interceptErrors: m.proxyInterceptErrors ?? false,
    redirects,
    ...(m.proxyIgnoreHeaders?.length ? { ignoreHeaders: new Set(m.proxyIgnoreHeaders) } : {}),
    ...(m.proxyLimitRate ? { limitRate: m.proxyLimitRate } : {}),
    ...(m.proxyCookieDomain?.length ? { cookieDomains: m.proxyCookieDomain } : {}),
    ...(m.proxyCookiePath?.length ? { cookiePaths: m.proxyCookiePath } : {}),
    ...(m.proxyMethod !== undefined ? { method: m.proxyMethod } : {}),
    ...proxyClientCertificate(m, error),
  };
}

const inheritable = ['http', 'server', 'location'] as const;

const IGNORABLE = new Set(['x-accel-redirect', 'x-accel-expires', 'x-accel-limit-rate', 'x-accel-buffering', 'x-accel-charset', 'expires', 'cache-control', 'set-cookie', 'vary']);

/** `proxy_connect_timeout`, `proxy_read_timeout`, `proxy_send_timeout`. */
function proxyTimeout(set: (level: InheritableLevel, ms: number) => void) {
  return define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const ms = milliseconds(d.args[0]);
      if (ms === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
      else set(level, ms);
    },
  });
}

/** An on|off directive of `contexts`. */
function onOff<L>(contexts: readonly Context[], set: (level: L, on: boolean, d: Directive) => void): DirectiveSpec {
  return {
    contexts,
    args: [1, 1],
    apply(d, level, c) {
      const arg = d.args[0];
      if (arg !== 'on' && arg !== 'off') c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "on" or "off"`);
      else set(level as unknown as L, arg === 'on', d);
    },
  };
}

const proxyFlag = (set: (level: InheritableLevel, on: boolean, d: Directive) => void) => onOff(inheritable, set);

/** What a block says of TLS toward the peers (`proxy_ssl_*`): http's blocks and, with
 * the same directives, stream's. */
export interface ProxySslLevel {
  proxySslServerName?: boolean;
  proxySslName?: string;
  proxySslVerify?: At<boolean>;
  /** Absolute path. */
  proxySslTrustedCertificate?: string;
  proxySslSessionReuse?: boolean;
  proxySslCertificate?: At<string>;
  proxySslCertificateKey?: string;
  proxySslPasswordFile?: string;
}

/** The proxy_ssl_* directives are written the same in http and in stream. */
const PROXY_SSL = [...inheritable, 'stream', 'stream_server'] as const;
const proxySslFlag = (set: (level: ProxySslLevel, on: boolean, d: Directive) => void) => onOff(PROXY_SSL, set);

/** TLS to the peers of `upstream`, with nginx's defaults (no SNI, no verification,
 * sessions reused, the name the upstream's); `proxy_ssl_verify on` needs a CA to verify
 * against, as in nginx (zonal does not read the system's store): undefined then, after
 * `report`. */
export function settleProxySsl(l: ProxySslLevel, upstream: string, report: (verify: At<boolean>, message: string) => void): ProxySsl | undefined {
  const verify = l.proxySslVerify?.value ?? false;
  if (verify && l.proxySslTrustedCertificate === undefined) {
    report(l.proxySslVerify!, `no "proxy_ssl_trusted_certificate" for "proxy_ssl_verify"`);
    return undefined;
  }
  return {
    serverName: l.proxySslServerName ?? false,
    name: l.proxySslName ?? upstream.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1'),
    verify,
    ...(l.proxySslTrustedCertificate !== undefined ? { trusted: l.proxySslTrustedCertificate } : {}),
    sessionReuse: l.proxySslSessionReuse ?? true,
  };
}

/** proxy_ssl_certificate without its key is refused, as nginx's. */
export function proxyClientCertificate(m: ProxySslLevel, error: (at: Origin, message: string) => void): ProxyClientCertificate {
  const cert = m.proxySslCertificate;
  if (cert && m.proxySslCertificateKey === undefined) error(cert.origin, `no "proxy_ssl_certificate_key" is defined for certificate "${cert.value}"`);
  return cert && m.proxySslCertificateKey !== undefined
    ? { sslCertificate: cert.value, sslCertificateKey: m.proxySslCertificateKey, ...(m.proxySslPasswordFile ? { sslPasswordFile: m.proxySslPasswordFile } : {}) }
    : {};
}

/** Every condition of nginx's proxy_next_upstream but `updating` (the cache's). */
const NEXT_UPSTREAM: readonly NextUpstreamCondition[] = [
  'error',
  'timeout',
  'invalid_header',
  'http_500',
  'http_502',
  'http_503',
  'http_504',
  'http_403',
  'http_404',
  'http_429',
  'non_idempotent',
];

/** `proxy_hide_header`, `proxy_pass_header`: a header name each, lowercase. */
function headerList(set: (level: InheritableLevel, name: string) => void) {
  return define({
    contexts: inheritable,
    args: [1, 1],
    multiple: true,
    apply(d, level, c) {
      const name = d.args[0];
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) c.error(d.origin, `invalid header name "${name}" in "${d.name}" directive`);
      else set(level, name.toLowerCase());
    },
  });
}

/** `proxy_buffer_size`, `proxy_busy_buffers_size`: a size, accepted (zonal streams). */
function acceptedSize() {
  return define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, _level, c) {
      if (parseSize(d.args[0]) === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
    },
  });
}

/** A `proxy_redirect` rewrite: its replacement's variables are the request's, and a
 * regex's captures. */
/** One rewrite of `d`: a regex (`~`, `~*`; always caseless for a cookie's domain, as
 * nginx compiles those) or a text, either side with variables. */
function redirectOf(d: Directive, from: string, to: string, error: (message: string) => void): ProxyRedirect | undefined {
  let pattern: string | RegExp = from;
  if (from.startsWith('~')) {
    const caseless = from.startsWith('~*') || d.name === 'proxy_cookie_domain';
    const source = from.slice(from.startsWith('~*') ? 2 : 1);
    try {
      pattern = compileRegex(source, caseless);
    } catch (e) {
      return void error(`invalid regular expression "${source}" in "${d.name}" directive: ${(e as Error).message}`);
    }
  } else {
    const bad = checkVariables(from, knownHttpVariable);
    if (bad) return void error(bad);
  }
  const bad = checkVariables(to, knownHttpVariable);
  if (bad) return void error(bad);
  return { from: pattern, to };
}

/** `proxy_cookie_domain` and `proxy_cookie_path`: `off`, or rewrites, several allowed. */
function cookieRewrite(get: (level: InheritableLevel) => RewriteList | undefined, set: (level: InheritableLevel, list: RewriteList) => void) {
  return define({
    contexts: inheritable,
    args: [1, 2],
    multiple: true,
    apply(d, level, c) {
      const [from, to] = d.args;
      const current = get(level);
      if (to === undefined) {
        if (from !== 'off') return c.error(d.origin, `invalid parameter "${from}" in "${d.name}" directive`);
        if (current !== undefined) return c.error(d.origin, `"${d.name}" directive is duplicate`);
        return set(level, []);
      }
      const rewrite = redirectOf(d, from, to, (message) => c.error(d.origin, message));
      if (!rewrite) return;
      if (current === undefined) set(level, [rewrite]);
      else current.push(rewrite);
    },
  });
}

/** `proxy_next_upstream_timeout`'s value, in http and stream alike: milliseconds, 0 (nginx's
 * default) for no limit. */
export function nextUpstreamTimeout(d: Directive, c: { error(at: Directive['origin'], message: string): void }): number | undefined {
  const ms = d.args[0] === '0' ? 0 : milliseconds(d.args[0]);
  if (ms === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
  return ms;
}

export const proxyDirectives: Readonly<Record<string, DirectiveSpec>> = {
  proxy_next_upstream_timeout: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const ms = nextUpstreamTimeout(d, c);
      if (ms !== undefined) level.proxyNextUpstreamTimeout = ms;
    },
  }),

  proxy_http_version: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const v = d.args[0];
      if (v !== '1.0' && v !== '1.1') c.error(d.origin, `invalid value "${v}" in "proxy_http_version" directive, it must be "1.0" or "1.1"`);
      else level.proxyHttpVersion = v;
    },
  }),

  proxy_buffering: proxyFlag((level, on) => (level.proxyBuffering = on)),
  proxy_request_buffering: proxyFlag((level, on) => (level.proxyRequestBuffering = on)),
  proxy_intercept_errors: proxyFlag((level, on) => (level.proxyInterceptErrors = on)),
  proxy_buffer_size: acceptedSize(),
  proxy_busy_buffers_size: acceptedSize(),
  // zonal writes no response to a temporary file: it streams (proxy_max_temp_file_size 0,
  // which configurations write to say so, is what it does anyway).
  proxy_max_temp_file_size: acceptedSize(),
  proxy_temp_file_write_size: acceptedSize(),
  // Of nginx's hash table of the headers it sends; node's are a map.
  proxy_headers_hash_max_size: acceptedSize(),
  proxy_headers_hash_bucket_size: acceptedSize(),
  proxy_buffers: define({
    contexts: inheritable,
    args: [2, 2],
    apply(d, _level, c) {
      const [n, size] = d.args;
      if (whole(n, 2) === undefined) c.error(d.origin, `invalid value "${n}" in "proxy_buffers" directive, at least 2 buffers`);
      else if (parseSize(size) === undefined) c.error(d.origin, `invalid value "${size}" in "proxy_buffers" directive`);
    },
  }),

  // nginx's list (ngx_http_upstream_ignore_headers_masks); X-Accel-Buffering and
  // X-Accel-Charset are taken, and ignored whatever it says: zonal streams, and has no
  // charset module.
  proxy_ignore_headers: define({
    contexts: inheritable,
    args: [1, Infinity],
    apply(d, level, c) {
      const bad = d.args.find((a) => !IGNORABLE.has(a.toLowerCase()));
      if (bad !== undefined) return c.error(d.origin, `invalid value "${bad}" in "${d.name}" directive`);
      level.proxyIgnoreHeaders = d.args.map((a) => a.toLowerCase());
    },
  }),
  proxy_hide_header: headerList((level, name) => (level.proxyHideHeaders ??= []).push(name)),
  proxy_pass_header: headerList((level, name) => (level.proxyPassHeaders ??= []).push(name)),

  // `proxy_redirect default | off | <redirect> <replacement>`, several rewrites allowed.
  proxy_redirect: define({
    contexts: inheritable,
    args: [1, 2],
    multiple: true,
    apply(d, level, c) {
      const [from, to] = d.args;
      const current = level.proxyRedirect;
      if (to === undefined && from !== 'default' && from !== 'off') return c.error(d.origin, `invalid parameter "${from}" in "proxy_redirect" directive`);
      if ((from === 'off' && to === undefined && current !== undefined) || current?.kind === 'off')
        return c.error(d.origin, `"proxy_redirect off" cannot be used with other "proxy_redirect" directives`);
      if (from === 'off' && to === undefined) return void (level.proxyRedirect = { kind: 'off' });
      const redirect = to === undefined ? 'default' : redirectOf(d, from, to, (message) => c.error(d.origin, message));
      if (!redirect) return;
      if (current === undefined) level.proxyRedirect = { kind: 'list', list: [redirect] };
      else current.list.push(redirect);
    },
  }),

  proxy_cookie_domain: cookieRewrite((l) => l.proxyCookieDomain, (l, list) => (l.proxyCookieDomain = list)),
  proxy_cookie_path: cookieRewrite((l) => l.proxyCookiePath, (l, list) => (l.proxyCookiePath = list)),

  // A client certificate for the peers of `proxy_pass https://` (and of stream's proxy_ssl).
  proxy_ssl_certificate: define({
    contexts: PROXY_SSL,
    args: [1, 1],
    apply(d, level, c) {
      if (d.args[0].includes('$')) return c.error(d.origin, `variables in "${d.name}" are not supported`);
      const file = confFile(d, c);
      level.proxySslCertificate = { value: file, origin: d.origin };
    },
  }),
  proxy_ssl_certificate_key: define({
    contexts: PROXY_SSL,
    args: [1, 1],
    apply(d, level, c) {
      if (d.args[0].includes('$')) return c.error(d.origin, `variables in "${d.name}" are not supported`);
      const file = confFile(d, c);
      level.proxySslCertificateKey = file;
    },
  }),
  proxy_ssl_password_file: define({
    contexts: PROXY_SSL,
    args: [1, 1],
    apply(d, level, c) {
      const file = confFile(d, c);
      level.proxySslPasswordFile = file;
    },
  }),

  proxy_pass: define({
    contexts: ['location', 'if'],
    args: [1, 1],
    apply(d, location, c) {
      const parsed = parseProxyPass(d.args[0]);
      if (parsed.error !== undefined) return c.error(d.origin, parsed.error);
      // A regex or a condition says which requests, not which part of their URI to
      // replace; a URI with variables is the whole URI, which needs no part.
      const { uri } = parsed.value;
      if (uri !== undefined && !uri.includes('$')) {
        if (location.kind === 'if') return c.error(d.origin, '"proxy_pass" cannot have URI part inside "if" statement, unless it has variables');
        if (location.modifier === '~' || location.modifier === '~*')
          return c.error(d.origin, '"proxy_pass" cannot have URI part in location given by regular expression');
      }
      location.proxyPass = { ...parsed.value, origin: d.origin };
    },
  }),

  // `proxy_limit_rate <rate>`: nginx limits its reads from the peer; zonal, which streams
  // the answer with backpressure, paces what it writes of it, which paces the reads.
  proxy_limit_rate: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const rate = parseSize(d.args[0]);
      if (rate === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
      else level.proxyLimitRate = rate;
    },
  }),

  // `proxy_method <method>`: a value with variables, as nginx has taken since 1.11.6.
  proxy_method: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const error = checkVariables(d.args[0], knownHttpVariable);
      if (error) c.error(d.origin, error);
      else level.proxyMethod = d.args[0];
    },
  }),

  proxy_set_header: define({
    contexts: inheritable,
    args: [2, 2],
    multiple: true,
    apply(d, level, c) {
      const [name, value] = d.args;
      const error = checkHeader(name, value);
      if (error) c.error(d.origin, error);
      else level.proxySetHeaders.push({ name, value });
    },
  }),

  // TLS to the peers of `proxy_pass https://`, with nginx's defaults: no SNI, no
  // verification, sessions reused.
  proxy_ssl_server_name: proxySslFlag((level, on) => (level.proxySslServerName = on)),
  proxy_ssl_session_reuse: proxySslFlag((level, on) => (level.proxySslSessionReuse = on)),
  proxy_ssl_verify: proxySslFlag((level, on, d) => (level.proxySslVerify = { value: on, origin: d.origin })),
  proxy_ssl_name: define({
    contexts: PROXY_SSL,
    args: [1, 1],
    apply(d, level, c) {
      if (d.args[0].includes('$')) c.error(d.origin, `variables in "proxy_ssl_name" are not supported`);
      else level.proxySslName = d.args[0];
    },
  }),
  proxy_ssl_trusted_certificate: define({
    contexts: PROXY_SSL,
    args: [1, 1],
    apply(d, level, c) {
      const file = confFile(d, c);
      if (c.disk && !readable(file)?.includes('-----BEGIN CERTIFICATE-----'))
        return c.error(d.origin, `cannot load certificate "${file}" of the "${d.name}" directive: no PEM certificate in it`);
      level.proxySslTrustedCertificate = file;
    },
  }),
  proxy_connect_timeout: proxyTimeout((level, ms) => (level.proxyConnectTimeout = ms)),
  proxy_read_timeout: proxyTimeout((level, ms) => (level.proxyReadTimeout = ms)),
  proxy_send_timeout: proxyTimeout((level, ms) => (level.proxySendTimeout = ms)),

  // nginx's conditions; `updating` is refused rather than silently ignored (it is the
  // cache's, and zonal's cache does not serve stale answers while updating).
  proxy_next_upstream: define({
    contexts: inheritable,
    args: [1, Infinity],
    apply(d, level, c) {
      if (d.args.length === 1 && d.args[0] === 'off') return void (level.proxyNextUpstream = []);
      const conditions: NextUpstreamCondition[] = [];
      for (const arg of d.args) {
        const condition = NEXT_UPSTREAM.find((n) => n === arg);
        if (!condition) return c.error(d.origin, `invalid value "${arg}" in "proxy_next_upstream" directive`);
        if (!conditions.includes(condition)) conditions.push(condition);
      }
      level.proxyNextUpstream = conditions;
    },
  }),

  proxy_next_upstream_tries: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const n = whole(d.args[0], 0);
      if (n === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "proxy_next_upstream_tries" directive`);
      else level.proxyNextUpstreamTries = n;
    },
  }),

};
