// add_header and expires at run time: the values compiled once, added to a response's
// header list.
import { namesIn } from '../../api/variables.js';
import { compileValue } from '../config/variables.js';
import type { HttpContext } from '../http/variables.js';
import type { AddHeader } from './config.js';
import { expiresHeaders, parseExpires, type Expires } from './expires.js';
import { sendable } from './raw.js';

/** A value folded over lines (a line break and a tab or space, as nginx's
 * $ssl_client_cert is) as a recipient reads it (RFC 9112's obs-fold): one space for each
 * fold, since node sends no line break in a header. Any other line break still keeps the
 * header out. */
const unfold = (v: string) => (v.includes('\n') ? v.replace(/\r?\n[\t ]/g, ' ') : v);

const ADDED_TO = new Set([200, 201, 204, 206, 301, 302, 303, 304, 307, 308]);

/** `expires` of a list: parsed once, or per request when it reads variables. */
type ExpiresOf = (c: HttpContext) => Expires | undefined;

function compileExpires(text: string): ExpiresOf {
  const args = (t: string) => t.split(/\s+/).filter((a) => a !== '');
  if (!text.includes('$')) {
    const parsed = parseExpires(args(text));
    const value = 'error' in parsed ? undefined : parsed.value;
    return () => value;
  }
  const read = compileValue(text);
  return (c) => {
    const parsed = parseExpires(args(read(c)));
    return 'error' in parsed ? undefined : parsed.value;
  };
}

/** The value of `name` in a header list (name, value, ...), caseless; undefined when absent. */
function valueIn(headers: readonly string[], name: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) if (headers[i].length === name.length && headers[i].toLowerCase() === name) return headers[i + 1];
  return undefined;
}

/** Takes every `name` (lower case) out of a header list, in place. */
function drop(headers: string[], name: string): void {
  let kept = 0;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].length === name.length && headers[i].toLowerCase() === name) continue;
    headers[kept++] = headers[i];
    headers[kept++] = headers[i + 1];
  }
  headers.length = kept;
}

export class AddHeaders {
  private readonly list: Array<{ name: string; value: (c: HttpContext) => string; always: boolean }>;
  /** `expires` in force. */
  private readonly expires?: ExpiresOf;
  /** It replaces the Expires and Cache-Control an answer had: a caller that sets headers
   * apart from the list removes them first (replaces()). */
  readonly replacing: boolean;
  /** The values read no variable but $upstream_cache_status and $status: for one cache
   * status and one response status, the same headers every time (a cache hit's head is
   * reused). */
  readonly constant: boolean;
  private readonly variables: boolean;

  constructor(headers: readonly AddHeader[]) {
    const added = headers.filter((h) => !h.expires);
    const expires = headers.find((h) => h.expires);
    this.list = added.map((h) => ({ name: h.name, value: compileValue(h.value), always: h.always }));
    if (expires) this.expires = compileExpires(expires.value);
    this.replacing = expires !== undefined;
    const names = added.flatMap((h) => namesIn(h.value));
    this.variables = names.length > 0;
    // An expiry counted from now changes every second: only epoch and max are constant.
    const fixed = expires === undefined || /^(epoch|max|off)$/.test(expires.value);
    this.constant = fixed && names.every((name) => name === 'upstream_cache_status' || name === 'status');
  }

  /** Appends to `headers` (name, value, ...) what applies to a response of `status`; an
   * empty value adds nothing, as nginx, nor one that would split the head (CR, LF, NUL).
   * A value with another control character is added to `c.res`'s head apart. The values
   * see `status` as `$status`. */
  addTo(headers: string[], status: number, c: HttpContext): void {
    const listed = ADDED_TO.has(status);
    if (this.expires && listed) this.addExpires(headers, c);
    const ctx: HttpContext = this.variables && c.status !== status ? Object.create(c, { status: { value: status } }) : c;
    for (const h of this.list) {
      if (!listed && !h.always) continue;
      const v = sendable(c.res, h.name, unfold(h.value(ctx)));
      if (v) headers.push(h.name, v);
    }
  }

  /** nginx's ngx_http_set_expires: Expires, and one Cache-Control in place of all of them. */
  private addExpires(headers: string[], c: HttpContext): void {
    const e = this.expires!(c);
    if (e === undefined) return;
    const lastModified = valueIn(headers, 'last-modified') ?? (c.res?.getHeader('last-modified') as string | undefined);
    const set = expiresHeaders(e, Date.now(), lastModified);
    if (!set) return;
    drop(headers, 'expires');
    drop(headers, 'cache-control');
    headers.push('Expires', set.expires, 'Cache-Control', set.cacheControl);
  }
}
