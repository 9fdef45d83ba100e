// What the proxy rewrites in a peer's answer: Location and Refresh (`proxy_redirect`), and
// a Set-Cookie's Domain and Path (`proxy_cookie_domain`, `proxy_cookie_path`). A rule's
// text may hold variables, read per request; a regex's captures are its replacement's
// $1..$9.
import type { ProxyRedirect } from '../proxy/config.js';
import { compileValue } from '../config/variables.js';
import type { HttpContext } from './variables.js';

/** A rule compiled: `from` a regex, a text, or a text read per request. */
export interface Rewrite {
  readonly from: RegExp | string | ((c: HttpContext) => string);
  readonly to: (c: HttpContext) => string;
}

export function compileRewrites(rules: readonly ProxyRedirect[]): Rewrite[] {
  return rules.map((r) => ({ from: typeof r.from === 'string' && r.from.includes('$') ? compileValue(r.from) : r.from, to: compileValue(r.to) }));
}

const text = (from: Rewrite['from'], c: HttpContext): string => (typeof from === 'function' ? from(c) : (from as string));
const withCaptures = (c: HttpContext, m: RegExpExecArray): HttpContext => Object.create(c, { captures: { value: m.slice(1) } });

/** proxy_redirect: the first rule whose text begins the value replaces that part; one
 * whose regex matches it replaces all of it, as nginx's regex rewrite does. */
export function redirected(rules: readonly Rewrite[], value: string, c: HttpContext): string {
  return firstRewrite(rules, value, c, (from, r) => (value.startsWith(from) ? r.to(c) + value.slice(from.length) : undefined));
}

/** Refresh's `url=` part, as proxy_redirect rewrites it. */
export function refreshRedirected(rules: readonly Rewrite[], value: string, c: HttpContext): string {
  const m = /url=/i.exec(value);
  if (!m) return value;
  const at = m.index + m[0].length;
  return value.slice(0, at) + redirected(rules, value.slice(at), c);
}

/** The first rule that matches a value (a Location, a cookie attribute): a regex replaces all of it;
 * a text rule is `byText`'s to judge (undefined: no match). */
function firstRewrite(rules: readonly Rewrite[], value: string, c: HttpContext, byText: (from: string, r: Rewrite) => string | undefined): string {
  for (const r of rules) {
    if (r.from instanceof RegExp) {
      const m = r.from.exec(value);
      if (m) return r.to(withCaptures(c, m));
      continue;
    }
    const out = byText(text(r.from, c), r);
    if (out !== undefined) return out;
  }
  return value;
}

/** A cookie's domain: a text rule compares the whole of it, caseless, without a leading
 * dot on either side, and keeps its dot. */
function domainRewritten(rules: readonly Rewrite[], value: string, c: HttpContext): string {
  const dot = value.startsWith('.') ? '.' : '';
  const bare = value.slice(dot.length).toLowerCase();
  const undot = (s: string) => (s.startsWith('.') ? s.slice(1) : s);
  return firstRewrite(rules, value, c, (from, r) => (undot(from).toLowerCase() === bare ? dot + undot(r.to(c)) : undefined));
}


/** A Set-Cookie value with its Domain and Path attributes rewritten. */
export function cookieRewritten(domains: readonly Rewrite[], paths: readonly Rewrite[], value: string, c: HttpContext): string {
  return value.replace(/(;\s*)(domain|path)(\s*=\s*)([^;]*)/gi, (all, sep: string, key: string, eq: string, v: string) => {
    const rules = key.length === 6 ? domains : paths;
    if (rules.length === 0) return all;
    const rewritten = key.length === 6 ? domainRewritten(rules, v.trim(), c) : redirected(rules, v.trim(), c);
    return `${sep}${key}${eq}${rewritten}`;
  });
}
