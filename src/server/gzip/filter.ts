// gzip at run time: nginx's gzip header filter, which decides from the response's head
// whether its body is compressed, and its body filter, node's zlib stream (whose work runs
// in libuv's thread pool, off the event loop). A place with gzip (or gzip_static) puts the
// filter on its response before anything answers; what answers then (a file, a `return`,
// an error page, a proxied or cached response) writes its head and body as usual.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { createGzip } from 'node:zlib';
import { isMsie6 } from '../http/core/config.js';
import { filterBody } from '../http/body-filter.js';
import { header } from '../http/variables.js';
import type { GzipConfig } from './config.js';
import { GZIP, type GzipCounts } from './ratio.js';

/** A response's gzip state. */
interface GzipState extends GzipCounts {
  /** The settings of the place answering (the last one entered); absent: it has none. */
  config: GzipConfig | undefined;
  /** nginx's r->gzip_vary: the answer depends on Accept-Encoding (`Vary` with gzip_vary). */
  vary: boolean;
}

type Filtered = ServerResponse & { [GZIP]?: GzipState };

/** The statuses nginx compresses. */
const COMPRESSED = new Set([200, 403, 404]);

/** Headers as writeHead takes them. */
type Given = OutgoingHttpHeaders | readonly string[] | readonly (readonly string[])[] | undefined;

/** The first value of `name` (lowercase) among `given`, else among those set on `res`. */
function headerOut(res: ServerResponse, given: Given, name: string): string | undefined {
  if (Array.isArray(given)) {
    if (given.length > 0 && Array.isArray(given[0])) {
      for (const [k, v] of given as readonly (readonly string[])[]) if (k.toLowerCase() === name) return String(v);
    } else for (let i = 0; i < given.length; i += 2) if ((given[i] as string).toLowerCase() === name) return String(given[i + 1]);
  } else if (given) {
    const object = given as OutgoingHttpHeaders;
    for (const k of Object.keys(object)) if (k.toLowerCase() === name && object[k] !== undefined) return first(object[k]!);
  }
  const set = res.getHeader(name);
  return set === undefined ? undefined : first(set);
}

const first = (v: string | number | readonly string[]): string => (Array.isArray(v) ? String(v[0]) : String(v));

/** Moves the headers writeHead was given onto the response, as node:http does itself when
 * some were set before: so that they can be changed one by one. */
function fold(res: ServerResponse, given: Given): void {
  if (!given) return;
  if (Array.isArray(given)) {
    const pairs: (readonly string[])[] = given.length > 0 && Array.isArray(given[0]) ? [...(given as readonly (readonly string[])[])] : [];
    if (pairs.length === 0) for (let i = 0; i < given.length; i += 2) pairs.push([given[i] as string, given[i + 1] as string]);
    for (const [k] of pairs) res.removeHeader(k);
    for (const [k, v] of pairs) res.appendHeader(k, v);
  } else for (const [k, v] of Object.entries(given)) if (v !== undefined) res.setHeader(k, v as string);
}

/** nginx's reading of Accept-Encoding: a `gzip` token (not `x-gzip`) whose q is not 0. */
export function acceptsGzip(value: string): boolean {
  const lower = value.toLowerCase();
  let at = -1;
  for (let from = 0; ; from = at + 4) {
    at = lower.indexOf('gzip', from);
    if (at < 0) return false;
    if (at === 0 || lower[at - 1] === ',' || lower[at - 1] === ' ') break;
  }
  let p = at + 4;
  while (p < lower.length) {
    const c = lower[p++];
    if (c === ',') return true;
    if (c === ';') {
      while (p < lower.length) {
        const q = lower[p++];
        if (q === 'q') return lower[p] === '=' && p + 2 <= lower.length && quantity(lower, p + 1) !== 0;
        if (q !== ' ') return false;
      }
      return true;
    }
    if (c !== ' ') return false;
  }
  return true;
}

/** nginx's ngx_http_gzip_quantity: q in thousandths as nginx counts them, 0 for none or invalid. */
function quantity(s: string, p: number): number {
  let c = s[p++];
  if (c !== '0' && c !== '1') return 0;
  let q = (c.charCodeAt(0) - 48) * 100;
  if (p === s.length) return q;
  c = s[p++];
  if (c === ',' || c === ' ') return q;
  if (c !== '.') return 0;
  let n = 0;
  while (p < s.length) {
    c = s[p++];
    if (c === ',' || c === ' ') break;
    if (c >= '0' && c <= '9') {
      q += c.charCodeAt(0) - 48;
      n++;
      continue;
    }
    return 0;
  }
  return q > 100 || n > 3 ? 0 : q;
}

/** An HTTP date in ms, or undefined for anything else (nginx's ngx_parse_http_time). */
function httpTime(value: string): number | undefined {
  if (!/\d{1,2}:\d{2}:\d{2}/.test(value)) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : t;
}

/** Whether a Cache-Control value has the directive `name`. */
const hasDirective = (value: string, name: string): boolean => value.split(',').some((d) => d.split('=')[0].trim().toLowerCase() === name);

/**
 * nginx's ngx_http_gzip_ok: the client takes gzip, the request's HTTP version is recent
 * enough, its browser is not disabled, and a request that came through a proxy (with a
 * Via header) gets gzip only as gzip_proxied says of the response. `out` reads the
 * response's headers (none yet for gzip_static).
 */
export function gzipOk(req: IncomingMessage, config: GzipConfig, out: (name: string) => string | undefined): boolean {
  const ae = header(req, 'accept-encoding');
  if (ae === undefined) return false;
  if (req.httpVersionMajor * 10 + req.httpVersionMinor < config.httpVersion) return false;
  if (!acceptsGzip(ae)) return false;
  if (config.disable.length > 0 || config.disableMsie6) {
    const agent = header(req, 'user-agent');
    if (agent !== undefined && (config.disable.some((r) => r.test(agent)) || (config.disableMsie6 && isMsie6(agent)))) return false;
  }
  if (header(req, 'via') === undefined) return true;
  const p = config.proxied;
  if (p.has('off')) return false;
  if (p.has('any')) return true;
  if (p.has('auth') && header(req, 'authorization') !== undefined) return true;
  const expires = out('expires');
  if (expires !== undefined) {
    if (!p.has('expired')) return false;
    const at = httpTime(expires);
    const dated = out('date');
    const now = dated === undefined ? Date.now() : httpTime(dated);
    return at !== undefined && now !== undefined && at < now;
  }
  const cc = out('cache-control');
  if (cc !== undefined) {
    return (p.has('no-cache') && hasDirective(cc, 'no-cache')) || (p.has('no-store') && hasDirective(cc, 'no-store')) || (p.has('private') && hasDirective(cc, 'private'));
  }
  return (p.has('no_last_modified') && out('last-modified') === undefined) || (p.has('no_etag') && out('etag') === undefined);
}

/** Whether nginx compresses a response of this type: text/html always, any with `*`. */
function typeListed(config: GzipConfig, type: string | undefined): boolean {
  if (config.types === undefined) return true;
  if (type === undefined) return false;
  const semi = type.indexOf(';');
  return config.types.has((semi < 0 ? type : type.slice(0, semi)).trim().toLowerCase());
}

/** A strong ETag made weak (a compressed body is not the same bytes); one that is not a
 * quoted tag is dropped, as nginx does. */
function weakened(etag: string): string | undefined {
  if (etag.startsWith('W/')) return etag;
  return etag.startsWith('"') ? `W/${etag}` : undefined;
}

/** The gzip state of a response, once its place has put the filter on it. */
const stateOf = (res: ServerResponse): GzipState | undefined => (res as Filtered)[GZIP];

/** Marks the answer as depending on Accept-Encoding (gzip_static found a `.gz`). */
export function varyOnEncoding(res: ServerResponse): void {
  const state = stateOf(res);
  if (state) state.vary = true;
}

/** Puts the gzip filter on `res` with the settings of the place that answers it (a later
 * place of the same request, after an internal redirect, replaces them). */
export function filterGzip(res: ServerResponse, config: GzipConfig | undefined): void {
  const had = stateOf(res);
  if (had) {
    had.config = config;
    return;
  }
  if (!config) return;
  const state: GzipState = { config, vary: false, zout: 0 };
  (res as Filtered)[GZIP] = state;
  const writeHead = res.writeHead;
  const write = res.write;
  const end = res.end;
  const req = (res as ServerResponse & { req: IncomingMessage }).req;
  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    const reason = typeof rest[0] === 'string' ? (rest[0] as string) : undefined;
    const given = (reason === undefined ? rest[0] : rest[1]) as Given;
    const config = state.config;
    const out = (name: string) => headerOut(this, given, name);
    let compress = false;
    if (config?.enable && COMPRESSED.has(status) && req.method !== 'HEAD' && !out('content-encoding')) {
      const length = out('content-length');
      if ((length === undefined || Number(length) >= config.minLength) && typeListed(config, out('content-type'))) {
        state.vary = true;
        compress = gzipOk(req, config, out);
      }
    }
    const vary = state.vary && config?.vary === true;
    const length = compress ? out('content-length') : undefined;
    if (!compress && !vary) return (writeHead as (...a: unknown[]) => ServerResponse).call(this, status, ...rest);
    fold(this, given);
    if (compress) {
      this.removeHeader('Content-Length');
      this.removeHeader('Accept-Ranges');
      const etag = this.getHeader('ETag');
      if (etag !== undefined) {
        const weak = weakened(first(etag));
        if (weak === undefined) this.removeHeader('ETag');
        else this.setHeader('ETag', weak);
      }
      this.setHeader('Content-Encoding', 'gzip');
    }
    if (vary) this.appendHeader('Vary', 'Accept-Encoding');
    const r = reason === undefined ? (writeHead as (s: number) => ServerResponse).call(this, status) : (writeHead as (s: number, r: string) => ServerResponse).call(this, status, reason);
    if (compress) compressBody(this, state, length === undefined ? -1 : Number(length));
    return r;
  } as ServerResponse['writeHead'];
  // A body written before any head: the head is decided first (and a whole body given to
  // end() is its Content-Length, as node:http would have said), so that it goes through
  // the compressor when the head says so.
  const decidingWrite = function (this: ServerResponse, ...args: unknown[]) {
    // Once the head is out, this is what the compressor's output goes through too.
    if (!this.headersSent) {
      this.writeHead(this.statusCode);
      if (this.write !== decidingWrite) return this.write(...(args as Parameters<ServerResponse['write']>));
    }
    return write.apply(this, args as Parameters<ServerResponse['write']>);
  } as ServerResponse['write'];
  const decidingEnd = function (this: ServerResponse, ...args: unknown[]) {
    if (!this.headersSent) {
      const chunk = args[0];
      if ((typeof chunk === 'string' || Buffer.isBuffer(chunk)) && !this.hasHeader('Content-Length') && COMPRESSED.has(this.statusCode)) {
        this.setHeader('Content-Length', Buffer.byteLength(chunk, typeof args[1] === 'string' ? (args[1] as BufferEncoding) : undefined));
      }
      this.writeHead(this.statusCode);
      if (this.end !== decidingEnd) return this.end(...(args as Parameters<ServerResponse['end']>));
    }
    return end.apply(this, args as Parameters<ServerResponse['end']>);
  } as ServerResponse['end'];
  res.write = decidingWrite;
  res.end = decidingEnd;
}

/** The body through node's gzip stream, at the place's level, with zlib's memory sized to
 * a body of known `length` as nginx sizes it: the window and hash halved while the body
 * fits in half of them (a small body needs no 256 KB of state). */
function compressBody(res: ServerResponse, state: GzipState, length: number): void {
  let windowBits = 15;
  let memLevel = 8;
  if (length > 0) {
    // zlib's actual window is smaller by 262 bytes.
    while (windowBits > 9 && length < (1 << (windowBits - 1)) - 262) {
      windowBits--;
      memLevel--;
    }
    memLevel = Math.max(1, memLevel);
  }
  const gz = createGzip({ level: state.config!.compLevel, windowBits, memLevel });
  state.zlib = gz;
  gz.on('data', (chunk: Buffer) => (state.zout += chunk.length));
  filterBody(res, gz, true);
}
