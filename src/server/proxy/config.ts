// The proxy module's configuration, declared beside its code (composed into the loader's
// table by config/directives.ts): `proxy_pass` and the `proxy_*` directives of http,
// server and location. proxy_cache and its kin are the cache module's (cache/config.ts).
import type { InheritableLevel } from '../config/levels.js';
import type { NextUpstreamCondition } from '../config/model.js';
import { checkReadable, readable } from '../config/files.js';
import { milliseconds, whole } from '../config/numbers.js';
import { define, type DirectiveSpec } from '../config/spec.js';
import type { Directive } from '../config/syntax.js';
import { checkHeader, parseProxyPass } from '../config/values.js';

const inheritable = ['http', 'server', 'location'] as const;

/** `proxy_connect_timeout`, `proxy_read_timeout`. */
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

/** `proxy_ssl_server_name`, `proxy_ssl_session_reuse`, `proxy_ssl_verify`: on or off. */
function proxyFlag(set: (level: InheritableLevel, on: boolean, d: Directive) => void) {
  return define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const arg = d.args[0];
      if (arg !== 'on' && arg !== 'off') c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "on" or "off"`);
      else set(level, arg === 'on', d);
    },
  });
}

const NEXT_UPSTREAM: readonly NextUpstreamCondition[] = ['error', 'timeout', 'http_502', 'http_503', 'http_504'];

export const proxyDirectives: Readonly<Record<string, DirectiveSpec>> = {
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
  proxy_ssl_server_name: proxyFlag((level, on) => (level.proxySslServerName = on)),
  proxy_ssl_session_reuse: proxyFlag((level, on) => (level.proxySslSessionReuse = on)),
  proxy_ssl_verify: proxyFlag((level, on, d) => (level.proxySslVerify = { value: on, origin: d.origin })),
  proxy_ssl_name: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      if (d.args[0].includes('$')) c.error(d.origin, `variables in "proxy_ssl_name" are not supported`);
      else level.proxySslName = d.args[0];
    },
  }),
  proxy_ssl_trusted_certificate: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const file = c.path(d.args[0], 'conf');
      checkReadable(file, d, c);
      if (c.disk && !readable(file)?.includes('-----BEGIN CERTIFICATE-----'))
        return c.error(d.origin, `cannot load certificate "${file}" of the "${d.name}" directive: no PEM certificate in it`);
      level.proxySslTrustedCertificate = file;
    },
  }),
  proxy_connect_timeout: proxyTimeout((level, ms) => (level.proxyConnectTimeout = ms)),
  proxy_read_timeout: proxyTimeout((level, ms) => (level.proxyReadTimeout = ms)),

  // zonal retries on these conditions only; nginx's others (invalid_header, http_500,
  // http_404, non_idempotent, ...) are refused rather than silently ignored.
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
