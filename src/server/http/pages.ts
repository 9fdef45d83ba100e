// The answers the server writes itself: nginx's small HTML error pages, `return` with
// its text or redirect, the redirects it makes itself (a directory, a location's auto
// redirect), and JSON errors for API locations.
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { ApiResponse } from '../../api/types.js';
import type { ReturnConfig } from '../config/model.js';
import { compileValue } from '../config/variables.js';
import type { HttpContext } from './variables.js';

/** Codes whose `return` argument is a URL. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** nginx's status lines, where their reason differs from node's (ngx_http_header_filter
 * module's table): what an operator's tools, and nginx's own tests, match on. */
const NGINX_REASONS: Readonly<Record<number, string>> = {
  302: 'Moved Temporarily',
  405: 'Not Allowed',
  408: 'Request Time-out',
  413: 'Request Entity Too Large',
  414: 'Request-URI Too Large',
  416: 'Requested Range Not Satisfiable',
  503: 'Service Temporarily Unavailable',
  504: 'Gateway Time-out',
};

/** Gives node:http's table of reasons nginx's words, for the answers this process writes
 * itself: node reads the table at each head it writes without a reason of its own, so
 * this costs nothing per response. A proxied answer keeps its upstream's reason. Only the
 * server's workers call it: an app that embeds zonal keeps node's words. */
export function useNginxReasons(): void {
  Object.assign(STATUS_CODES, NGINX_REASONS);
}

function reason(code: number): string {
  return NGINX_REASONS[code] ?? STATUS_CODES[code] ?? '';
}

/** nginx's error page: what an operator sees in a browser for a 403, 404, 500...
 * `footer`: `zonal`, or `zonal/<version>` under `server_tokens on`. */
export function errorPage(code: number, footer = 'zonal'): string {
  const line = `${code} ${reason(code)}`.trim();
  return `<html>\r\n<head><title>${line}</title></head>\r\n<body>\r\n<center><h1>${line}</h1></center>\r\n<hr><center>${footer}</center>\r\n</body>\r\n</html>\r\n`;
}

/** Marks a response nginx makes as a special response (an error's page, a redirect): one
 * made while an error page is answered has its own status, where the page's other
 * answers take the error's (content.ts, overrideStatus). */
export const SPECIAL = Symbol('zonal.special');
export type Special = ServerResponse & { [SPECIAL]?: true };
export const special = (res: ServerResponse): void => void ((res as Special)[SPECIAL] = true);

export function sendPage(res: ServerResponse, code: number, head: boolean, extra?: Record<string, string>): void {
  special(res);
  const body = errorPage(code);
  res.writeHead(code, { 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(body), ...extra });
  res.end(head ? undefined : body);
}

/** Where a request came in, for an absolute redirect. */
export interface RequestOrigin {
  /** The Host header as sent. */
  readonly host?: string;
  readonly secure: boolean;
  /** The address and port of the socket that took the request. */
  readonly localAddress?: string;
  readonly localPort?: number;
}

export function requestOrigin(req: IncomingMessage): RequestOrigin {
  const socket = req.socket;
  return {
    host: req.headers.host,
    secure: (socket as TLSSocket).encrypted === true,
    localAddress: socket.localAddress,
    localPort: socket.localPort,
  };
}

/** A Host header's host, as nginx keeps it (`$host`): without the port, lower-case, without
 * a final dot; undefined when it is absent or not a host name or address. */
function hostOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]/?#@\s\\]+)(?::\d*)?$/.exec(header);
  if (!m) return undefined;
  const host = m[1].toLowerCase().replace(/\.$/, '');
  return host === '' ? undefined : host;
}

/** `absolute_redirect`, `server_name_in_redirect` and `port_in_redirect` of a place. */
export interface RedirectSettings {
  readonly absolute: boolean;
  /** The server's first name rather than the Host header's. */
  readonly serverName: boolean;
  readonly port: boolean;
}

/** nginx's defaults. */
export const NGINX_REDIRECTS: RedirectSettings = { absolute: true, serverName: false, port: true };

/**
 * The Location of a redirect the server makes itself (a directory, a location's auto
 * redirect, a `return` to a path) to `target` (a path, with its query), as nginx's header
 * filter writes it: under `absolute_redirect on`, the scheme, the host of the Host header
 * (`server_name_in_redirect on`: the server's first name; without either, the local
 * address), the local port unless it is the scheme's default (or `port_in_redirect off`),
 * then the target; under `absolute_redirect off`, the target alone.
 */
export function absoluteLocation(target: string, origin: RequestOrigin, settings: RedirectSettings = NGINX_REDIRECTS, serverName?: string): string {
  if (!settings.absolute) return headerSafe(target);
  let host = settings.serverName && serverName ? serverName : hostOf(origin.host);
  if (host === undefined) {
    const local = (origin.localAddress ?? '127.0.0.1').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
    host = local.includes(':') ? `[${local}]` : local;
  }
  const scheme = origin.secure ? 'https' : 'http';
  const port = settings.port ? origin.localPort : undefined;
  const shown = port === undefined || port === (origin.secure ? 443 : 80) ? '' : `:${port}`;
  return headerSafe(`${scheme}://${host}${shown}${target}`);
}

/** A path as a URI path: percent-encoded where a URI cannot hold it as is (a location's
 * path and the URI matched against it are decoded). */
export function encodePath(path: string): string {
  try {
    return encodeURI(path);
  } catch {
    // A lone surrogate: nothing a client could have sent or a file could hold.
    return headerSafe(path);
  }
}

/** The query of a request target with its '?', or '' when it has none or an empty one
 * (nginx appends `?$args` only when there are args). */
export function queryOf(target: string): string {
  const q = target.indexOf('?');
  return q < 0 || q === target.length - 1 ? '' : target.slice(q);
}

/** A 301 to `path` (a location's path, or a directory's URI with '/'), the request's query
 * kept, with nginx's page for the code; `settings` and `serverName` of its place. */
export function sendRedirect(req: IncomingMessage, res: ServerResponse, path: string, settings?: RedirectSettings, serverName?: string): void {
  const location = absoluteLocation(encodePath(path) + queryOf(req.url ?? ''), requestOrigin(req), settings, serverName);
  sendPage(res, 301, req.method === 'HEAD', { Location: location });
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
  private readonly value?: (c: HttpContext) => string;
  /** send() needs the request's variables. */
  readonly variables: boolean;
  /** Closing the connection after it: nginx does for 444, which answers nothing. */
  readonly close: boolean;
  /** A redirect to a path: nginx's header filter makes its Location absolute
   * (`absolute_redirect`), from the request's Host and port. */
  readonly relative: boolean;
  /** A redirect with its Location: a special response, which `error_page` may replace. */
  readonly redirect: boolean;
  readonly status: number;
  /** An error code without text: nginx's own page, which `error_page` may replace. */
  readonly page: boolean;

  /** `value`: what the text or URL is for a request, when the text is made otherwise
   * than from variables (a rewrite's redirect). */
  constructor(config: ReturnConfig, value?: (c: HttpContext) => string) {
    this.code = this.status = config.code;
    this.page = config.code >= 400 && config.code !== 444 && config.text === undefined;
    this.close = config.code === 444;
    this.redirect = REDIRECTS.has(config.code) && config.text !== undefined;
    if (value) this.value = value;
    else if (config.text?.includes('$')) this.value = compileValue(config.text);
    this.variables = this.value !== undefined;
    this.relative = REDIRECTS.has(config.code) && config.text !== undefined && (config.text.startsWith('/') || this.variables);
    ({ headers: this.headers, body: this.body } = this.answer(config.text));
  }

  private answer(text: string | undefined, absolute?: (path: string) => string): { headers: Record<string, string | number>; body: Buffer } {
    if (REDIRECTS.has(this.code) && text !== undefined) {
      const body = Buffer.from(errorPage(this.code));
      const location = absolute && text.startsWith('/') ? absolute(text) : headerSafe(text);
      return { body, headers: { Location: location, 'Content-Type': 'text/html', 'Content-Length': body.length } };
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

  /** A redirect's Location for the request. */
  location(c: HttpContext): string {
    return this.value ? headerSafe(this.value(c)) : String(this.headers.Location);
  }

  /** `c`: the request's variables, for a text or URL that holds some. `absolute`: makes a
   * redirect's path a URL (only given when `relative`). */
  send(res: ServerResponse, head: boolean, c?: HttpContext, absolute?: (path: string) => string): void {
    if (this.close) {
      res.socket?.destroy();
      return;
    }
    if (this.redirect || this.page) special(res);
    // A type set before (a peer's, kept by its X-Accel-Redirect) stays: nginx's `return`
    // names none of its own.
    const typed = res.hasHeader('content-type');
    if (this.value && c) {
      const { headers, body } = this.answer(this.value(c), absolute);
      res.writeHead(this.code, typed ? untyped(headers) : headers);
      res.end(head ? undefined : body);
      return;
    }
    const headers = typed ? untyped(this.headers) : this.headers;
    res.writeHead(this.code, absolute ? { ...headers, Location: absolute(this.headers.Location as string) } : headers);
    res.end(head ? undefined : this.body);
  }
}

/** Headers without their Content-Type. */
function untyped(headers: Record<string, string | number>): Record<string, string | number> {
  const { 'Content-Type': _type, ...rest } = headers;
  return rest;
}
