// add_header at run time: the values compiled once, added to a response's header list.
import { compileValue, type VariableContext } from '../http/variables.js';
import { checkVariables } from '../config/values.js';
import type { AddHeader } from './config.js';

const ADDED_TO = new Set([200, 201, 204, 206, 301, 302, 303, 304, 307, 308]);

export class AddHeaders {
  private readonly list: Array<{ name: string; value: (c: VariableContext) => string; always: boolean }>;
  /** The values read no variable but $upstream_cache_status: for one cache status and
   * one response status, the same headers every time (a cache hit's head is reused). */
  readonly constant: boolean;

  constructor(headers: readonly AddHeader[]) {
    this.list = headers.map((h) => ({ name: h.name, value: compileValue(h.value), always: h.always }));
    this.constant = headers.every((h) => checkVariables(h.value, (name) => name === 'upstream_cache_status') === undefined);
  }

  /** Appends to `headers` (name, value, ...) what applies to a response of `status`; an
   * empty value adds nothing, as nginx. */
  addTo(headers: string[], status: number, c: VariableContext): void {
    const listed = ADDED_TO.has(status);
    for (const h of this.list) {
      if (!listed && !h.always) continue;
      const v = h.value(c);
      if (v !== '' && !/[\r\n\0]/.test(v)) headers.push(h.name, v);
    }
  }
}
