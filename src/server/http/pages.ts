// The answers the server writes itself: nginx's small HTML error pages, `return` with
// its text or redirect, and JSON errors for API locations.
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { ApiResponse } from '../../api/types.js';
import type { ReturnConfig } from '../config/model.js';
import { compileValue, type VariableContext } from './variables.js';

/** Codes whose `return` argument is a URL. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function reason(code: number): string {
  return STATUS_CODES[code] ?? '';
}

/** nginx's error page: what an operator sees in a browser for a 403, 404, 500... */
export function errorPage(code: number): string {
  const line = `${code} ${reason(code)}`.trim();
  return `<html>\r\n<head><title>${line}</title></head>\r\n<body>\r\n<center><h1>${line}</h1></center>\r\n<hr><center>zonal</center>\r\n</body>\r\n</html>\r\n`;
}

export function sendPage(res: ServerResponse, code: number, head: boolean, extra?: Record<string, string>): void {
  const body = errorPage(code);
  res.writeHead(code, { 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(body), ...extra });
  res.end(head ? undefined : body);
}

/** What a header value cannot hold (Node refuses it with an exception), percent-encoded:
 * a variable in a redirect can carry anything the client sent. */
const headerSafe = (v: string) => v.replace(/[^\t\x20-\x7e\x80-\xff]/g, (c) => [...Buffer.from(c)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''));

/** A `return`, with the headers and body precomputed once per location; with variables in
 * its text or URL (`$1`, `$host`...), made for each request. */
export class Return {
  private readonly code: number;
  private readonly headers: Record<string, string | number>;
  private readonly body: Buffer;
  /** The text or URL, when it holds variables. */
  private readonly value?: (c: VariableContext) => string;
  /** send() needs the request's variables. */
  readonly variables: boolean;
  /** Closing the connection after it: nginx does for 444, which answers nothing. */
  readonly close: boolean;

  constructor(config: ReturnConfig) {
    this.code = config.code;
    this.close = config.code === 444;
    if (config.text?.includes('$')) this.value = compileValue(config.text);
    this.variables = this.value !== undefined;
    ({ headers: this.headers, body: this.body } = this.answer(config.text));
  }

  private answer(text: string | undefined): { headers: Record<string, string | number>; body: Buffer } {
    if (REDIRECTS.has(this.code) && text !== undefined) {
      const body = Buffer.from(errorPage(this.code));
      return { body, headers: { Location: headerSafe(text), 'Content-Type': 'text/html', 'Content-Length': body.length } };
    }
    if (text !== undefined) {
      const body = Buffer.from(text);
      return { body, headers: { 'Content-Type': 'text/plain', 'Content-Length': body.length } };
    }
    if (this.code >= 400) {
      const body = Buffer.from(errorPage(this.code));
      return { body, headers: { 'Content-Type': 'text/html', 'Content-Length': body.length } };
    }
    return { body: Buffer.alloc(0), headers: { 'Content-Length': 0 } };
  }

  /** The same answer for a transport of the API (admin listeners, whose `return` has no
   * variables). */
  response(head: boolean): ApiResponse {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(this.headers)) headers[k] = String(v);
    return { status: this.code, headers, body: head ? '' : this.body };
  }

  /** `c`: the request's variables, for a text or URL that holds some. */
  send(res: ServerResponse, head: boolean, c?: VariableContext): void {
    if (this.close) {
      res.socket?.destroy();
      return;
    }
    if (this.value && c) {
      const { headers, body } = this.answer(this.value(c));
      res.writeHead(this.code, headers);
      res.end(head ? undefined : body);
      return;
    }
    res.writeHead(this.code, this.headers);
    res.end(head ? undefined : this.body);
  }
}
