// The variables of nginx's http core module (ngx_http_core_module's embedded variables,
// and the captures of regex locations), as any phase evaluates them: what the request
// says, its response as far as it went, and its times; the byte counts and `$pipe` once
// the request is over (the access log's record has them).
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { VariableTable } from '../../../api/variables.js';
import { unmapped } from '../../../api/variables.js';
import { connectionNumber, connectionTime, requestsOf } from '../../core/connection.js';
import { clock, msec, seconds } from '../../core/time.js';
import { proxyProtocolOf } from '../proxy-protocol.js';
import { requestRate } from '../pace.js';
import { binaryRemoteAddress, clientAddress, clientPort, header, headerName, hostOf, requestLine, requestUri, serverNameOf, startOf, type HttpContext } from '../variables.js';
import { bufferedBody } from './body.js';

/** `$request_id`: 16 random bytes in hex, made at its first use for a request (a line
 * naming it twice, or two logs of one request, show one id). */
const REQUEST_ID = Symbol('zonal.requestId');
function requestId(c: HttpContext): string {
  const req = c.req as HttpContext['req'] & { [REQUEST_ID]?: string };
  return (req[REQUEST_ID] ??= randomBytes(16).toString('hex'));
}

const encrypted = (c: HttpContext) => (c.req.socket as { encrypted?: boolean }).encrypted === true;

function query(c: HttpContext): string | undefined {
  const url = c.req.url ?? '';
  const q = url.indexOf('?');
  return q < 0 ? undefined : url.slice(q + 1);
}

/** `$arg_<name>`: the value as it came (not decoded), the name caseless, as nginx. */
function arg(c: HttpContext, name: string): string | undefined {
  const q = query(c);
  if (q === undefined) return undefined;
  for (const part of q.split('&')) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq);
    if (key.toLowerCase() === name) return eq < 0 ? '' : part.slice(eq + 1);
  }
  return undefined;
}

function cookie(c: HttpContext, name: string): string | undefined {
  const all = header(c.req, 'cookie');
  if (all === undefined) return undefined;
  for (const part of all.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

type Headed = NonNullable<HttpContext['res']> & { _header?: string | null };

/** `$sent_http_<name>`: read from the response head as it went out (a proxied response's
 * headers are written as a list node keeps no object of); before that, from the headers
 * set so far. */
function sentHeader(c: HttpContext, name: string): string | undefined {
  const res = c.res as Headed | undefined;
  const head = res?._header;
  if (!head) {
    const v = res?.getHeader(name);
    return v === undefined ? undefined : Array.isArray(v) ? v.join(', ') : String(v);
  }
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
function headLength(c: HttpContext): number {
  const head = (c.res as Headed | undefined)?._header;
  return head ? Buffer.byteLength(head) : 0;
}

/** `$status`: once the request is over, what went (499: a response that never began, the
 * client closed first); before, the status being answered. */
function status(c: HttpContext): string | undefined {
  const res = c.res;
  if (c.written !== undefined && res) return res.headersSent || res.writableFinished ? String(res.statusCode).padStart(3, '0') : '499';
  if (c.status !== undefined) return String(c.status).padStart(3, '0');
  return res?.headersSent ? String(res.statusCode).padStart(3, '0') : undefined;
}

const HOSTNAME = hostname();

/** `$server_protocol` of the versions node:http parses, made once. */
const PROTOCOLS: Readonly<Record<string, string>> = { '1.1': 'HTTP/1.1', '1.0': 'HTTP/1.0' };

/** The captures $1..$9. */
const captures = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [String(i + 1), (c: HttpContext) => c.captures?.[i]]));

export const httpCoreVariables: VariableTable<HttpContext> = {
  names: {
    remote_addr: (c) => clientAddress(c.req),
    // As text, one character per byte: limit keys keep it as bytes.
    binary_remote_addr: (c) => binaryRemoteAddress(c.req).toString('latin1'),
    remote_port: (c) => clientPort(c.req),
    proxy_protocol_addr: (c) => proxyProtocolOf(c.req.socket)?.address ?? '',
    proxy_protocol_port: (c) => String(proxyProtocolOf(c.req.socket)?.port ?? ''),
    server_addr: (c) => unmapped(c.req.socket.localAddress ?? ''),
    server_port: (c) => String(c.req.socket.localPort ?? ''),
    server_name: (c) => c.serverName ?? serverNameOf(c.res) ?? '',
    server_protocol: (c) => PROTOCOLS[c.req.httpVersion] ?? `HTTP/${c.req.httpVersion}`,
    host: (c) => hostOf(c.req) || (c.serverName ?? serverNameOf(c.res)),
    hostname: () => HOSTNAME,
    pid: () => String(process.pid),
    scheme: (c) => (encrypted(c) ? 'https' : 'http'),
    https: (c) => (encrypted(c) ? 'on' : ''),
    request: (c) => requestLine(c.req),
    request_method: (c) => c.req.method,
    request_uri: (c) => requestUri(c.req),
    uri: (c) => c.uri,
    document_uri: (c) => c.uri,
    args: query,
    query_string: query,
    is_args: (c) => (query(c) === undefined ? '' : '?'),
    content_type: (c) => header(c.req, 'content-type'),
    content_length: (c) => header(c.req, 'content-length'),
    request_body: (c) => bufferedBody(c.req),
    status,
    // Before the log phase nothing of the response went yet.
    body_bytes_sent: (c) => (c.written === undefined ? '0' : String(Math.max(0, c.written - headLength(c)))),
    bytes_sent: (c) => String(c.written ?? 0),
    request_length: (c) => (c.received === undefined ? undefined : String(c.received)),
    // The time so far.
    request_time: (c) => {
      const now = performance.now();
      return seconds(now - (c.start ?? startOf(c.res) ?? now));
    },
    request_completion: (c) => (c.res?.writableFinished ? 'OK' : ''),
    connection: (c) => String(c.connection ?? connectionNumber(c.req.socket)),
    connection_requests: (c) => String(c.connectionRequests ?? requestsOf(c.req.socket)),
    limit_rate: (c) => String(requestRate(c.req) ?? 0),
    connection_time: (c) => seconds(connectionTime(c.req.socket)),
    pipe: (c) => (c.pipelined === undefined ? undefined : c.pipelined ? 'p' : '.'),
    msec,
    time_local: () => clock().local,
    time_iso8601: () => clock().iso,
    request_id: requestId,
    ...captures,
  },
  prefixes: [
    ['http_', (n) => { const h = headerName(n); return (c) => header(c.req, h); }],
    ['sent_http_', (n) => { const h = headerName(n); return (c) => sentHeader(c, h); }],
    ['cookie_', (n) => (c) => cookie(c, n)],
    ['arg_', (n) => { const a = n.toLowerCase(); return (c) => arg(c, a); }],
  ],
};
