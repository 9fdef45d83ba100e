// One HTTP/1.1 connection to a peer, for the proxy: a request head written as one string,
// the body streamed with backpressure, the response parsed by node's own llhttp binding
// (the parser node:http uses, in C++) and handed to an exchange as it comes. The parser
// reads the socket itself, as node:http's server does with its connections (`consume`):
// each read goes from libuv to llhttp in C++, into the parser's own buffer, without a
// Buffer, a stream 'data' event and a call back into C++ per read.
//
// Why not undici: a proxied request through undici's Client cost the worker about 5 us of
// JavaScript more than this (its Request object validates every header again, its wasm
// parser copies each read into wasm memory and calls back through JS, and each closed
// connection made an Error with a stack trace). The proxy needs none of that generality:
// one request at a time on a connection whose head it builds itself from headers that
// node's parser has already checked.
import { connect, type Socket } from 'node:net';
import type { ConnectionOptions, TLSSocket } from 'node:tls';
import { createRequire } from 'node:module';
import { afterIo, type AfterIo } from './after-io.js';
import { nodeTls } from '../ssl/modules.js';
import { stallGuard, type StallGuard } from '../stream/tunnel.js';

/** node's HTTP parser binding, as node:http's client and server use it. `_http_common`
 * is a legacy module of node's, there since node 0.x and still in node 24. */
interface Parser {
  /** The read being parsed, while the parser reads the handle itself (`consume`). */
  getCurrentBuffer(): Buffer;
  initialize(type: number, resource: object, maxHeaderSize?: number, lenient?: number): void;
  execute(data: Buffer): number | Error;
  finish(): undefined | Error;
  /** Reads a stream handle (a StreamBase, as a TCP socket's) directly. */
  consume(handle: object): void;
  unconsume(): void;
  close(): void;
  free(): void;
  [key: number]: unknown;
}
/** The libuv stream under a net.Socket. */
interface StreamHandle {
  readonly isStreamBase?: boolean;
  reading: boolean;
  readStart(): number;
  readStop(): number;
}
interface ParserClass {
  new (): Parser;
  readonly RESPONSE: number;
  readonly kOnHeaders: number;
  readonly kOnHeadersComplete: number;
  readonly kOnBody: number;
  readonly kOnMessageComplete: number;
  readonly kOnExecute: number;
}
const { HTTPParser } = createRequire(import.meta.url)('_http_common') as { HTTPParser: ParserClass };

/** llhttp's leniency for a line ended by LF alone (node's kLenientOptionalCRBeforeLF): a
 * peer's response with bare-LF line ends is read as nginx reads it. Only this one: node's
 * insecureHTTPParser would turn on every leniency (a Transfer-Encoding and Content-Length
 * together, data after `Connection: close`...), which could let a peer's response
 * smuggle a second one into a kept-alive connection. Requests stay strict. */
const LENIENT_OPTIONAL_CR_BEFORE_LF = 1 << 8;

/** What a request tells its exchange, in the order it happens. */
export interface ExchangeHandler {
  /** The request is on its way; `abort` ends it (its onError follows). */
  onConnect(abort: (err: Error) => void): void;
  onBodySent(bytes: number): void;
  /** The response head: raw header names and values, alternating. false pauses the
   * response until `resume` is called. */
  onHeaders(status: number, headers: string[], resume: () => void, statusText: string): boolean;
  /** A piece of the body; false pauses the response until `resume` is called. */
  onData(chunk: Buffer): boolean;
  /** All of one read of the connection has been handed over (node runs queued ticks
   * between the parser's callbacks, but not before this); false pauses the response
   * until `resume` is called. */
  onReadEnd(): boolean;
  onComplete(): void;
  onError(err: Error): void;
  /** The peer switched protocols (its 101 came through onHeaders) for a request that
   * asked to: the connection is no longer HTTP nor the pool's, and is the handler's now,
   * with what the peer sent after its head. */
  onUpgrade(socket: Socket, rest: Buffer): void;
}

export interface UpstreamRequest {
  readonly method: string;
  readonly path: string;
  /** Name, value, name, value: as they go (values already free of CR and LF), without
   * Connection or Transfer-Encoding; Host is added from the peer when absent. */
  readonly headers: readonly string[];
  /** A request body to stream (its framing: Content-Length when among the headers,
   * chunked otherwise), or null. */
  readonly body: NodeJS.ReadableStream | null;
  /** Close the connection after this response (`Connection: close`). */
  readonly reset: boolean;
  /** `proxy_http_version 1.0`: an HTTP/1.0 request line (its body needs a length). */
  readonly http10?: boolean;
  /** The client asked to switch protocols: a 101 hands the connection over (onUpgrade). */
  readonly upgrade?: boolean;
  /** The Connection header sent instead of zonal's keep-alive or close (an upgrade
   * request's configured one: `upgrade` asks the peer to switch). */
  readonly connection?: string;
  /** `proxy_send_timeout`: milliseconds a write of the request may wait with no progress. */
  readonly sendTimeout: number;
}

/** TLS to a peer (`proxy_pass https://`): the options every connection to it shares, and
 * the session the last one was given, which the next one offers to resume. */
export interface PeerTls {
  readonly options: ConnectionOptions;
  /** Undefined with `proxy_ssl_session_reuse off`. */
  session?: Buffer;
  readonly reuse: boolean;
}

/** The peer did not accept the connection within the connect timeout. */
export class ConnectTimeout extends Error {
  readonly code = 'ETIMEDOUT';
}
/** A write of the request waited longer than proxy_send_timeout. */
export class SendTimeout extends Error {
  readonly code = 'ETIMEDOUT';
}
/** The connection ended before the response did. */
export class PeerClosed extends Error {}
/** The peer's answer is no HTTP response (nginx's `invalid_header`). */
export class InvalidResponse extends Error {}
/** nginx's keepalive_timeout default, for peers that give no Keep-Alive hint. */
const IDLE_MS = 60_000;
/** A peer's `Keep-Alive: timeout=N` is honoured this much early, so that a connection is
 * not reused just as the peer closes it (undici's margin). */
const IDLE_MARGIN_MS = 1_000;

export class UpstreamConnection implements AfterIo {
  /** Closed: no request can be sent on it any more. */
  closed = false;
  /** The last response ended cleanly and the connection may carry another request. */
  reusable = false;
  /** Called once when the connection ends while no request is on it (the pool forgets it). */
  onIdleClose: ((conn: UpstreamConnection) => void) | undefined;
  /** How long it may stay idle after its last response: the peer's Keep-Alive hint less
   * a margin, or 60 s. */
  idleMs = IDLE_MS;
  /** Until when (performance.now()) it may be reused, while the pool keeps it idle. */
  idleUntil = 0;
  /** Requests sent on it, and when it was made (performance.now()): what
   * keepalive_requests and keepalive_time bound. */
  requests = 0;
  readonly openedAt = performance.now();
  /** When it was up (TLS: its handshake done), performance.now(); 0 before. */
  connectedAt = 0;
  /** The current request's head went to the peer (a failure after it may have had
   * effects there: nginx does not pass a non-idempotent request on then). */
  written = false;

  private readonly socket: Socket;
  private readonly parser: Parser;
  private connected = false;
  private connectTimer: NodeJS.Timeout | undefined;
  private handler: ExchangeHandler | undefined;
  private request: UpstreamRequest | undefined;
  private skipBody = false;
  /** A 1xx response: its message-complete is not the request's. */
  private informational = false;
  /** The peer answered 101 to an upgrade: what follows its head is another protocol. */
  private upgraded = false;
  private keepAlive = false;
  private bodyDone = true;
  /** The head of the request, until the connection is up to take it. */
  private pendingHead = '';
  private chunked = false;
  /** The handle the parser reads, when it could take it. */
  private handle: StreamHandle | undefined;
  private readonly resume = () => this.resumeReading();
  private readonly abort = (err: Error) => this.fail(err);
  /** Host, when the request has none: the peer's address. */
  private readonly hostHeader: string;
  /** proxy_send_timeout of the request being written, once a write of it waited. */
  private sending: StallGuard | undefined;

  /** A write of the request waits for the peer to read: proxy_send_timeout runs. */
  private waiting(): void {
    this.sending ??= stallGuard(this.socket, this.request!.sendTimeout, () => this.fail(new SendTimeout('proxy_send_timeout')));
    this.sending.full();
  }

  private stopSending(): void {
    this.sending?.stop();
    this.sending = undefined;
  }
  /** Takes this connection's listeners off its socket. */
  private readonly listeners: () => void;

  constructor(host: string, port: number, connectTimeout: number, tls?: PeerTls) {
    const unix = host.startsWith('unix:');
    // nginx's Host for a unix socket peer is `localhost`.
    this.hostHeader = unix ? 'localhost' : (host.includes(':') ? `[${host}]` : host) + (port === (tls ? 443 : 80) ? '' : `:${port}`);
    const where = unix ? { path: host.slice(5) } : { host, port };
    // The connect timeout covers the TLS handshake too, as nginx's does.
    const socket = (this.socket = tls
      ? nodeTls().connect({ ...tls.options, ...where, ...(tls.session ? { session: tls.session } : {}) }).setNoDelay(true)
      : connect({ ...where, noDelay: true }));
    if (tls?.reuse) (socket as TLSSocket).on('session', (session: Buffer) => (tls.session = session));
    this.connectTimer = setTimeout(() => this.fail(new ConnectTimeout(`connect to ${host}:${port} timed out`)), connectTimeout);
    socket.once(tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(this.connectTimer);
      this.connected = true;
      this.connectedAt = performance.now();
      if (this.request) this.writeHead();
    });
    // What the parser made of a read (with `consume`, it reports after each read, and
    // `data` is the parser's).
    const executed = (ret: number | Error, data?: Buffer) => {
      if (ret instanceof Error) this.fail(new InvalidResponse(ret.message));
      else if (this.upgraded) this.handOver((data ?? this.parser.getCurrentBuffer()).subarray(ret));
      else if (this.handler && !this.handler.onReadEnd()) this.pauseReading();
    };
    // Reads that still come through the stream: before `consume`, or without it. The
    // listener also keeps the stream flowing, so that 'end' is emitted.
    const onData = (data: Buffer) => executed(this.parser.execute(data), data);
    const onEnd = () => {
      // A body delimited by the connection's end is complete now.
      const ret = this.handler ? this.parser.finish() : undefined;
      if (ret instanceof Error) this.fail(new InvalidResponse(ret.message));
      this.fail(new PeerClosed('the peer closed the connection'));
    };
    const onError = (err: Error) => this.fail(err);
    const onClose = () => {
      this.fail(new PeerClosed('the connection to the peer closed'));
      this.freeParser();
    };
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('error', onError);
    socket.on('close', onClose);
    this.listeners = () => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('error', onError);
      socket.off('close', onClose);
    };

    const parser = (this.parser = new HTTPParser());
    parser.initialize(HTTPParser.RESPONSE, {}, 0, LENIENT_OPTIONAL_CR_BEFORE_LF);
    let head: string[] | undefined;
    parser[HTTPParser.kOnHeaders] = (headers: string[]) => {
      // More headers than fit one call: they come in parts before the head is complete.
      head = head ? head.concat(headers) : headers;
    };
    parser[HTTPParser.kOnHeadersComplete] = (
      _major: number,
      _minor: number,
      headers: string[] | undefined,
      _method: unknown,
      _url: unknown,
      status: number,
      statusText: string,
      _upgrade: boolean,
      keepAlive: boolean,
    ): number => {
      const all = head ? (headers ? head.concat(headers) : head) : (headers ?? []);
      head = undefined;
      const handler = this.handler;
      if (!handler) return 1;
      if (status === 101) {
        // What follows the head is another protocol's: executed() hands it over, when
        // the client asked to switch.
        if (!this.request!.upgrade) {
          this.fail(new InvalidResponse('the peer switched protocols for a request that did not ask to'));
          return 1;
        }
        this.upgraded = true;
        handler.onHeaders(status, all, this.resume, statusText);
        return 1;
      }
      if (status < 200) {
        this.informational = true;
        return 1;
      }
      this.keepAlive = keepAlive;
      for (let i = 0; i < all.length; i += 2)
        if (all[i].length === 10 && all[i].toLowerCase() === 'keep-alive') this.idleMs = keepAliveHint(all[i + 1]);
      if (!handler.onHeaders(status, all, this.resume, statusText)) this.pauseReading();
      // A HEAD response has a length but no body: the parser must not wait for one.
      return this.skipBody ? 1 : 0;
    };
    parser[HTTPParser.kOnBody] = (chunk: Buffer) => {
      if (this.handler && !this.handler.onData(chunk)) this.pauseReading();
    };
    parser[HTTPParser.kOnMessageComplete] = () => {
      if (this.upgraded) return;
      if (this.informational) {
        this.informational = false;
        return;
      }
      const handler = this.handler;
      if (!handler) return;
      // Reusable when both sides kept the connection and the whole request went out.
      this.reusable = this.keepAlive && this.bodyDone && !this.request!.reset && this.idleMs > 0;
      this.handler = undefined;
      this.stopSending();
      this.request = undefined;
      handler.onComplete();
    };
    parser[HTTPParser.kOnExecute] = executed;
    // A TLS socket's reads are decrypted in JavaScript's sight: the parser takes them as
    // 'data' events rather than from the handle.
    const handle = tls ? undefined : (socket as Socket & { _handle?: StreamHandle })._handle;
    if (handle?.isStreamBase) {
      parser.consume(handle);
      this.handle = handle;
    }
  }

  /** Sends a request; its handler hears of everything that follows. Returns the bytes of
   * its request line and headers. */
  dispatch(request: UpstreamRequest, handler: ExchangeHandler): number {
    this.handler = handler;
    this.request = request;
    this.requests++;
    this.reusable = false;
    this.keepAlive = false;
    this.skipBody = request.method === 'HEAD';
    this.idleMs = IDLE_MS;
    this.written = false;
    const head = (this.pendingHead = this.head(request));
    handler.onConnect(this.abort);
    // A connection still connecting writes the head once it is up; an open one with the
    // other writes of this turn (after-io.ts).
    if (!this.closed && this.connected) afterIo(this);
    return head.length;
  }

  /** Closes the connection; a request on it fails. */
  close(): void {
    this.fail(new PeerClosed('connection closed'));
  }

  /** Backpressure: no more reads until resumed (what is already read is parsed). With
   * `consume`, reading is the handle's: pausing the stream would not stop it. */
  private pauseReading(): void {
    this.socket.pause();
    const handle = this.handle;
    if (handle && handle.reading && !this.closed) {
      handle.reading = false;
      handle.readStop();
    }
  }

  /** Reads again. */
  private resumeReading(): void {
    this.socket.resume();
    const handle = this.handle;
    if (handle && !handle.reading && !this.closed) {
      handle.reading = true;
      handle.readStart();
    }
  }

  /** The request line and headers as they go on the wire (latin1: a byte a character). */
  private head(req: UpstreamRequest): string {
    const h = req.headers;
    let head = `${req.method} ${req.path} ${req.http10 ? 'HTTP/1.0' : 'HTTP/1.1'}\r\n`;
    let host = false;
    let length = false;
    for (let i = 0; i < h.length; i += 2) {
      const name = h[i];
      if (name.length === 4 && name.toLowerCase() === 'host') host = true;
      else if (name.length === 14 && name.toLowerCase() === 'content-length') length = true;
      head += `${name}: ${h[i + 1]}\r\n`;
    }
    if (!host) head += `Host: ${this.hostHeader}\r\n`;
    this.chunked = req.body !== null && !length;
    if (this.chunked) head += 'Transfer-Encoding: chunked\r\n';
    if (req.connection) return `${head}Connection: ${req.connection}\r\n\r\n`;
    return head + (req.reset ? 'Connection: close\r\n\r\n' : 'Connection: keep-alive\r\n\r\n');
  }

  runAfterIo(): void {
    if (!this.closed && this.pendingHead !== '') this.writeHead();
  }

  private writeHead(): void {
    const request = this.request!;
    if (!this.socket.write(this.pendingHead, 'latin1')) this.waiting();
    this.pendingHead = '';
    this.written = true;
    if (request.body) this.stream(request.body, this.chunked);
  }

  /** Streams the request body, pausing it while the socket is full. */
  private stream(body: NodeJS.ReadableStream, chunked: boolean): void {
    const socket = this.socket;
    const handler = this.handler!;
    this.bodyDone = false;
    const drain = () => body.resume();
    const onData = (chunk: Buffer) => {
      if (this.handler !== handler) return;
      let ok: boolean;
      if (chunked) {
        const size = `${chunk.length.toString(16)}\r\n`;
        handler.onBodySent(size.length + chunk.length + 2);
        // All three whatever the first two say: a full queue still takes them.
        socket.write(size);
        socket.write(chunk);
        ok = socket.write('\r\n');
      } else {
        handler.onBodySent(chunk.length);
        ok = socket.write(chunk);
      }
      if (ok) return;
      body.pause();
      this.waiting();
    };
    const onEnd = () => {
      cleanup();
      this.bodyDone = true;
      if (chunked && !this.closed) {
        handler.onBodySent(5);
        socket.write('0\r\n\r\n');
      }
    };
    const cleanup = () => {
      body.removeListener('data', onData);
      body.removeListener('end', onEnd);
      socket.removeListener('drain', drain);
    };
    body.on('data', onData);
    body.once('end', onEnd);
    socket.on('drain', drain);
    socket.once('close', cleanup);
  }

  /** The peer switched protocols: the socket, off the parser and this connection's
   * listeners, goes to the handler with `rest` (what came after the 101's head). */
  private handOver(rest: Buffer): void {
    const handler = this.handler;
    if (this.closed || !handler) return;
    this.closed = true;
    this.reusable = false;
    this.handler = undefined;
    this.stopSending();
    this.request = undefined;
    const socket = this.socket;
    // Not flowing with nobody listening: what comes next waits for the handler.
    socket.pause();
    this.listeners();
    // The handle back to its stream now (as node:http's server does in this callback);
    // the parser freed after the callback of its own.
    if (this.handle) this.parser.unconsume();
    this.handle = undefined;
    setImmediate(() => this.freeParser());
    handler.onUpgrade(socket, Buffer.from(rest));
  }

  /** The parser's resources; the handle goes back to its stream. Once. */
  private freeParser(): void {
    if (this.parserFreed) return;
    this.parserFreed = true;
    if (this.handle) this.parser.unconsume();
    this.parser.free();
  }
  private parserFreed = false;

  private fail(err: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.reusable = false;
    clearTimeout(this.connectTimer);
    this.socket.destroy();
    const handler = this.handler;
    this.handler = undefined;
    this.stopSending();
    this.request = undefined;
    if (handler) handler.onError(err);
    else this.onIdleClose?.(this);
  }
}

/** The idle time a peer's `Keep-Alive: timeout=N` allows, less the margin. */
function keepAliveHint(value: string): number {
  const m = /timeout=(\d+)/i.exec(value);
  if (!m) return IDLE_MS;
  return Math.max(Math.min(Number(m[1]) * 1000 - IDLE_MARGIN_MS, IDLE_MS), 0);
}
