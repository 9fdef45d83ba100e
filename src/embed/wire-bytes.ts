// Wire bytes of one request made through undici: what went to the peer and what came back
// on the connection, headers included (a peer's `data.sent` and `data.received`).
//
// Exact, for undici's HTTP/1.1 client (Client, Pool, Agent and what is composed on them):
// the connection's own counters. undici publishes `undici:client:sendHeaders`
// ({ request, headers, socket }: a diagnostics channel its documentation lists) just
// before it writes a request's head, and calls the request's handler (onRequestStart)
// synchronously just before that, in the same function (client-h1.js writeH1). A meter
// told that onRequestStart ran takes the next such message: the socket, and its
// bytesWritten and bytesRead at that moment. At the end of the response the differences
// are this request's bytes:
// - sent: the head as undici wrote it (request line, host, connection, content-length or
//   transfer-encoding, every header) and the body with its chunked framing;
// - received: the whole response as read: status line, headers, the body with its
//   framing, trailers, and any 1xx response before it.
// undici writes one request at a time on a connection (pipelining 1, its default) and
// reads its response before the next, so the differences hold nothing of another request.
// Over TLS, node's TLSSocket counts what it encrypts and what it decrypted: the HTTP bytes,
// not the TLS records (nginx counts the same way).
//
// Not exact, said where it is used (docs/undici.md):
// - `pipelining` above 1: a request's difference may hold bytes of the one before or after;
// - HTTP/2 (one connection for many streams: its message carries no head string) and
//   dispatchers that are not undici's client (mocks, a dispatcher of another library):
//   no socket is learned. The bytes are then counted from what the handler sees: the
//   status line, the headers as `name: value` lines (exact unless the peer wrote spaces
//   around a value) and the body chunks after de-chunking (chunked framing and trailers
//   not counted); and for the request, its line, headers and body as undici would write
//   them when its length is known (`connection: keep-alive` assumed; a streamed body of
//   unknown length counts 0).
import { subscribe } from 'node:diagnostics_channel';

/** A connection's counters (net.Socket, tls.TLSSocket). */
interface Counters {
  readonly bytesRead: number;
  readonly bytesWritten: number;
}

interface SendHeaders {
  readonly request?: { readonly method?: unknown; readonly path?: unknown };
  readonly headers?: unknown;
  readonly socket?: { readonly bytesRead?: unknown; readonly bytesWritten?: unknown };
}

/** The meter whose request undici is about to write: set by started(), taken (or let go)
 * by the next message, and cleared when its attempt ends. */
let expecting: WireMeter | undefined;
let subscribed = false;

function onSendHeaders(message: unknown): void {
  const meter = expecting;
  if (meter === undefined) return;
  expecting = undefined;
  const { request, headers, socket } = message as SendHeaders;
  // HTTP/2 publishes its headers as an object, for a connection many streams share.
  if (typeof headers !== 'string' || typeof socket?.bytesRead !== 'number' || typeof socket.bytesWritten !== 'number') return;
  // The same request: its method, and its path (undici appends `query` to it).
  if (request?.method !== meter.method || typeof request.path !== 'string' || !request.path.startsWith(meter.path)) return;
  meter.attach(socket as Counters);
}

/** A header block's bytes as `name: value\r\n` lines: raw headers (names and values
 * alternating, Buffers or strings) or a headers object (a value may be an array). */
export function headerBytes(raw: unknown, headers: unknown): number {
  let n = 0;
  if (Array.isArray(raw)) {
    for (let i = 0; i + 1 < raw.length; i += 2) n += lengthOf(raw[i]) + lengthOf(raw[i + 1]) + 4;
    return n;
  }
  if (headers && typeof headers === 'object')
    for (const [name, value] of Object.entries(headers as Record<string, unknown>)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) n += Buffer.byteLength(name, 'latin1') + lengthOf(v) + 4;
    }
  return n;
}

function lengthOf(v: unknown): number {
  if (typeof v === 'string') return Buffer.byteLength(v, 'latin1');
  if (v instanceof Uint8Array) return v.byteLength;
  return v === null || v === undefined ? 0 : Buffer.byteLength(String(v), 'latin1');
}

/** The bytes of a request body whose length is known before it is written; undefined
 * for a stream or an iterable (undici writes those as they come). */
export function knownBodyLength(body: unknown): number | undefined {
  if (body === null || body === undefined) return 0;
  if (typeof body === 'string') return Buffer.byteLength(body);
  if (ArrayBuffer.isView(body)) return body.byteLength;
  if (body instanceof ArrayBuffer) return body.byteLength;
  return undefined;
}

/** What undici would write for a request (the estimate when no socket was learned):
 * request line, host, `connection: keep-alive`, the headers given (name, value pairs),
 * content-length when the body's length is known, and the body. */
export function requestBytesEstimate(method: string, path: string, host: string, pairs: readonly string[], body: unknown): number {
  // `GET /path HTTP/1.1\r\n`, `host: backend\r\n`, `connection: keep-alive\r\n`.
  let n = Buffer.byteLength(method, 'latin1') + Buffer.byteLength(path, 'latin1') + 12 + 6 + Buffer.byteLength(host, 'latin1') + 2 + 24;
  let hasLength = false;
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const name = pairs[i].toLowerCase();
    if (name === 'host') continue;
    if (name === 'content-length') hasLength = true;
    n += Buffer.byteLength(pairs[i], 'latin1') + Buffer.byteLength(pairs[i + 1], 'latin1') + 4;
  }
  const length = knownBodyLength(body);
  if (length !== undefined && length > 0) {
    // `content-length: N\r\n`
    if (!hasLength) n += 18 + String(length).length;
    n += length;
  }
  return n + 2;
}

export class WireMeter {
  private socket: Counters | undefined = undefined;
  private read0 = 0;
  private written0 = 0;
  /** What the handler saw of the response, for when no socket was learned. */
  private seen = 0;

  constructor(
    readonly method: string,
    readonly path: string,
    /** The request's bytes as undici would write them, asked for only without a socket. */
    private readonly requestEstimate: () => number,
  ) {
    if (!subscribed) {
      subscribe('undici:client:sendHeaders', onSendHeaders);
      subscribed = true;
    }
  }

  /** onRequestStart ran (and returned): the next head undici writes is this request's.
   * Also when undici writes it again on another connection (a pipeline's retry). */
  started(): void {
    this.socket = undefined;
    this.seen = 0;
    expecting = this;
  }

  /** The attempt ended: a head never written is not waited for any more. */
  ended(): void {
    if (expecting === this) expecting = undefined;
  }

  attach(socket: Counters): void {
    this.socket = socket;
    this.read0 = socket.bytesRead;
    this.written0 = socket.bytesWritten;
  }

  /** Whether the bytes come from the connection (exact) rather than from the callbacks. */
  get exact(): boolean {
    return this.socket !== undefined;
  }

  /** The response head (a final one): counted only when no socket was learned. */
  responseHead(statusMessage: string | undefined, rawHeaders: unknown, headers: unknown): void {
    // `HTTP/1.1 200 OK\r\n`, the header lines, and the empty line.
    if (this.socket === undefined) this.seen += 15 + Buffer.byteLength(statusMessage ?? '', 'latin1') + headerBytes(rawHeaders, headers) + 2;
  }

  data(bytes: number): void {
    if (this.socket === undefined) this.seen += bytes;
  }

  received(): number {
    return this.socket ? this.socket.bytesRead - this.read0 : this.seen;
  }

  sent(): number {
    return this.socket ? this.socket.bytesWritten - this.written0 : this.requestEstimate();
  }
}
