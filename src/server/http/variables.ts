// nginx variables in `proxy_set_header` values and `hash` keys, compiled once into a
// function of the request: a value without variables costs nothing per request.
import type { IncomingMessage } from 'node:http';

/** What a variable may read besides the request. */
export interface VariableContext {
  readonly req: IncomingMessage;
  /** The normalised URI ($uri). */
  readonly uri: string;
  /** `$proxy_host`: the upstream's name, or the address of `proxy_pass`. */
  readonly proxyHost?: string;
  /** `$upstream_cache_status`: HIT, MISS, ... once the cache decided (empty otherwise). */
  readonly upstreamCacheStatus?: string;
}

type Part = string | ((c: VariableContext) => string);

const hostOf = (req: IncomingMessage): string => {
  const host = req.headers.host;
  if (host) return host.replace(/:\d+$/, '').toLowerCase();
  return req.socket.localAddress ?? '';
};

function clientAddress(req: IncomingMessage): string {
  const a = req.socket.remoteAddress ?? '';
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
}

function query(req: IncomingMessage): string {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  return q < 0 ? '' : url.slice(q + 1);
}

function cookie(req: IncomingMessage, name: string): string {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return '';
}

function variable(name: string): ((c: VariableContext) => string) | undefined {
  switch (name) {
    case 'host':
      return (c) => hostOf(c.req);
    case 'remote_addr':
      return (c) => clientAddress(c.req);
    case 'proxy_add_x_forwarded_for':
      return (c) => {
        const prior = c.req.headers['x-forwarded-for'];
        return prior ? `${prior}, ${clientAddress(c.req)}` : clientAddress(c.req);
      };
    case 'scheme':
      return (c) => ((c.req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');
    case 'proxy_host':
      return (c) => c.proxyHost ?? '';
    case 'request_uri':
      return (c) => c.req.url ?? '/';
    case 'uri':
      return (c) => c.uri;
    case 'args':
      return (c) => query(c.req);
    case 'upstream_cache_status':
      return (c) => c.upstreamCacheStatus ?? '';
    case 'server_port':
      return (c) => String(c.req.socket.localPort ?? '');
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
    return (c) => new URLSearchParams(query(c.req)).get(arg) ?? '';
  }
  if (name.startsWith('cookie_')) {
    const n = name.slice(7);
    return (c) => cookie(c.req, n);
  }
  return undefined;
}

/** Compiles `text`; the configuration reader has already refused unknown variables. */
export function compileValue(text: string): (c: VariableContext) => string {
  const parts: Part[] = [];
  const re = /\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g;
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m.index > last) parts.push(text.slice(last, m.index));
    const name = m[1] ?? m[2];
    parts.push(variable(name) ?? m[0]);
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  if (parts.every((p) => typeof p === 'string')) {
    const constant = parts.join('');
    return () => constant;
  }
  if (parts.length === 1) return parts[0] as (c: VariableContext) => string;
  return (c) => {
    let out = '';
    for (const p of parts) out += typeof p === 'string' ? p : p(c);
    return out;
  };
}
