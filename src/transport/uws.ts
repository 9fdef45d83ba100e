// The dedicated API listener on uWebSockets.js: every request, any method and any path,
// goes to the API handler; a path no API mount matches gets a JSON PathNotFound.
//
// Facts of the uWebSockets.js build this relies on (the `uWebSockets.js` alias of
// @trufflesuite/uws-js-unofficial 20.30.0, native binding for Node 20 = ABI 115):
// - getUrl() is the raw path (percent-encoding kept, no query); getQuery() the raw query,
//   or undefined when there is none.
// - onData is called for every request, with an empty last chunk when there is no body;
//   chunked request bodies are decoded; "Expect: 100-continue" is answered by uWS itself.
// - end(body) on a HEAD request sends the body: HEAD is answered with an explicit
//   Content-Length header and endWithoutBody() (called with no argument: passing a length
//   or `undefined` makes uWS wait for a body that never comes and drop the connection).
// - end() writes Content-Length and Date itself, so the handler's values are not copied.
// - There is no per-connection local address (nor the remote port, nor the socket): on a
//   listener bound to an address, `address` is that address; on a wildcard (0.0.0.0, ::)
//   it is read from the kernel's socket table (local-address.ts).
// - After a response is ended before the body is fully read, uWS keeps reading and
//   discarding it (still calling onData), and the connection stays usable.
// - app.close() (not in the typings) closes the listen socket and every open connection.
// - It answers only HTTP/1.1 requests with a Host header: its parser waits on anything
//   else (an HTTP/1.0 request line, a request without Host) until the idle timeout closes
//   the connection, and no JavaScript sees it. HTTP/1.0 clients are served by node:http
//   (apiListener, mountApi; the zonal server's `api` locations).
// - A response written during the handler's own call needs no cork and no onAborted:
//   reads are answered there.
// - A response kept open (Server-Sent Events) is never timed out while no write is
//   pending. write() returns false when uWS had to buffer part of it; onWritable is then
//   called when the socket can take more, and while it is registered uWS leaves its
//   buffer to the application: a write('') drains it, true once it is empty, without
//   ending the chunked body. A write left buffered for 10 s closes the connection.
// - A `ws` route on a pattern takes only requests with a WebSocket key and passes others
//   on to the `get` route of the same pattern.
import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';
import { bodyText } from '../api/index.js';
import { parseInterval } from '../api/live.js';
import type { ApiRequest, ApiResponse } from '../api/types.js';
import { answer, answerLater, BODY_CAP, callHandler, isPromiseLike, notFound, reportError, toWire, type ApiServer, type ServeApiOptions, type WireResponse } from './common.js';
import { serveHttpApi } from './http.js';
import { isWildcard, LocalAddresses } from './local-address.js';
import { apiServer, Frame, Pusher, type Subscriber } from './push.js';

export type { ApiHandler, ApiServer, ServeApiOptions, TransportHandler } from './common.js';
export { BODY_CAP, BODY_LIMIT } from './common.js';

// uWebSockets.js is an optional peer dependency (docs/package.md): loaded on the first
// serveApi(), and when it is not installed the API is served by node:http instead.
type Uws = typeof UWS;
let uwsModule: Uws | null | undefined;

/** uWebSockets.js, or null when it is not installed. A CommonJS package whose exports are
 * a native module: loaded through require, so ESM callers and tap's TypeScript loader get
 * the same object. */
function loadUws(): Uws | null {
  if (uwsModule !== undefined) return uwsModule;
  let uWS: Uws;
  try {
    uWS = createRequire(import.meta.url)('uWebSockets.js') as Uws;
  } catch (e) {
    // Only its absence is a fallback: a copy that is there and fails to load is an error.
    if ((e as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' && (e as Error).message.includes("'uWebSockets.js'")) return (uwsModule = null);
    throw e;
  }
  // An API answer names no implementation: without this, uWS adds `uWebSockets: 20` to
  // every response. `_cfg('silent')` sets the loop's no-mark flag, for every uWS app of
  // the process.
  uWS._cfg('silent');
  return (uwsModule = uWS);
}

/** Whether serveApi() serves on uWebSockets.js (installed), rather than node:http. */
export function uwsAvailable(): boolean {
  return loadUws() !== null;
}

/** What to install for the uWebSockets.js listener: the build zonal is tested with. */
export const UWS_PACKAGE = 'uWebSockets.js@npm:@trufflesuite/uws-js-unofficial@20.30.0-unofficial.0';

/**
 * Serves the API on a listener of its own: uWebSockets.js when it is installed, else
 * node:http (serveHttpApi), which serves the same requests but WebSocket pushes, and says
 * so in one line through `options.log`.
 */
export function serveApi(options: ServeApiOptions): Promise<ApiServer> {
  const uWS = loadUws();
  if (!uWS) {
    const log = options.log ?? ((line: string) => process.stderr.write(`zonal: ${line}\n`));
    return serveHttpApi(options).then((server) => {
      log(
        `uWebSockets.js is not installed: the API on ${options.host}:${server.port} is served by node:http ` +
          `(Server-Sent Events push, WebSockets do not); \`npm install ${UWS_PACKAGE}\` for the uWebSockets.js listener`,
      );
      return server;
    });
  }
  const { host, port, handler } = options;
  const onError = options.onError ?? reportError;
  const address = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const app = uWS.App();
  const pusher = new Pusher(onError);
  // Made once the port is known (a port 0 is picked by the kernel).
  let locals: LocalAddresses | undefined;
  const localOf = isWildcard(address) ? (remote: string, host: string | undefined) => (locals ? locals.of(remote, host) : address) : undefined;

  // Every call into uWS costs the process 0.1-0.15 us (measured with wrk: getHeader about
  // 95 ns, writeHeader about 150 ns), a good part of what a small answer costs:
  // a route per read method saves asking for the method, and a read asks for the
  // Authorization header and the client's address only if something wants them.
  const onRead = (method: 'GET' | 'HEAD') => (res: UWS.HttpResponse, req: UWS.HttpRequest) => {
    // HttpRequest lives only during this call: what is kept is read now.
    const path = req.getUrl();
    const query = req.getQuery() ?? '';
    // A read is answered here and now: no onData, no onAborted, no closure kept, which is
    // most of what a small answer costs uWS (a response may be written in the handler's
    // own call without a cork, and cannot be aborted before it). The API reads no body
    // of a GET or HEAD, so none is waited for: uWS reads one that comes and drops it,
    // and the connection goes on (transport.test.ts sends both kinds).
    if (method === 'GET' && req.getHeader(ACCEPT).includes('text/event-stream')) return onEventStream(res, req, path, query);
    const request = new ReadRequest(method, path, query, address, localOf, req.getHeader(HOST), req, res);
    const wire = answerLater(handler, request, onError);
    if (!(wire instanceof Promise)) {
      request.settle(false);
      send(res, request, wire);
      return;
    }
    // It answers later (basic auth checks a hash off the event loop): what it may still
    // ask for is read now, while the request and the response are valid.
    request.settle(true);
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    void wire.then((w) => {
      if (!aborted) res.cork(() => send(res, request, w));
    });
  };
  // Before the `get` route: it takes only WebSocket upgrades, and passes other GETs on.
  app.ws<Socket>('/*', {
    compression: uWS.DISABLED,
    // A client sends only small requests to change its stream.
    maxPayloadLength: 16 * 1024,
    upgrade: (res, req, context) => {
      const secKey = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      const request = streamRequest(res, req, req.getUrl(), req.getQuery() ?? '');
      ask(res, request, (response) => {
        const stream = response?.stream;
        if (!stream) return send(res, request, answer(() => response, request, onError));
        const socket: Socket = { request, first: response, interval: stream.interval, subscriber: undefined, asked: 0, closed: false };
        res.upgrade(socket, secKey, protocol, extensions, context);
      });
    },
    open: (ws) => {
      const socket = ws.getUserData();
      const first = socket.first!;
      socket.first = undefined;
      socket.subscriber = new WebSocketSubscriber(ws);
      socket.subscriber.send(Frame.of(first));
      first.release?.();
      pusher.subscribe(socket.subscriber, first.stream!);
    },
    message: (ws, message) => onMessage(ws, Buffer.from(message).toString('utf8')),
    close: (ws) => {
      const socket = ws.getUserData();
      socket.closed = true;
      if (socket.subscriber) pusher.unsubscribe(socket.subscriber);
    },
  });
  app.get('/*', onRead('GET'));
  app.head('/*', onRead('HEAD'));
  app.any('/*', (res, req) => {
    const lower = req.getMethod();
    onAny(res, req, METHODS[lower] ?? lower.toUpperCase(), req.getUrl(), req.getQuery() ?? '');
  });

  /** The request of a stream: what a read asks with, and what the access rules in front
   * of the API (allow/deny, basic auth) look at, for the upgrade and each change after. */
  function streamRequest(res: UWS.HttpResponse, req: UWS.HttpRequest, path: string, query: string): ApiRequest {
    const host = req.getHeader('host');
    const authorization = req.getHeader('authorization');
    const remoteAddress = addressText(res);
    return {
      method: 'GET',
      path,
      query,
      address: localOf ? localOf(remoteAddress, host || undefined) : address,
      ...(host ? { host } : {}),
      ...(authorization ? { authorization } : {}),
      remoteAddress,
      stream: true,
    };
  }

  /** Asks the handler, and gives its answer to `then` (corked when it came later). */
  function ask(res: UWS.HttpResponse, request: ApiRequest, then: (response: ApiResponse | undefined) => void): void {
    const result = call(request);
    if (!isPromiseLike(result)) return then(result);
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    void result.then((response) => {
      if (aborted) response?.release?.();
      else res.cork(() => then(response));
    });
  }

  /** The handler's answer to a stream request; a failure is the 500 a read would get. */
  const call = (request: ApiRequest) => callHandler(handler, request, onError);

  /** `Accept: text/event-stream`: the answer as Server-Sent Events, until the client goes. */
  function onEventStream(res: UWS.HttpResponse, req: UWS.HttpRequest, path: string, query: string): void {
    const request = streamRequest(res, req, path, query);
    let subscriber: EventStreamSubscriber | undefined;
    let gone = false;
    res.onAborted(() => {
      gone = true;
      if (subscriber) pusher.unsubscribe(subscriber);
    });
    const result = call(request);
    const begin = (response: ApiResponse | undefined) => {
      if (gone) return void response?.release?.();
      const stream = response?.stream;
      if (!stream) return send(res, request, answer(() => response, request, onError));
      res.writeHeader('Content-Type', 'text/event-stream');
      res.writeHeader('Cache-Control', 'no-cache');
      subscriber = new EventStreamSubscriber(res);
      subscriber.send(Frame.of(response));
      response.release?.();
      pusher.subscribe(subscriber, stream);
    };
    if (isPromiseLike(result)) void result.then((r) => (gone ? r?.release?.() : res.cork(() => begin(r))));
    else begin(result);
  }

  /** A WebSocket's message: `{"path": "/status/...", "interval": 500}`, either or both,
   * changes what it is pushed. A bad one is answered with an error and changes nothing. */
  function onMessage(ws: UWS.WebSocket<Socket>, text: string): void {
    const socket = ws.getUserData();
    const change = parseChange(text);
    if (typeof change === 'string') return void ws.send(errorText('BadRequest', change));
    const base = socket.request;
    let path = base.path;
    let query = new URLSearchParams(base.query);
    if (change.path !== undefined) {
      const q = change.path.indexOf('?');
      path = q < 0 ? change.path : change.path.slice(0, q);
      query = new URLSearchParams(q < 0 ? '' : change.path.slice(q + 1));
    }
    // An interval not given now stays what it was.
    if (change.interval !== undefined || !query.has('interval')) query.set('interval', String(change.interval ?? socket.interval));
    const request: ApiRequest = { ...base, path, query: query.toString() };
    // Only the answer to the latest message counts, however the answers come.
    const asked = ++socket.asked;
    const apply = (response: ApiResponse | undefined) => {
      if (socket.closed || asked !== socket.asked) return void response?.release?.();
      const stream = response?.stream;
      if (!stream) {
        ws.send(response ? bodyText(response) : errorText('PathNotFound', `Requested API entity "${path}" doesn't exist.`));
        return void response?.release?.();
      }
      socket.request = request;
      socket.interval = stream.interval;
      socket.subscriber!.send(Frame.of(response));
      response.release?.();
      pusher.subscribe(socket.subscriber!, stream);
    };
    const result = call(request);
    if (isPromiseLike(result)) void result.then((r) => (socket.closed ? r?.release?.() : ws.cork(() => apply(r))));
    else apply(result);
  }

  /** Any request with a body (or whose method is not GET or HEAD): answered once its
   * body is read. */
  function onAny(res: UWS.HttpResponse, req: UWS.HttpRequest, method: string, path: string, query: string): void {
    const hostHeader = req.getHeader('host');
    const authorization = req.getHeader('authorization');

    // What makes a write safe (Content-Type, Origin) and conditional: only writes read it.
    const writes = method !== 'GET' && method !== 'HEAD';
    const contentType = writes ? req.getHeader('content-type') : '';
    const origin = writes ? req.getHeader('origin') : '';
    const ifMatch = writes ? req.getHeader('if-match') : '';
    const ifNoneMatch = writes ? req.getHeader('if-none-match') : '';
    const remoteAddress = addressText(res);
    const local = localOf ? localOf(remoteAddress, hostHeader || undefined) : address;
    let aborted = false;
    let answered = false;
    const chunks: Buffer[] = [];
    let size = 0;

    res.onAborted(() => {
      aborted = true;
    });

    const respond = () => {
      answered = true;
      const apiReq: ApiRequest = {
        method,
        path,
        query,
        address: local,
        ...(size > 0 ? { body: Buffer.concat(chunks, size) } : {}),
        ...(hostHeader ? { host: hostHeader } : {}),
        ...(authorization ? { authorization } : {}),
        ...(contentType ? { contentType } : {}),
        ...(origin ? { origin } : {}),
        ...(ifMatch ? { ifMatch } : {}),
        ...(ifNoneMatch ? { ifNoneMatch } : {}),
        remoteAddress,
      };
      chunks.length = 0;
      const wire = answerLater(handler, apiReq, onError);
      if (wire instanceof Promise) {
        // The response may only be written inside a cork once this callback has returned.
        void wire.then((w) => {
          if (!aborted) res.cork(() => send(res, apiReq, w));
        });
      } else if (!aborted) res.cork(() => send(res, apiReq, wire));
    };

    res.onData((chunk, isLast) => {
      if (answered || aborted) return; // the rest of an over-long body: uWS discards it
      if (size < BODY_CAP && chunk.byteLength > 0) {
        // The chunk's memory is reused after this call: copy what is kept.
        const keep = Math.min(chunk.byteLength, BODY_CAP - size);
        chunks.push(Buffer.from(new Uint8Array(chunk, 0, keep)));
        size += keep;
      }
      if (isLast || size >= BODY_CAP) respond();
    });
  }

  return new Promise((resolve, reject) => {
    app.listen(address, port, (listenSocket) => {
      if (!listenSocket) {
        reject(new Error(`zonal API: cannot listen on ${address}:${port}`));
        return;
      }
      const listening = uWS.us_socket_local_port(listenSocket as unknown as UWS.us_socket);
      if (localOf) locals = new LocalAddresses(address, listening);
      resolve(
        apiServer(listening, pusher, () => {
          locals?.close();
          const closeAll = (app as unknown as { close?: () => void }).close;
          if (typeof closeAll === 'function') closeAll.call(app);
          else uWS.us_listen_socket_close(listenSocket);
        }),
      );
    });
  });
}

/**
 * A read's request. The client's address is read from the socket only if something asks
 * for it (allow/deny): most reads need no copy of it. A class, so that every request has
 * the same shape: an object literal with a getter gets a hidden class of its own each time.
 */
class ReadRequest implements ApiRequest {
  readonly host: string | undefined;
  private remote: string | undefined;
  private auth: string | undefined | null;
  private req: UWS.HttpRequest | undefined;
  private local: string | undefined;
  private res: UWS.HttpResponse | undefined;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly query: string,
    private readonly bound: string,
    /** On a wildcard listener: the local address of a connection from a client. */
    private readonly localOf: ((remote: string, host: string | undefined) => string) | undefined,
    host: string,
    req: UWS.HttpRequest,
    res: UWS.HttpResponse,
  ) {
    this.host = host || undefined;
    this.remote = undefined;
    this.auth = null;
    this.req = req;
    this.local = undefined;
    this.res = res;
  }

  /** The listener's address, or on a wildcard the connection's own, looked up only if
   * something asks (the Host rule, /status/server/address). */
  get address(): string {
    if (!this.localOf) return this.bound;
    if (this.local === undefined) {
      const remote = this.remoteAddress;
      this.local = remote === undefined ? this.bound : this.localOf(remote, this.host);
    }
    return this.local;
  }

  get remoteAddress(): string | undefined {
    if (this.remote === undefined && this.res) this.remote = addressText(this.res);
    return this.remote;
  }

  get authorization(): string | undefined {
    if (this.auth === null) this.auth = this.req ? this.req.getHeader('authorization') || undefined : undefined;
    return this.auth;
  }

  /** The response is about to be written, or the answer waits: what may be wanted later
   * (`keep`) is read now, and nothing from a finished request or response. */
  settle(keep: boolean): void {
    if (keep) {
      void this.remoteAddress;
      void this.authorization;
      void this.address;
    }
    this.req = undefined;
    this.res = undefined;
  }
}

/** A WebSocket's own state. */
interface Socket {
  /** What it asks with: its path and query, and what the access rules look at. */
  request: ApiRequest;
  /** The answer to the upgrade, until it is sent on open. */
  first: ApiResponse | undefined;
  interval: number;
  subscriber: WebSocketSubscriber | undefined;
  /** Changes asked for so far: only the latest one's answer is applied. */
  asked: number;
  closed: boolean;
}

class WebSocketSubscriber implements Subscriber {
  constructor(private readonly ws: UWS.WebSocket<Socket>) {}

  busy(): boolean {
    return this.ws.getBufferedAmount() > 0;
  }

  send(frame: Frame): void {
    this.ws.send(frame.text);
  }
}

class EventStreamSubscriber implements Subscriber {
  private blocked = false;

  constructor(private readonly res: UWS.HttpResponse) {}

  busy(): boolean {
    return this.blocked;
  }

  send(frame: Frame): void {
    this.res.cork(() => {
      if (this.res.write(frame.sse)) return;
      // Part of it waits in uWS's buffer: nothing more until the buffer is empty.
      this.blocked = true;
      this.res.onWritable(this.drain);
    });
  }

  private readonly drain = (): boolean => {
    if (this.res.write('')) this.blocked = false;
    return true;
  };
}

const CHANGE_MEMBERS = new Set(['path', 'interval']);

/** A WebSocket message asking for another path or interval, or why it is not one. */
function parseChange(text: string): { path?: string; interval?: number } | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'The message is not JSON: send {"path": "/status/...", "interval": 1000}, either or both.';
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'The message is not a JSON object: send {"path": "/status/...", "interval": 1000}, either or both.';
  const change = value as Record<string, unknown>;
  for (const name of Object.keys(change)) if (!CHANGE_MEMBERS.has(name)) return `The "${name}" member is unknown: a message has "path", "interval", or both.`;
  if (change.path === undefined && change.interval === undefined) return 'The message changes nothing: give "path", "interval", or both.';
  const out: { path?: string; interval?: number } = {};
  if (change.path !== undefined) {
    const path = change.path;
    if (typeof path !== 'string' || !path.startsWith('/') || path.length > 4096 || /[\x00-\x20\x7f]/.test(path))
      return 'The "path" is a request path: a string starting with "/", without spaces or control characters.';
    out.path = path;
  }
  if (change.interval !== undefined) {
    const interval = typeof change.interval === 'number' && Number.isInteger(change.interval) ? parseInterval([String(change.interval)]) : 'The "interval" is a whole number of milliseconds.';
    if (typeof interval === 'string') return interval;
    out.interval = interval;
  }
  return out;
}

function errorText(error: string, description: string): string {
  return JSON.stringify({ error, description });
}

/** uWS's lower-case methods as the API spells them, without a new string each time. */
const METHODS: Record<string, string> = { get: 'GET', head: 'HEAD', put: 'PUT', patch: 'PATCH', delete: 'DELETE', post: 'POST', options: 'OPTIONS' };

// uWS writes a header as `name: value` and CRLF, as given: the headers after the first
// go out as the rest of the first one's value, in one call instead of one each. toWire
// has checked that no name or value holds a CR or LF. An answer's headers are mostly the
// same strings as the last one's: the joined text is kept for them, as bytes.
let lastHeaders: Array<[string, string]> = [];
let lastName: Uint8Array = new Uint8Array(0);
let lastValue: Uint8Array = new Uint8Array(0);
function writeHeaders(res: UWS.HttpResponse, headers: Array<[string, string]>): void {
  const n = headers.length;
  let same = headers === lastHeaders;
  if (!same) {
    same = n === lastHeaders.length;
    for (let i = 0; same && i < n; i++) same = headers[i][0] === lastHeaders[i][0] && headers[i][1] === lastHeaders[i][1];
  }
  if (!same) {
    let value = headers[0][1];
    for (let i = 1; i < n; i++) value += `\r\n${headers[i][0]}: ${headers[i][1]}`;
    lastHeaders = headers;
    lastName = Buffer.from(headers[0][0]);
    lastValue = Buffer.from(value);
  }
  res.writeHeader(lastName, lastValue);
}

// Header names asked of every read, as bytes: uWS encodes a string argument anew on each
// call.
const ACCEPT = Buffer.from('accept');
const HOST = Buffer.from('host');

function addressText(res: UWS.HttpResponse): string {
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}

/** Writes a prepared answer, or the JSON 404 when no API mount took the request; the
 * caller corks when it is outside the request's own call. */
function send(res: UWS.HttpResponse, request: ApiRequest, answer: WireResponse | undefined): void {
  const head = request.method === 'HEAD';
  try {
    const wire = answer ?? toWire(request.method, notFound(request));
    // uWS writes "200 OK" itself when no status was written: one call less for most answers.
    if (wire.status !== 200) res.writeStatus(wire.statusLine);
    const headers = wire.headers;
    if (headers.length > 0) writeHeaders(res, headers);
    if (head) {
      res.writeHeader('Content-Length', String(wire.contentLength));
      res.endWithoutBody();
    } else {
      res.end(wire.body);
    }
    // uWS has copied whatever the socket did not take at once.
    wire.release?.();
  } catch (err) {
    // Only a uWS failure gets here (the response was checked): drop the connection rather
    // than leave it half written.
    reportError(err);
    try {
      res.close();
    } catch {
      // already gone
    }
  }
}
