// add_header at run time: the values compiled once, added to a response's header list.
import { namesIn } from '../../api/variables.js';
import { compileValue } from '../config/variables.js';
import type { HttpContext } from '../http/variables.js';
import type { AddHeader } from './config.js';

/** A value folded over lines (a line break and a tab or space, as nginx's
 * $ssl_client_cert is) as a recipient reads it (RFC 9112's obs-fold): one space for each
 * fold, since node sends no line break in a header. Any other line break still keeps the
 * header out. */
const unfold = (v: string) => (v.includes('\n') ? v.replace(/\r?\n[\t ]/g, ' ') : v);

const ADDED_TO = new Set([200, 201, 204, 206, 301, 302, 303, 304, 307, 308]);

export class AddHeaders {
  private readonly list: Array<{ name: string; value: (c: HttpContext) => string; always: boolean }>;
  /** The values read no variable but $upstream_cache_status and $status: for one cache
   * status and one response status, the same headers every time (a cache hit's head is
   * reused). */
  readonly constant: boolean;
  private readonly variables: boolean;

  constructor(headers: readonly AddHeader[]) {
    this.list = headers.map((h) => ({ name: h.name, value: compileValue(h.value), always: h.always }));
    const names = headers.flatMap((h) => namesIn(h.value));
    this.variables = names.length > 0;
    this.constant = names.every((name) => name === 'upstream_cache_status' || name === 'status');
  }

  /** Appends to `headers` (name, value, ...) what applies to a response of `status`; an
   * empty value adds nothing, as nginx. The values see `status` as `$status`. */
  addTo(headers: string[], status: number, c: HttpContext): void {
    const listed = ADDED_TO.has(status);
    const ctx: HttpContext = this.variables && c.status !== status ? Object.create(c, { status: { value: status } }) : c;
    for (const h of this.list) {
      if (!listed && !h.always) continue;
      const v = unfold(h.value(ctx));
      if (v !== '' && !/[\r\n\0]/.test(v)) headers.push(h.name, v);
    }
  }
}
