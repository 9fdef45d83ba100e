// `expires` (ngx_http_headers_module): the Expires and Cache-Control an answer gets, from
// nginx's rules. A time after now is `max-age=<seconds>`; before now, `no-cache`. `epoch`
// and `max` are nginx's fixed pair, `modified` counts from the answer's Last-Modified,
// and `@<time of day>` names the next such time.
import { parseTime } from '../../metrics/peers.js';

export type Expires =
  | { readonly kind: 'off' }
  | { readonly kind: 'epoch' }
  | { readonly kind: 'max' }
  /** `seconds` from now or from the Last-Modified; `daily`: seconds after midnight. */
  | { readonly kind: 'access' | 'modified' | 'daily'; readonly seconds: number };

const EPOCH = { expires: 'Thu, 01 Jan 1970 00:00:01 GMT', cacheControl: 'no-cache' } as const;
const MAX = { expires: 'Thu, 31 Dec 2037 23:55:55 GMT', cacheControl: 'max-age=315360000' } as const;

/** `expires`'s arguments (`[modified] <time>`, `epoch`, `max`, `off`), or an error in nginx's words. */
export function parseExpires(args: readonly string[]): { value: Expires } | { error: string } {
  const invalid = { error: `invalid value "${args.join(' ')}" in "expires" directive` };
  if (args.length === 1 && (args[0] === 'off' || args[0] === 'epoch' || args[0] === 'max')) return { value: { kind: args[0] } };
  const modified = args.length === 2;
  if (modified && args[0] !== 'modified') return invalid;
  let text = args[args.length - 1];
  const daily = text.startsWith('@');
  if (daily) {
    if (modified) return { error: 'daily time cannot be used with "modified" parameter' };
    text = text.slice(1);
  }
  // nginx's examples write a sign either way: `modified +24h`, `-1`.
  const negative = !daily && text.startsWith('-');
  const s = parseTime(!daily && (negative || text.startsWith('+')) ? text.slice(1) : text, false);
  if (s === undefined) return invalid;
  if (daily && s > 24 * 3600) return { error: 'daily time value must be less than 24 hours' };
  return { value: { kind: daily ? 'daily' : modified ? 'modified' : 'access', seconds: negative ? -s : s } };
}

/** The two header values at `now` (ms), or undefined for `off` (or `modified` without a
 * Last-Modified, as nginx leaves those alone). */
export function expiresHeaders(e: Expires, now: number, lastModified?: string): { readonly expires: string; readonly cacheControl: string } | undefined {
  if (e.kind === 'off') return undefined;
  if (e.kind === 'epoch') return EPOCH;
  if (e.kind === 'max') return MAX;
  const nowS = Math.floor(now / 1000);
  let at: number;
  if (e.kind === 'access') at = nowS + e.seconds;
  else if (e.kind === 'modified') {
    const since = lastModified === undefined ? NaN : Date.parse(lastModified);
    if (Number.isNaN(since)) return undefined;
    at = Math.floor(since / 1000) + e.seconds;
  } else {
    // The next such time of day: today's if it is still ahead, else tomorrow's.
    const midnight = nowS - (nowS % 86_400);
    at = midnight + e.seconds;
    if (at <= nowS) at += 86_400;
  }
  const age = at - nowS;
  return { expires: new Date(at * 1000).toUTCString(), cacheControl: age < 0 ? 'no-cache' : `max-age=${age}` };
}
