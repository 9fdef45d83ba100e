// The variables a log line may name, rendered as nginx renders them once a request is
// over. A variable nginx leaves "not found" (a header not sent, no query, no upstream)
// is undefined here, and the log writes `-` for it. Declared once: `-t` checks a format's
// names against this table (knownLogVariable), and the access log evaluates the same one.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { TLSSocket } from 'node:tls';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { clientAddress, hostOf } from '../../api/variables.js';
import { parseAuthorization } from '../auth-basic/runtime.js';

/** What one upstream attempt left for the log: nginx's $upstream_* lists, one per peer tried. */
export interface UpstreamAttempt {
  readonly address: string;
  /** 0 until the peer answered; 502 or 504 for an attempt that failed without one. */
  status: number;
  /** Milliseconds; -1 when the attempt did not get so far. */
  connectMs: number;
  /** Bytes read from the peer and sent to it. */
  received: number;
  sent: number;
  headerMs: number;
  responseMs: number;
}

/** What a request leaves for its log line. */
export interface LogRecord {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** $uri: the normalised URI (the request target when it had none). */
  readonly uri: string;
  readonly serverName: string;
  /** performance.now() when the request's headers were in. */
  readonly start: number;
  /** Bytes read for the request (line, headers, body) and written for its response. */
  readonly received: number;
  readonly written: number;
  readonly connection: number;
  readonly connectionRequests: number;
  /** The request came in the same read as the one before it on its connection. */
  readonly pipelined: boolean;
  readonly upstream?: readonly UpstreamAttempt[];
}

export type LogVariable = (r: LogRecord) => string | undefined;

/** `$request_id`: 16 random bytes in hex, made at its first use for a request (a line
 * naming it twice, or two logs of one request, show one id). */
const REQUEST_ID = Symbol('zonal.requestId');
function requestId(r: LogRecord): string {
  const req = r.req as LogRecord['req'] & { [REQUEST_ID]?: string };
  return (req[REQUEST_ID] ??= randomBytes(16).toString('hex'));
}

/** The TLS socket of an https request, undefined for plain http. */
const tls = (r: LogRecord) => ((r.req.socket as { encrypted?: boolean }).encrypted ? (r.req.socket as TLSSocket) : undefined);

const two = (n: number) => (n < 10 ? `0${n}` : String(n));
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The times of the current second, made once a second: `$time_local`, `$time_iso8601`.
 * They hold until a timer set for the next second's start, as node's Date header does
 * (and nginx's cached time, updated once per turn of its loop): no clock is read per line. */
let current = false;
const times = { local: '', iso: '' };
const expire = () => (current = false);
export function clock(): { readonly local: string; readonly iso: string } {
  if (current) return times;
  const now = Date.now();
  current = true;
  setTimeout(expire, 1000 - (now % 1000)).unref();
  const d = new Date(now);
  const off = -d.getTimezoneOffset();
  const sign = off < 0 ? '-' : '+';
  const hh = two(Math.floor(Math.abs(off) / 60));
  const mm = two(Math.abs(off) % 60);
  const time = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  times.local = `${two(d.getDate())}/${MONTHS[d.getMonth()]}/${d.getFullYear()}:${time} ${sign}${hh}${mm}`;
  times.iso = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${time}${sign}${hh}:${mm}`;
  return times;
}

/** Seconds with milliseconds, nginx's `%T.%03M`: whole milliseconds, never below 0. */
export const seconds = (ms: number): string => (Math.max(0, Math.floor(ms)) / 1000).toFixed(3);

function query(r: LogRecord): string | undefined {
  const url = r.req.url ?? '';
  const q = url.indexOf('?');
  return q < 0 ? undefined : url.slice(q + 1);
}

/** `$arg_<name>`: the value as it came (not decoded), the name caseless, as nginx. */
function arg(r: LogRecord, name: string): string | undefined {
  const q = query(r);
  if (q === undefined) return undefined;
  for (const part of q.split('&')) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq);
    if (key.toLowerCase() === name) return eq < 0 ? '' : part.slice(eq + 1);
  }
  return undefined;
}

function cookie(r: LogRecord, name: string): string | undefined {
  const all = header(r, 'cookie');
  if (all === undefined) return undefined;
  for (const part of all.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** `$http_<name>`, read from the raw headers (`req.headers` would build node's headers
 * object for every logged request): the first of its name, as nginx 1.22 takes it, but
 * Cookie's joined with "; " and X-Forwarded-For's with ", " as nginx joins them. */
function header(r: LogRecord, name: string): string | undefined {
  const raw = r.req.rawHeaders;
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

/** `$sent_http_<name>`: read from the response head as it went out (a proxied response's
 * headers are written as a list node keeps no object of). */
function sentHeader(r: LogRecord, name: string): string | undefined {
  const head = (r.res as ServerResponse & { _header?: string | null })._header;
  if (!head) return undefined;
  const lower = head.toLowerCase();
  const key = `\r\n${name}:`;
  let values: string[] | undefined;
  for (let i = lower.indexOf(key); i >= 0; i = lower.indexOf(key, i + key.length)) {
    const end = head.indexOf('\r\n', i + key.length);
    (values ??= []).push(head.slice(i + key.length, end < 0 ? undefined : end).trim());
  }
  return values?.join(', ');
}

/** The head's length, for $body_bytes_sent. */
function headLength(r: LogRecord): number {
  const head = (r.res as ServerResponse & { _header?: string | null })._header;
  return head ? Buffer.byteLength(head) : 0;
}

function upstreamList(r: LogRecord, each: (a: UpstreamAttempt) => string): string | undefined {
  const u = r.upstream;
  if (!u?.length) return undefined;
  let out = each(u[0]);
  for (let i = 1; i < u.length; i++) out += `, ${each(u[i])}`;
  return out;
}

const time = (ms: number) => (ms < 0 ? '-' : seconds(ms));
const HOSTNAME = hostname();

/** The variables of a log line by name; those with a prefix are below. */
const TABLE: Readonly<Record<string, LogVariable>> = {
  remote_addr: (r) => clientAddress(r.req),
  remote_port: (r) => String(r.req.socket.remotePort ?? ''),
  remote_user: (r) => parseAuthorization(header(r, 'authorization'))?.user,
  server_addr: (r) => {
    const a = r.req.socket.localAddress ?? '';
    return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
  },
  server_port: (r) => String(r.req.socket.localPort ?? ''),
  server_name: (r) => r.serverName,
  server_protocol: (r) => `HTTP/${r.req.httpVersion}`,
  host: (r) => hostOf(r.req) || r.serverName,
  hostname: () => HOSTNAME,
  pid: () => String(process.pid),
  scheme: (r) => ((r.req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'),
  https: (r) => ((r.req.socket as { encrypted?: boolean }).encrypted ? 'on' : ''),
  request: (r) => `${r.req.method} ${r.req.url} HTTP/${r.req.httpVersion}`,
  request_method: (r) => r.req.method,
  request_uri: (r) => r.req.url,
  uri: (r) => r.uri,
  document_uri: (r) => r.uri,
  args: query,
  query_string: query,
  is_args: (r) => (query(r) === undefined ? '' : '?'),
  content_type: (r) => header(r, 'content-type'),
  content_length: (r) => header(r, 'content-length'),
  // A response that never began: the client closed first, nginx's 499.
  status: (r) => (r.res.headersSent || r.res.writableFinished ? String(r.res.statusCode).padStart(3, '0') : '499'),
  body_bytes_sent: (r) => String(Math.max(0, r.written - headLength(r))),
  bytes_sent: (r) => String(r.written),
  request_length: (r) => String(r.received),
  request_time: (r) => seconds(performance.now() - r.start),
  request_completion: (r) => (r.res.writableFinished ? 'OK' : ''),
  connection: (r) => String(r.connection),
  connection_requests: (r) => String(r.connectionRequests),
  pipe: (r) => (r.pipelined ? 'p' : '.'),
  msec: () => (Date.now() / 1000).toFixed(3),
  time_local: () => clock().local,
  time_iso8601: () => clock().iso,
  upstream_addr: (r) => upstreamList(r, (a) => a.address),
  upstream_status: (r) => upstreamList(r, (a) => (a.status ? String(a.status) : '-')),
  upstream_response_time: (r) => upstreamList(r, (a) => time(a.responseMs)),
  upstream_connect_time: (r) => upstreamList(r, (a) => time(a.connectMs)),
  upstream_header_time: (r) => upstreamList(r, (a) => time(a.headerMs)),
  upstream_bytes_received: (r) => upstreamList(r, (a) => String(a.received)),
  upstream_bytes_sent: (r) => upstreamList(r, (a) => String(a.sent)),
  request_id: requestId,
  ssl_protocol: (r) => tls(r)?.getProtocol() ?? undefined,
  ssl_cipher: (r) => tls(r)?.getCipher()?.name,
  ssl_server_name: (r) => (tls(r) as (TLSSocket & { servername?: string | false }) | undefined)?.servername || undefined,
  ssl_session_reused: (r) => (tls(r) ? (tls(r)!.isSessionReused() ? 'r' : '.') : ''),
};

const PREFIXES: ReadonlyArray<readonly [string, (name: string) => LogVariable]> = [
  ['http_', (n) => { const h = n.replace(/_/g, '-').toLowerCase(); return (r) => header(r, h); }],
  ['sent_http_', (n) => { const h = n.replace(/_/g, '-').toLowerCase(); return (r) => sentHeader(r, h); }],
  ['cookie_', (n) => (r) => cookie(r, n)],
  ['arg_', (n) => { const a = n.toLowerCase(); return (r) => arg(r, a); }],
];

/** A log variable by name; undefined for one zonal does not produce. */
export function logVariable(name: string): LogVariable | undefined {
  if (Object.hasOwn(TABLE, name)) return TABLE[name];
  // sent_http_ before http_: the longer prefix is the more precise.
  for (const [prefix, make] of [...PREFIXES].sort((a, b) => b[0].length - a[0].length))
    if (name.startsWith(prefix) && name.length > prefix.length) return make(name.slice(prefix.length));
  return undefined;
}

/** Whether `-t` lets a format (or an `if=` condition) name it. */
export const knownLogVariable = (name: string): boolean => logVariable(name) !== undefined;

/** Whether a log that names it needs the proxy to record its attempts. */
export const isUpstreamVariable = (name: string): boolean => name.startsWith('upstream_');
