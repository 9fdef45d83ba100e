// The one context every HTTP variable reads, whatever phase evaluates it: the request,
// its response, and what the phases before have decided. A phase gives what it knows; a
// variable whose part is not known yet is not found (empty), as in nginx. The access log
// gives it all once the request is over. The variables themselves are declared by the
// modules that own them and assembled in config/variables.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { binaryAddress, hostOfHeader, unmapped } from '../../api/variables.js';
import type { UpstreamAttempt } from '../log/upstream-trace.js';

export interface HttpContext {
  readonly req: IncomingMessage;
  /** The response, once the content phase has one. */
  readonly res?: ServerResponse;
  /** $uri: the normalised URI. */
  readonly uri: string;
  /** `$server_name`: the first name of the virtual server. */
  readonly serverName?: string;
  /** $1..$9: the captures of a regex location or an `if`. */
  captures?: readonly string[];
  /** The status being answered, where the response's head is being made (add_header). */
  readonly status?: number;
  /** `$proxy_host`, `$proxy_port`: the upstream's name, or the address of `proxy_pass`. */
  readonly proxyHost?: string;
  readonly proxyPort?: string;
  /** `$upstream_cache_status`: HIT, MISS, ... once the proxy cache decided. */
  readonly upstreamCacheStatus?: string;
  // What the log phase knows once the request is over.
  /** performance.now() when the request's headers were in. */
  readonly start?: number;
  /** Bytes read for the request (line, headers, body) and written for its response. */
  readonly received?: number;
  readonly written?: number;
  readonly connection?: number;
  readonly connectionRequests?: number;
  /** The request came in the same read as the one before it on its connection. */
  readonly pipelined?: boolean;
  /** Every peer tried, in order ($upstream_addr, $upstream_status...). */
  readonly upstream?: readonly UpstreamAttempt[];
}

/** The context of a request at its place: what a phase adds it defines on it (getters
 * of what the phase decides as it goes). */
export function requestContext(req: IncomingMessage, res: ServerResponse, uri: string, captures: readonly string[] | undefined, more?: PropertyDescriptorMap): HttpContext {
  const c: HttpContext = captures ? { req, res, uri, captures } : { req, res, uri };
  return more ? Object.defineProperties(c, more) : c;
}

const REQUEST_URI = Symbol('zonal.requestUri');
const REWRITTEN_HERE = Symbol('zonal.rewrittenHere');
type Retargeted = IncomingMessage & { [REQUEST_URI]?: string; [REWRITTEN_HERE]?: boolean };

/** Gives the request a new URI and arguments (`req.url`: a rewrite, an internal
 * redirect), keeping what the client sent for `$request_uri` and `$request`. */
export function retarget(req: IncomingMessage, url: string): void {
  const r = req as Retargeted;
  r[REQUEST_URI] ??= req.url;
  req.url = url;
}

/** `$request_uri`: the target as the client sent it. */
export const requestUri = (req: IncomingMessage): string => (req as Retargeted)[REQUEST_URI] ?? req.url ?? '';

/** `$request`: the request line as the client sent it. */
export const requestLine = (req: IncomingMessage): string => `${req.method} ${requestUri(req)} HTTP/${req.httpVersion}`;

/** `rewrite ... break` changed the URI in the location it stays in (nginx's
 * `valid_location` off): a `proxy_pass` with a URI passes the changed URI whole. An
 * internal redirect finds a location for its URI again (`yes` false). */
export function rewrittenHere(req: IncomingMessage, yes = true): void {
  (req as Retargeted)[REWRITTEN_HERE] = yes;
}
export const isRewrittenHere = (req: IncomingMessage): boolean => (req as Retargeted)[REWRITTEN_HERE] === true;

/** The client's address as realip found it in a trusted proxy's header; the port is
 * absent when the header gave none. */
export interface RealAddress {
  readonly address: string;
  readonly port?: number;
  /** `$binary_remote_addr` of it, made at its first use. */
  binary?: Buffer;
}
const REAL = Symbol('zonal.realip');
type Real = { [REAL]?: RealAddress };

/** realip's address for the rest of the request (internal redirects too, as nginx's). */
export function setRealAddress(req: IncomingMessage, real: RealAddress): void {
  (req as Real)[REAL] = real;
}

export const realAddressOf = (req: object): RealAddress | undefined => (req as Real)[REAL];

const PEER_ADDRESS = Symbol('zonal.remote_addr');
type AddressedSocket = { readonly remoteAddress?: string; [PEER_ADDRESS]?: string };

/** `$remote_addr`: realip's address, else the connection's, kept on the socket once read
 * (node's getter asks the socket's handle, and a connection's peer does not change). */
export const clientAddress = (req: { readonly socket?: { readonly remoteAddress?: string } }): string => (req as Real)[REAL]?.address ?? peerAddress(req.socket as AddressedSocket | undefined);

function peerAddress(socket: AddressedSocket | undefined): string {
  if (!socket) return '';
  const kept = socket[PEER_ADDRESS];
  if (kept !== undefined) return kept;
  const address = socket.remoteAddress;
  // A socket already closed says nothing: nothing is kept.
  return address === undefined ? '' : (socket[PEER_ADDRESS] = unmapped(address));
}

/** `$remote_port`: realip's port (empty when the header gave none), else the connection's. */
export function clientPort(req: IncomingMessage): string {
  const real = (req as Real)[REAL];
  const port = real ? real.port : req.socket.remotePort;
  return port === undefined ? '' : String(port);
}

/** `$host`: the Host header without its port, lowercase; the local address without one. */
export function hostOf(req: IncomingMessage): string {
  const host = req.headers.host;
  return typeof host === 'string' && host ? hostOfHeader(host) : (req.socket?.localAddress ?? '');
}

/** A request header (`$http_<name>`, name lowercase), read from the raw headers
 * (`req.headers` would build node's headers object): the first of its name, as nginx 1.22
 * takes it, but Cookie's joined with "; " and X-Forwarded-For's with ", " as nginx joins them. */
export function header(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders;
  const joiner = name === 'cookie' ? '; ' : name === 'x-forwarded-for' ? ', ' : undefined;
  let out: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const n = raw[i];
    if (n.length !== name.length || n.toLowerCase() !== name) continue;
    if (joiner === undefined) return raw[i + 1];
    out = out === undefined ? raw[i + 1] : out + joiner + raw[i + 1];
  }
  return out;
}

/** `$http_x_forwarded_for` made a header name: `x-forwarded-for`. */
export const headerName = (variable: string): string => variable.replace(/_/g, '-').toLowerCase();

const BINARY_REMOTE_ADDR = Symbol('zonal.binary_remote_addr');
type KeyedSocket = Socket & { [BINARY_REMOTE_ADDR]?: Buffer };

/** `$binary_remote_addr` of the request's connection, made on its first request and kept
 * on the socket: a connection's peer does not change, and the bytes (4 or 16) would
 * otherwise be parsed out of the address text and allocated for every request of a
 * keep-alive connection. The native calls only read a key's bytes, so one Buffer serves
 * them all. */
export function binaryRemoteAddress(req: IncomingMessage): Buffer {
  const real = (req as Real)[REAL];
  if (real) return (real.binary ??= binaryAddress(real.address));
  const socket = req.socket as KeyedSocket;
  return (socket[BINARY_REMOTE_ADDR] ??= binaryAddress(clientAddress(req)));
}

/** Where a response keeps its virtual server (content.ts's enter()): `$server_name`
 * of the phases that are not given it. */
export const SERVER = Symbol('zonal.site');
type Served = ServerResponse & { [SERVER]?: { readonly serverName: string } };
export const serverNameOf = (res: ServerResponse | undefined): string | undefined => (res as Served | undefined)?.[SERVER]?.serverName;

const START = Symbol('zonal.requestStart');
type Started = ServerResponse & { [START]?: number };

/** Some value of the configuration names `$request_time`: only then is each request's
 * start taken (a clock read and a property on every request otherwise). */
let timed = false;
export function timeRequests(): void {
  timed = true;
}
export const requestsTimed = (): boolean => timed;

/** The request's headers are in (performance.now()): what `$request_time` counts from. */
export function markStart(res: ServerResponse, now: number): void {
  (res as Started)[START] = now;
}

/** When the request began, for a phase before the log's (which has it in its record). */
export const startOf = (res: ServerResponse | undefined): number | undefined => (res as Started | undefined)?.[START];
