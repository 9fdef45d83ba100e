// What both transports share: the body cap, the answers a transport gives on its own (no
// API mount matched, the handler failed), and the checks that turn a handler's
// ApiResponse into something safe to put on the wire.
import { STATUS_CODES } from 'node:http';
import type { ApiHandler } from '../api/index.js';
import { apiError, pathNotFound } from '../api/errors.js';
import type { ApiRequest, ApiResponse } from '../api/types.js';

/** The API (`createApi`): synchronous; `undefined` when no API mount matches the path. */
export type { ApiHandler };

/** What a transport serves: the API, or something in front of it that may wait (basic
 * auth checks a bcrypt hash off the event loop) before it answers or hands over. */
export type TransportHandler = (request: ApiRequest) => ApiResponse | undefined | PromiseLike<ApiResponse | undefined>;

/** The largest request body the API accepts. */
export const BODY_LIMIT = 64 * 1024;
/**
 * Bytes of a request body a transport keeps: one more than the limit, so the API sees that
 * a body is too large (`body.length > BODY_LIMIT`) and answers 413 itself. The transport
 * answers as soon as it has this many bytes and discards the rest of the body, so the
 * connection stays usable.
 */
export const BODY_CAP = BODY_LIMIT + 1;

/** Headers a transport computes itself: a handler's values for them are not copied. */
const OWN_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'date', 'keep-alive']);

/** The answer when no API mount matched the path: the API's own PathNotFound. */
export function notFound(req: ApiRequest): ApiResponse {
  return pathNotFound(req.path, req.method === 'HEAD');
}

/** The answer when the handler threw or returned something that is not a response. */
export function internalError(method: string): ApiResponse {
  return apiError(500, 'InternalError', 'The request could not be processed because of an internal error.', method === 'HEAD');
}

/** A response ready to write: status line, headers without the ones the transport owns. */
export interface WireResponse {
  status: number;
  /** `"200 OK"`, `"413 Payload Too Large"`, ... */
  statusLine: string;
  /** Header pairs to write, in order, without Content-Length, Date, Connection, Transfer-Encoding.
   * Read only: answers with the same headers share one array. */
  headers: Array<[string, string]>;
  /** Content-Length: the handler's value for HEAD (the length of the GET body), else the body's. */
  contentLength: number;
  /** Empty for HEAD. */
  body: string | Uint8Array;
  /** The handler's ApiResponse.release, for once the body is written out. */
  release?: () => void;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const DIGITS = /^\d+$/;

const statusLines = new Map<number, string>();

function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (line === undefined) statusLines.set(status, (line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`));
  return line;
}

// The last answer's headers, as given (Content-Length's value as undefined: it changes
// with every answer) and as prepared: answers come with the same few headers in the same
// order (Content-Type, Cache-Control, Expires, a Content-Length), and such an answer's
// headers need no check, no lower case and no new pairs. The same pairs array is given
// again, which the uWS transport then writes without joining it anew.
let lastNames: string[] = [];
let lastValues: Array<string | undefined> = [];
let lastPairs: Array<[string, string]> = [];

/**
 * Checks a handler's answer and prepares it for the wire; throws when it cannot be written
 * (not an object, status outside 200-599 (a 1xx is no final answer), a header that would break the response), which
 * the transport turns into a 500 like any other handler failure.
 */
export function toWire(method: string, res: ApiResponse): WireResponse {
  if (res === null || typeof res !== 'object') throw new TypeError(`handler returned ${typeof res}, not a response`);
  const { status } = res;
  if (!Number.isInteger(status) || status < 200 || status > 599) throw new RangeError(`bad status ${String(status)}`);
  const body = typeof res.body === 'string' || res.body instanceof Uint8Array ? res.body : '';
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  const given = res.headers ?? {};
  let declaredLength: number | undefined;
  let same = true;
  let n = 0;
  for (const name in given) {
    if (!Object.hasOwn(given, name)) continue;
    if (name !== lastNames[n]) {
      same = false;
      break;
    }
    const value = text(given[name]);
    const last = lastValues[n++];
    if (last === undefined) declaredLength = contentLength(value, length);
    else if (value !== last) {
      same = false;
      break;
    }
  }
  let headers = lastPairs;
  if (!same || n !== lastNames.length) {
    headers = [];
    const names: string[] = [];
    const values: Array<string | undefined> = [];
    declaredLength = undefined;
    for (const name in given) {
      if (!Object.hasOwn(given, name)) continue;
      const value = text(given[name]);
      const lower = name.toLowerCase();
      names.push(name);
      if (lower === 'content-length') {
        declaredLength = contentLength(value, length);
        values.push(undefined);
        continue;
      }
      if (!TOKEN.test(name) || !FIELD_VALUE.test(value)) throw new TypeError(`bad header ${JSON.stringify(name)}`);
      values.push(value);
      if (!OWN_HEADERS.has(lower)) headers.push([name, value]);
    }
    lastNames = names;
    lastValues = values;
    lastPairs = headers;
  }
  const head = method === 'HEAD';
  return {
    status,
    statusLine: statusLine(status),
    headers,
    contentLength: head ? (declaredLength ?? length) : length,
    body: head ? '' : body,
    release: typeof res.release === 'function' ? res.release : undefined,
  };
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : String(value);
}

/** A handler's Content-Length: checked on its own, as its value changes with every
 * answer. The name is a token (its lower case is one); a value that is the body's own
 * length, as most are, is digits already. */
function contentLength(value: string, length: number): number {
  if (value === String(length)) return length;
  if (DIGITS.test(value)) return Number(value);
  throw new TypeError(`bad Content-Length ${JSON.stringify(value)}`);
}

/**
 * Calls the handler and prepares its answer; never throws. `undefined` when no API mount
 * matched. A handler that throws, or answers something unwritable, gives a 500
 * InternalError and is reported through `onError`.
 */
export function answer(handler: ApiHandler, req: ApiRequest, onError: (err: unknown) => void): WireResponse | undefined {
  let res: ApiResponse | undefined;
  try {
    res = handler(req);
  } catch (err) {
    return failed(req, err, onError);
  }
  return prepared(res, req, onError);
}

/** A handler's answer prepared for the wire, or its 500 when it cannot be written. */
function prepared(res: ApiResponse | undefined, req: ApiRequest, onError: (err: unknown) => void): WireResponse | undefined {
  try {
    return res === undefined ? undefined : toWire(req.method, res);
  } catch (err) {
    return failed(req, err, onError);
  }
}

/**
 * Calls a handler that may answer later; never throws. A failure, thrown or rejected, is
 * reported through `onError` and answered as the 500 InternalError. A promise only when
 * the handler gave one. What a transport uses when it needs the ApiResponse itself (a
 * stream's answer carries its `stream`).
 */
export function callHandler(
  handler: TransportHandler,
  req: ApiRequest,
  onError: (err: unknown) => void,
): ApiResponse | undefined | Promise<ApiResponse | undefined> {
  let res: ReturnType<TransportHandler>;
  try {
    res = handler(req);
  } catch (err) {
    return failure(req, err, onError);
  }
  if (res === undefined || !isPromiseLike(res)) return res;
  return Promise.resolve(res).then(
    (value) => value,
    (err) => failure(req, err, onError),
  );
}

/** answer() for a handler that may return a promise: a promise only when it did. */
export function answerLater(
  handler: TransportHandler,
  req: ApiRequest,
  onError: (err: unknown) => void,
): WireResponse | undefined | Promise<WireResponse | undefined> {
  const res = callHandler(handler, req, onError);
  if (!isPromiseLike(res)) return prepared(res, req, onError);
  return res.then((value) => prepared(value, req, onError));
}

export function isPromiseLike<T>(v: T | PromiseLike<T>): v is PromiseLike<T> {
  return typeof (v as PromiseLike<T> | undefined)?.then === 'function';
}

/** Tells `onError` of a handler's failure and gives its 500 InternalError. */
function failure(req: ApiRequest, err: unknown, onError: (err: unknown) => void): ApiResponse {
  try {
    onError(err);
  } catch {
    // a failing error reporter must not take the answer with it
  }
  return internalError(req.method);
}

function failed(req: ApiRequest, err: unknown, onError: (err: unknown) => void): WireResponse {
  return toWire(req.method, failure(req, err, onError));
}

// The API on a listener of its own: serveApi (uws.ts) and its node:http fallback
// (serveHttpApi, http.ts) take and give the same.
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
  /** Where serveApi() says, in one line, that uWebSockets.js is missing and node:http
   * serves instead; default: stderr, after `zonal: `. */
  log?: (line: string) => void;
}

export interface ApiServer {
  /** The port listened on (the one picked when asked for 0). */
  readonly port: number;
  /** Stops listening and closes every open connection. Idempotent. */
  close(): void;
  /** Live streams (Server-Sent Events and WebSockets) being pushed now. */
  readonly subscribers: number;
  /** Their timers: one per (path, query, interval) that has subscribers. */
  readonly timers: number;
}

/** The default error reporter: a process warning, which never throws. */
export function reportError(err: unknown): void {
  const text = err instanceof Error ? (err.stack ?? err.message) : String(err);
  process.emitWarning(`zonal API handler failed: ${text}`, 'ZonalApiWarning');
}

/**
 * Splits a request target into raw path and raw query (no '?'), both still
 * percent-encoded, nothing decoded or removed. An absolute-form target (`http://host/path`,
 * which node:http passes on as it came) keeps only its path.
 */
export function splitTarget(target: string): { path: string; query: string } {
  let rest = target;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(rest);
  if (scheme) rest = rest.slice(scheme[0].length) || '/';
  const q = rest.indexOf('?');
  return q < 0 ? { path: rest, query: '' } : { path: rest.slice(0, q), query: rest.slice(q + 1) };
}

/** A local address as the API reports it: IPv4-mapped IPv6 (`::ffff:127.0.0.1`) as IPv4. */
export function localAddress(address: string | undefined): string {
  if (!address) return '';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address;
}
