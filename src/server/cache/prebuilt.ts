// A cache hit answered with bytes built before: the response head node:http wrote for an
// earlier hit of the same entry in the same second, and the body after it, in one buffer
// written on the socket below ServerResponse. A 1 KB hit spent more in node:http's header
// handling and its three-piece writev than in everything else; nginx sends a hit from
// bytes it has (the file's, in the page cache) with a head it builds once per request.
//
// The head is not built here but taken from node:http itself (ServerResponse's `_header`
// after writeHead), so that it is the general path's byte for byte: it depends only on
// the entry's status and headers, add_header's (constant values only), the Date second
// and the server's keep-alive settings, which the reuse checks. Anything else (a request
// that closes its connection, HTTP/1.0 without keep-alive, a draining worker, a pipelined
// response not yet at the head of its connection, headers node:http treats specially)
// takes the general path. Node 20's ServerResponse internals are read and set here, and
// test/server/cache/prebuilt.test.ts holds the two paths to the same bytes.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** The fields of Node 20's ServerResponse that its head depends on or that a response
 * written past writeHead() sets. */
interface NodeResponse extends ServerResponse {
  _header: string | null;
  _headerSent: boolean;
  _keepAliveTimeout: number;
  _maxRequestsPerSocket: number;
  _defaultKeepAlive: boolean;
  _expect_continue: boolean;
  maxRequestsOnConnectionReached: boolean;
}

type HttpSocket = Socket & { _httpMessage?: unknown };

/** Header names node:http's _storeHeader reacts to (besides Content-Length, which a
 * cached response always has): a head with one of them is left to node:http. */
const SPECIAL = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date', 'expect', 'trailer', 'content-disposition']);

/** Whether node:http writes `headers` (name, value, ...) as given plus Date and its
 * keep-alive lines, so that its head can be reused: they have a Content-Length and none
 * of the names it treats specially. */
export function reusableHeaders(headers: readonly string[]): boolean {
  let length = false;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i];
    if (name.length < 4 || name.length > 19) continue;
    const lower = name.toLowerCase();
    if (SPECIAL.has(lower)) return false;
    if (lower === 'content-length') length = true;
  }
  return length;
}

/** Whether node:http would write this response's head as it wrote the one it is reused
 * from: keep-alive, not at its connection's last request, nothing set on it before, and
 * first in line on its socket (so that bytes written there are its own). */
export function reusable(res: ServerResponse): boolean {
  const r = res as NodeResponse;
  const socket = r.socket as HttpSocket | null;
  return (
    r.shouldKeepAlive &&
    !r.maxRequestsOnConnectionReached &&
    !r._expect_continue &&
    r._defaultKeepAlive &&
    r.sendDate &&
    r._header === null &&
    // A filter on the response (gzip, limit_rate) sees its head and body: none is.
    !Object.hasOwn(r, 'writeHead') &&
    !Object.hasOwn(r, 'write') &&
    socket !== null &&
    socket._httpMessage === r &&
    socket.writable &&
    !socket.destroyed
  );
}

/** A hit's bytes: head and body, for one second and one server's keep-alive settings. */
export class PrebuiltAnswer {
  private constructor(
    /** The head as node:http wrote it. */
    readonly header: string,
    /** Head then body. */
    readonly bytes: Buffer,
    readonly headLength: number,
    readonly status: number,
    readonly statusText: string,
    /** Date.now() / 1000, floored: the second its Date says. */
    readonly second: number,
    readonly keepAliveTimeout: number,
    readonly maxRequests: number,
  ) {}

  /** The bytes of a response whose head node:http has just written (writeHead, with
   * reusable() true before it) and whose body is `body`; undefined when its Date is not
   * the second `now` is in (node:http's clock turns a little after the second does). */
  static capture(res: ServerResponse, body: Buffer, now: number): PrebuiltAnswer | undefined {
    const r = res as NodeResponse;
    const header = r._header;
    if (typeof header !== 'string') return undefined;
    const second = Math.floor(now / 1000);
    const at = header.indexOf('\r\nDate: ');
    if (at < 0 || header.slice(at + 8, header.indexOf('\r\n', at + 8)) !== new Date(second * 1000).toUTCString()) return undefined;
    const headLength = Buffer.byteLength(header, 'latin1');
    const bytes = Buffer.allocUnsafe(headLength + body.length);
    bytes.write(header, 0, 'latin1');
    body.copy(bytes, headLength);
    return new PrebuiltAnswer(header, bytes, headLength, r.statusCode, r.statusMessage, second, r._keepAliveTimeout, r._maxRequestsPerSocket);
  }

  /** Whether these bytes are what node:http would write for `res` at `now` (reusable(res)
   * being true). */
  fits(res: ServerResponse, now: number): boolean {
    const r = res as NodeResponse;
    return Math.floor(now / 1000) === this.second && r._keepAliveTimeout === this.keepAliveTimeout && r._maxRequestsPerSocket === this.maxRequests;
  }

  /** Writes the response on its socket and ends it as node:http ends one whose head and
   * body went out: its status and head set as writeHead() sets them, 'finish' and the
   * connection's next request as usual. */
  send(res: ServerResponse, head: boolean): void {
    const r = res as NodeResponse;
    r.statusCode = this.status;
    r.statusMessage = this.statusText;
    r._header = this.header;
    r._headerSent = true;
    r.socket!.write(head ? this.bytes.subarray(0, this.headLength) : this.bytes);
    r.end();
  }
}
