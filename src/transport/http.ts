// The API as a request listener for node:http and anything built on it.
//
//   const api = apiListener(handler);
//   // node:http: the API answers its paths; with `next`, other paths go to the host's routes
//   http.createServer((req, res) => api(req, res, () => routes(req, res)));
//   // express: mount it with no prefix (`app.use(api)`) and before body parsers. The
//   // handler's own API mounts decide which paths it answers; express's prefix stripping
//   // does not matter (req.originalUrl is used), but a prefix the mounts do not know is
//   // better left out.
//   app.use(api);
//   // fastify: in an onRequest hook, `reply.hijack()` first, then api(req.raw, reply.raw, ...).
//
// The handler is called once the whole body is in (at most BODY_CAP bytes are kept; once
// that many arrived the API answers, which is a 413, and the rest is read and discarded).
// A request without a body (no Content-Length or 0, no Transfer-Encoding) is handled at
// once, so the return value says whether the API took it. A request with a body is
// taken (true) and goes to `next` only after its body was read: a host route then sees
// the body already consumed.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiRequest, ApiResponse } from '../api/types.js';
import {
  answer,
  answerLater,
  BODY_CAP,
  callHandler,
  isPromiseLike,
  localAddress,
  notFound,
  reportError,
  splitTarget,
  toWire,
  type ApiHandler,
  type ApiServer,
  type TransportHandler,
  type ServeApiOptions,
  type WireResponse,
} from './common.js';
import { apiServer, Frame, Pusher, type Subscriber } from './push.js';

export type { ApiHandler } from './common.js';
export { BODY_CAP, BODY_LIMIT } from './common.js';

/**
 * Handles one request. Returns true when it answered the request or will (the body is
 * being read), false when it passed the request on to `next` at once. Without `next`, a
 * path no API mount matches gets a JSON 404 PathNotFound.
 */
export type ApiListener = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void, captures?: readonly string[]) => boolean;

export interface ApiListenerOptions {
  /** Called with whatever the handler threw; default: a process warning. */
  onError?: (err: unknown) => void;
}

export function apiListener(handler: TransportHandler, options: ApiListenerOptions = {}): ApiListener {
  const onError = options.onError ?? reportError;

  /** `captures`: the `$1`..`$9` the request's server matched (ApiRequest.captures). It
   * comes as a rest parameter so that the function takes three (`length` 3): Express
   * takes a function of four for an error handler, and never calls it for a request. */
  return (req, res, next, ...[captures]) => {
    const base = requestOf(req, captures);
    const method = base.method;

    // Returns false when passed on to next.
    const respond = (body: Buffer | undefined): boolean => {
      const apiReq = body && body.length > 0 ? { ...base, body } : base;
      const wire = answerLater(handler, apiReq, onError);
      // A write to a configuration kept in a store answers once the store committed it.
      if (wire instanceof Promise) {
        void wire.then((w) => write(res, w ?? toWire(method, notFound(apiReq)), onError));
        return true;
      }
      if (wire === undefined && next) {
        next();
        return false;
      }
      write(res, wire ?? toWire(method, notFound(apiReq)), onError);
      return true;
    };

    if (!hasBody(req)) return respond(undefined);

    if (req.readableEnded) {
      // A body parser mounted before the API consumed the stream: take a raw body it left.
      const parsed = (req as IncomingMessage & { body?: unknown }).body;
      const body = Buffer.isBuffer(parsed) ? parsed : typeof parsed === 'string' ? Buffer.from(parsed) : undefined;
      return respond(body?.subarray(0, BODY_CAP));
    }

    readBody(req, respond);
    return true;
  };
}

/** Whether the request comes with a body: a Content-Length other than 0, or a
 * Transfer-Encoding. */
function hasBody(req: IncomingMessage): boolean {
  const contentLength = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (contentLength !== undefined && contentLength !== '0');
}

/** Reads the body and gives `done` its first BODY_CAP bytes, once they or the end are in.
 * The rest of an over-long body is read and dropped, so that the connection stays usable;
 * a client that goes away mid-body gets nothing called. */
function readBody(req: IncomingMessage, done: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    done(Buffer.concat(chunks, size));
    chunks.length = 0;
  };
  req.on('data', (chunk: Buffer) => {
    if (finished) return;
    const keep = Math.min(chunk.length, BODY_CAP - size);
    chunks.push(keep === chunk.length ? chunk : chunk.subarray(0, keep));
    size += keep;
    if (size >= BODY_CAP) finish();
  });
  req.on('end', finish);
  req.on('error', () => {
    finished = true;
  });
  req.on('close', () => {
    if (!req.complete) finished = true;
  });
}

function write(res: ServerResponse, wire: WireResponse, onError: (err: unknown) => void): void {
  if (res.writableEnded || res.destroyed) return;
  try {
    if (res.headersSent) throw new Error('headers already sent by someone else');
    const headers: Record<string, string> = Object.fromEntries(wire.headers);
    headers['Content-Length'] = String(wire.contentLength);
    res.writeHead(wire.status, headers);
    // The socket holds the body until it is written out: 'finish' says it was.
    if (wire.release) res.once('finish', wire.release);
    res.end(wire.body);
  } catch (err) {
    onError(err);
    res.destroy();
  }
}

/**
 * Serves the API on a node:http server: requests the API does not take get the JSON 404
 * unless `fallback` is given, which then receives them.
 */
export function mountApi(server: Server, handler: ApiHandler, fallback?: (req: IncomingMessage, res: ServerResponse) => void): ApiListener {
  const listener = apiListener(handler);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    listener(req, res, fallback ? () => fallback(req, res) : undefined);
  });
  return listener;
}

/** The API's request for a node:http request (its body not yet read). */
function requestOf(req: IncomingMessage, captures?: readonly string[]): ApiRequest {
  const target = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '/';
  const { path, query } = splitTarget(target);
  return {
    method: (req.method ?? 'GET').toUpperCase(),
    path,
    query,
    address: localAddress(req.socket.localAddress),
    ...(req.headers.host ? { host: req.headers.host } : {}),
    ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    ...conditions(req),
    remoteAddress: localAddress(req.socket.remoteAddress),
    ...(captures ? { captures } : {}),
  };
}

/**
 * The API on a node:http listener of its own: what serveApi() serves on when
 * uWebSockets.js is not installed. Every request goes to the handler, which may answer
 * later; a path no API mount matches gets the JSON 404. A read with `Accept:
 * text/event-stream` is pushed as Server-Sent Events as on uWS; a WebSocket upgrade is
 * not taken (node:http then answers it as a plain read).
 */
export function serveHttpApi(options: ServeApiOptions): Promise<ApiServer> {
  const { host, port, handler } = options;
  const onError = options.onError ?? reportError;
  const address = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const pusher = new Pusher(onError);

  const server = createServer((req, res) => {
    const base = requestOf(req);
    if (base.method === 'GET' && (req.headers.accept ?? '').includes('text/event-stream')) return eventStream(res, { ...base, stream: true });
    const respond = (body: Buffer | undefined) => {
      const apiReq = body && body.length > 0 ? { ...base, body } : base;
      const wire = answerLater(handler, apiReq, onError);
      const send = (w: WireResponse | undefined) => write(res, w ?? toWire(apiReq.method, notFound(apiReq)), onError);
      if (wire instanceof Promise) void wire.then(send);
      else send(wire);
    };
    if (hasBody(req)) readBody(req, respond);
    else respond(undefined);
  });

  /** `Accept: text/event-stream`: the answer as Server-Sent Events, until the client goes. */
  function eventStream(res: ServerResponse, request: ApiRequest): void {
    const begin = (response: ApiResponse | undefined) => {
      if (res.destroyed) return void response?.release?.();
      const stream = response?.stream;
      if (!stream) return write(res, answer(() => response, request, onError) ?? toWire(request.method, notFound(request)), onError);
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      const subscriber = new EventStreamSubscriber(res);
      subscriber.send(Frame.of(response));
      response.release?.();
      pusher.subscribe(subscriber, stream);
      res.once('close', () => pusher.unsubscribe(subscriber));
    };
    const result = callHandler(handler, request, onError);
    if (isPromiseLike(result)) void result.then(begin);
    else begin(result);
  }

  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`zonal API: cannot listen on ${address}:${port}: ${err.message}`)));
    server.listen(port, address, () => {
      resolve(
        apiServer((server.address() as AddressInfo).port, pusher, () => {
          server.close();
          server.closeAllConnections();
        }),
      );
    });
  });
}

/** A Server-Sent Events response: a frame the socket did not take at once makes it skip
 * ticks until it drains. */
class EventStreamSubscriber implements Subscriber {
  private blocked = false;

  constructor(private readonly res: ServerResponse) {}

  busy(): boolean {
    return this.blocked;
  }

  send(frame: Frame): void {
    if (this.res.write(frame.sse)) return;
    this.blocked = true;
    this.res.once('drain', () => (this.blocked = false));
  }
}

/** The headers that make a write safe (Content-Type, Origin) and conditional (If-Match,
 * If-None-Match): read only for methods that write, so that a GET costs nothing more. */
function conditions(req: IncomingMessage): Partial<ApiRequest> {
  const m = req.method;
  if (m === 'GET' || m === 'HEAD') return {};
  const h = req.headers;
  const out: { -readonly [K in keyof ApiRequest]?: ApiRequest[K] } = {};
  if ((req.socket as { encrypted?: boolean }).encrypted) out.secure = true;
  if (h['content-type'] !== undefined) out.contentType = h['content-type'];
  if (h.origin !== undefined) out.origin = h.origin;
  if (h['if-match'] !== undefined) out.ifMatch = h['if-match'];
  if (h['if-none-match'] !== undefined) out.ifNoneMatch = h['if-none-match'];
  return out;
}
