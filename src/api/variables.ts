// nginx variables, compiled once into a function of the request: one evaluator for the
// server's `proxy_set_header` values, `hash` keys and limit keys, and for the paths of
// `api` mappings. A value without variables costs nothing per request.
import { isIP } from 'node:net';

/** What variables read of a request: node:http's IncomingMessage has all of it; the API
 * passes what its transports give it. */
export interface VariableRequest {
  readonly url?: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly socket?: {
    readonly remoteAddress?: string;
    readonly localAddress?: string;
    readonly localPort?: number;
    readonly encrypted?: boolean;
  };
}

export interface VariableContext {
  readonly req: VariableRequest;
  /** The normalised URI ($uri). */
  readonly uri: string;
  /** `$proxy_host`: the upstream's name, or the address of `proxy_pass`. */
  readonly proxyHost?: string;
  /** `$server_name`: the first name of the virtual server. */
  readonly serverName?: string;
  /** $1..$9: the captures of a regex location. */
  readonly captures?: readonly string[];
  /** The query, when it is parsed already ($arg_<name>). */
  readonly args?: URLSearchParams;
  /** `$upstream_cache_status`: HIT, MISS, ... once the proxy cache decided (empty otherwise). */
  readonly upstreamCacheStatus?: string;
  /** The peer's response, where one is judged (`test=` of upstream_probe):
   * $upstream_status and $upstream_http_<name>. */
  readonly upstream?: { readonly status: number; readonly headers: Readonly<Record<string, string | string[] | undefined>> };
  /** `$upstream_probe_response`: what a stream peer answered a probe (`test=` of a stream
   * server's upstream_probe), one character a byte. */
  readonly probeResponse?: string;
}

type Variable = (c: VariableContext) => string;

/** `$host`: the Host header without its port, lowercase; the local address without one. */
export function hostOf(req: VariableRequest): string {
  const host = req.headers.host;
  if (typeof host === 'string' && host) {
    const port = /:\d*$/.exec(host);
    return (port && !host.endsWith(']') ? host.slice(0, port.index) : host).toLowerCase();
  }
  return req.socket?.localAddress ?? '';
}

/** `$remote_addr`: an IPv4 client of a dual-stack socket as its IPv4 address. */
export function clientAddress(req: VariableRequest): string {
  const a = req.socket?.remoteAddress ?? '';
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
}

/** `$binary_remote_addr`: the client address in 4 bytes (IPv4) or 16 (IPv6); empty for
 * what is neither. */
export function binaryAddress(address: string): Buffer {
  const family = isIP(address);
  if (family === 4) return Buffer.from(address.split('.').map(Number));
  if (family !== 6) return Buffer.alloc(0);
  // An embedded IPv4 tail (::ffff:1.2.3.4) is the last two words.
  const v4 = address.includes('.') ? address.slice(address.lastIndexOf(':') + 1) : undefined;
  const text = v4 ? address.slice(0, address.lastIndexOf(':') + 1) + '0:0' : address;
  const [head, tail] = text.split('::');
  const words = (s: string | undefined) => (s ? s.split(':') : []);
  const h = words(head);
  const t = words(tail);
  const all = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  all.forEach((w, i) => out.writeUInt16BE(parseInt(w, 16) || 0, i * 2));
  if (v4) Buffer.from(v4.split('.').map(Number)).copy(out, 12);
  return out;
}

function query(c: VariableContext): string {
  const url = c.req.url ?? '';
  const q = url.indexOf('?');
  return q < 0 ? '' : url.slice(q + 1);
}

function cookie(req: VariableRequest, name: string): string {
  const header = req.headers.cookie;
  for (const part of (Array.isArray(header) ? header.join(';') : (header ?? '')).split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return '';
}

/** A variable by name, or undefined for one zonal does not know. */
export function variable(name: string): Variable | undefined {
  switch (name) {
    case 'upstream_status':
      return (c) => (c.upstream ? String(c.upstream.status) : '');
    case 'host':
      return (c) => hostOf(c.req);
    case 'remote_addr':
      return (c) => clientAddress(c.req);
    case 'binary_remote_addr':
      // As text, one character per byte: compileKey() keeps it as bytes.
      return (c) => binaryAddress(clientAddress(c.req)).toString('latin1');
    case 'server_name':
      return (c) => c.serverName ?? '';
    case 'proxy_add_x_forwarded_for':
      return (c) => {
        const prior = c.req.headers['x-forwarded-for'];
        return prior ? `${prior}, ${clientAddress(c.req)}` : clientAddress(c.req);
      };
    case 'scheme':
      return (c) => (c.req.socket?.encrypted ? 'https' : 'http');
    case 'proxy_host':
      return (c) => c.proxyHost ?? '';
    case 'request_uri':
      return (c) => c.req.url ?? '/';
    case 'uri':
      return (c) => c.uri;
    case 'args':
      return (c) => (c.args ? c.args.toString() : query(c));
    case 'server_port':
      return (c) => String(c.req.socket?.localPort ?? '');
    case 'upstream_cache_status':
      return (c) => c.upstreamCacheStatus ?? '';
    case 'upstream_probe_response':
      return (c) => c.probeResponse ?? '';
  }
  if (/^[1-9]$/.test(name)) {
    const i = Number(name) - 1;
    return (c) => c.captures?.[i] ?? '';
  }
  if (name.startsWith('upstream_http_')) {
    const header = name.slice('upstream_http_'.length).replace(/_/g, '-').toLowerCase();
    return (c) => {
      const v = c.upstream?.headers[header];
      return Array.isArray(v) ? v.join(', ') : (v ?? '');
    };
  }
  if (name.startsWith('http_')) {
    const header = name.slice(5).replace(/_/g, '-').toLowerCase();
    return (c) => {
      const v = c.req.headers[header];
      return Array.isArray(v) ? v.join(', ') : (v ?? '');
    };
  }
  if (name.startsWith('arg_')) {
    const arg = name.slice(4);
    return (c) => (c.args ?? new URLSearchParams(query(c))).get(arg) ?? '';
  }
  if (name.startsWith('cookie_')) {
    const n = name.slice(7);
    return (c) => cookie(c.req, n);
  }
  return undefined;
}

// `$name`, `${name}`, and captures of one digit (`$12` is `$1` then "2", as nginx reads it).
const VARIABLE = /\$(?:\{([A-Za-z0-9_]+)\}|(\d|[A-Za-z0-9_]+))/g;

type Part = string | Variable;

function parts(text: string): Part[] {
  const out: Part[] = [];
  let last = 0;
  for (const m of text.matchAll(VARIABLE)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(variable(m[1] ?? m[2]) ?? m[0]);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** Compiles `text`; the configuration reader has already refused unknown variables (an
 * unknown one stays as written). */
export function compileValue(text: string): (c: VariableContext) => string {
  const list = parts(text);
  if (list.every((p) => typeof p === 'string')) {
    const constant = list.join('');
    return () => constant;
  }
  if (list.length === 1) return list[0] as Variable;
  return (c) => {
    let out = '';
    for (const p of list) out += typeof p === 'string' ? p : p(c);
    return out;
  };
}

const BINARY = /\$\{binary_remote_addr\}|\$binary_remote_addr(?![A-Za-z0-9_])/;

/** A limit key: text, or bytes when it holds `$binary_remote_addr` (its 4 or 16 bytes
 * as they are, the text around it in UTF-8). */
export function compileKey(text: string): (c: VariableContext) => string | Buffer {
  if (!BINARY.test(text)) return compileValue(text);
  const around = text.split(new RegExp(BINARY.source, 'g')).map(compileValue);
  if (text.replace(BINARY, '') === '') return (c) => binaryAddress(clientAddress(c.req));
  return (c) => {
    const address = binaryAddress(clientAddress(c.req));
    const chunks: Buffer[] = [];
    around.forEach((value, i) => {
      if (i > 0) chunks.push(address);
      chunks.push(Buffer.from(value(c)));
    });
    return Buffer.concat(chunks);
  };
}
