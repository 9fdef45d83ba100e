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
import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';
import type { ApiRequest } from '../api/types.js';
import { answerLater, BODY_CAP, notFound, reportError, toWire, type TransportHandler, type WireResponse } from './common.js';
import { isWildcard, LocalAddresses } from './local-address.js';

export type { ApiHandler, TransportHandler } from './common.js';
export { BODY_CAP, BODY_LIMIT } from './common.js';

// A CommonJS package whose exports are a native module: loaded through require, so ESM
// callers and tap's TypeScript loader get the same object.
const uWS = createRequire(import.meta.url)('uWebSockets.js') as typeof UWS;
// An API answer names no implementation: without this, uWS adds `uWebSockets: 20` to every
// response. `_cfg('silent')` (not in the typings) sets the loop's no-mark flag, for every
// uWS app of the process.
(uWS as unknown as { _cfg(key: string): void })._cfg('silent');

export interface ServeApiOptions {
  /** Address to listen on (loopback in tests: 127.0.0.1 or ::1); reported as `address`,
   * or, when it is 0.0.0.0 or ::, the local address that took each connection. */
  host: string;
  /** Port; 0 picks a free one. */
  port: number;
  /** The API, or a handler in front of it (access rules, basic auth) that may answer later. */
  handler: TransportHandler;
  /** Called with whatever the handler threw; default: a process warning. */
  onError?: (err: unknown) => void;
}

export interface ApiServer {
  /** The port listened on (the one picked when asked for 0). */
  readonly port: number;
  /** Stops listening and closes every open connection. Idempotent. */
  close(): void;
}

export function serveApi(options: ServeApiOptions): Promise<ApiServer> {
  const { host, port, handler } = options;
  const onError = options.onError ?? reportError;
  const address = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const app = uWS.App();
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
    const request = new ReadRequest(method, path, query, address, localOf, req.getHeader('host'), req, res);
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
  app.get('/*', onRead('GET'));
  app.head('/*', onRead('HEAD'));
  app.any('/*', (res, req) => {
    const lower = req.getMethod();
    onAny(res, req, METHODS[lower] ?? lower.toUpperCase(), req.getUrl(), req.getQuery() ?? '');
  });

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
      let closed = false;
      const listening = uWS.us_socket_local_port(listenSocket as unknown as UWS.us_socket);
      if (localOf) locals = new LocalAddresses(address, listening);
      resolve({
        port: listening,
        close() {
          if (closed) return;
          closed = true;
          locals?.close();
          const closeAll = (app as unknown as { close?: () => void }).close;
          if (typeof closeAll === 'function') closeAll.call(app);
          else uWS.us_listen_socket_close(listenSocket);
        },
      });
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

/** uWS's lower-case methods as the API spells them, without a new string each time. */
const METHODS: Record<string, string> = { get: 'GET', head: 'HEAD', put: 'PUT', patch: 'PATCH', delete: 'DELETE', post: 'POST', options: 'OPTIONS' };

// uWS writes a header as `name: value` and CRLF, as given: the headers after the first
// go out as the rest of the first one's value, in one call instead of one each. toWire
// has checked that no name or value holds a CR or LF. An answer's headers are mostly the
// same strings as the last one's: the joined text is kept for them.
let lastHeaders: Array<[string, string]> = [];
let lastValue = '';
function oneValue(headers: Array<[string, string]>): string {
  const n = headers.length;
  let same = n === lastHeaders.length;
  for (let i = 0; same && i < n; i++) same = headers[i][0] === lastHeaders[i][0] && headers[i][1] === lastHeaders[i][1];
  if (same) return lastValue;
  let value = headers[0][1];
  for (let i = 1; i < n; i++) value += `\r\n${headers[i][0]}: ${headers[i][1]}`;
  lastHeaders = headers;
  lastValue = value;
  return value;
}

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
    if (headers.length > 0) res.writeHeader(headers[0][0], oneValue(headers));
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
