// The answers the server writes itself: nginx's small HTML error pages, `return` with
// its text or redirect, and JSON errors for API locations.
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { ApiResponse } from '../../api/types.js';
import type { ReturnConfig } from '../config/model.js';

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

/** A `return`, with the headers and body precomputed once per location. */
export class Return {
  private readonly code: number;
  private readonly headers: Record<string, string | number>;
  private readonly body: Buffer;
  /** Closing the connection after it: nginx does for 444, which answers nothing. */
  readonly close: boolean;

  constructor(config: ReturnConfig) {
    this.code = config.code;
    this.close = config.code === 444;
    if (REDIRECTS.has(config.code) && config.text !== undefined) {
      this.body = Buffer.from(errorPage(config.code));
      this.headers = { Location: config.text, 'Content-Type': 'text/html', 'Content-Length': this.body.length };
    } else if (config.text !== undefined) {
      this.body = Buffer.from(config.text);
      this.headers = { 'Content-Type': 'text/plain', 'Content-Length': this.body.length };
    } else if (config.code >= 400) {
      this.body = Buffer.from(errorPage(config.code));
      this.headers = { 'Content-Type': 'text/html', 'Content-Length': this.body.length };
    } else {
      this.body = Buffer.alloc(0);
      this.headers = { 'Content-Length': 0 };
    }
  }

  /** The same answer for a transport of the API (admin listeners). */
  response(head: boolean): ApiResponse {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(this.headers)) headers[k] = String(v);
    return { status: this.code, headers, body: head ? '' : this.body };
  }

  send(res: ServerResponse, head: boolean): void {
    if (this.close) {
      res.socket?.destroy();
      return;
    }
    res.writeHead(this.code, this.headers);
    res.end(head ? undefined : this.body);
  }
}
