// proxy_pass: a request forwarded to a peer its upstream's balancer chooses, through the
// worker's connections to that peer (peer-pool.ts), bodies streamed both ways with
// backpressure. nginx's rules: the URI is passed as it came, or with the location's part
// replaced by proxy_pass's URI; `Host` is `$proxy_host` unless set; hop-by-hop headers
// stay on their own hop; `proxy_next_upstream` retries another peer on an error, a
// timeout or a listed status while nothing has been sent to the client and the request
// has no body (a streamed body cannot be sent twice).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LocationConfig, NextUpstreamCondition, ProxyConfig } from '../config/model.js';
import { afterIo, type AfterIo } from './after-io.js';
import { Deadlines, type Expiring } from './deadlines.js';
import { absoluteLocation, NGINX_REDIRECTS, requestOrigin, sendPage, type RedirectSettings } from './pages.js';
import { errorPagesOf, internalRedirect } from './error-pages.js';
import { compileRewrites, cookieRewritten, redirected, refreshRedirected, type Rewrite } from './proxy-rewrites.js';
import { paceResponse, rateLimiter, setRequestRate } from './pace.js';
import { filterBody } from './body-filter.js';
import { parseSize } from '../config/values.js';
import type { PeerPool } from './peer-pool.js';
import { Readable } from 'node:stream';
import { ConnectTimeout, InvalidResponse, SendTimeout, type ExchangeHandler, type UpstreamConnection } from './upstream-connection.js';
import { AddressUpstream, type PeerChoice, type ProxyUpstream, type UpstreamRuntime } from './upstream.js';
import type { DnsError, DnsResolver } from '../resolver/dns.js';
import { addressKey, type Resolvers } from '../resolver/peers.js';
import { parseUpstreamAddress } from '../config/values.js';
import { errorLogOf, type ErrorLog } from '../log/error-log.js';
import { tlsProfile, type TlsProfile } from '../ssl/proxy.js';
import { compileValue } from '../config/variables.js';
import { isRewrittenHere, requestContext, serverNameOf, type HttpContext } from './variables.js';
import { AddHeaders } from '../headers/runtime.js';
import { sendable } from '../headers/raw.js';
import { LocationCache } from '../cache/runtime.js';
import type { ProxyFailure, ProxyTap } from './proxy-tap.js';
import { attemptEnded, attemptHeaders, attemptStarted } from '../log/upstream-trace.js';
import type { UpstreamAttempt } from '../log/variables.js';

export type { ProxyTap } from './proxy-tap.js';
import type { StatusStore } from '../../metrics/store.js';
import { requestBody } from './core/body.js';
import type { Socket } from 'node:net';
import { closeResponse, upgradeOf } from './upgrade.js';
import { tunnel } from '../stream/tunnel.js';
import { sendTimeoutOf } from './send-timeout.js';

/** Header names, caseless. A name is lowercased only when its length is one of theirs:
 * most headers of a request or response are in no such set. */
class HeaderNames {
  private readonly names: ReadonlySet<string>;
  private readonly lengths: ReadonlySet<number>;
  constructor(names: Iterable<string>) {
    this.names = new Set([...names].map((n) => n.toLowerCase()));
    this.lengths = new Set([...this.names].map((n) => n.length));
  }
  has(name: string): boolean {
    return this.lengths.has(name.length) && this.names.has(name.toLowerCase());
  }
}

/** Headers that belong to one hop (RFC 9110 7.6.1): the peer's are left out of the
 * response as the client's are out of the request. */
const HOP_NAMES = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'];
const HOP = new HeaderNames(HOP_NAMES);
/** Request headers the upstream connection writes itself besides the hop's (Host is
 * `proxy_set_header`'s, `$proxy_host` by default; 100-continue stays between the client
 * and zonal). */
const OWN_REQUEST = ['expect', 'host'];

type Failure = ProxyFailure;

function failureOf(err: Error): Failure {
  if (err instanceof InvalidResponse) return 'invalid_header';
  return err instanceof ReadTimeout || err instanceof ConnectTimeout || err instanceof SendTimeout ? 'timeout' : 'error';
}

/** The statuses proxy_next_upstream may name, and those of them that count as a peer's
 * unsuccessful attempt (max_fails) when named: nginx never counts 403 and 404. */
const NEXT_STATUSES = new Set([500, 502, 503, 504, 403, 404, 429]);
const FAILING_STATUSES = new Set([500, 502, 503, 504, 429]);

/** Methods nginx does not pass to another peer once the request went to one, unless
 * `non_idempotent` (RFC 9110's non-idempotent ones it names). */
const NON_IDEMPOTENT = new Set(['POST', 'LOCK', 'PATCH']);

/** The peer's headers nginx hides unless proxy_pass_header lets them through: its own
 * Date and Server take their place, and X-Accel-* are instructions to the proxy. */
const NO_HEADERS: ReadonlySet<string> = new Set();
const HIDDEN_BY_DEFAULT = ['date', 'server', 'x-pad', 'x-accel-expires', 'x-accel-redirect', 'x-accel-limit-rate', 'x-accel-buffering', 'x-accel-charset'];

/** The peer's headers nginx keeps when it follows its X-Accel-Redirect. */
const KEPT_ON_REDIRECT = new Set(['content-type', 'set-cookie', 'content-disposition', 'cache-control', 'expires', 'accept-ranges']);

function keptOnRedirect(headers: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < headers.length; i += 2) if (KEPT_ON_REDIRECT.has(headers[i].toLowerCase())) kept.push(headers[i], headers[i + 1]);
  return kept;
}

/** A URI an X-Accel-Redirect may not name: not a path, a NUL, or a `..` segment once
 * decoded. */
function unsafeUri(target: string): boolean {
  const q = target.indexOf('?');
  let path = q < 0 ? target : target.slice(0, q);
  try {
    path = decodeURIComponent(path);
  } catch {
    return true;
  }
  return path[0] !== '/' || path.includes('\0') || path.split('/').includes('..');
}

/** X-Accel-Limit-Rate: the peer's rate for the request's answer, in bytes per second
 * (`off`: none), before the place's, after an X-Accel-Redirect too. */
function paceByPeer(req: IncomingMessage, res: ServerResponse, value: string): void {
  const rate = value === 'off' ? 0 : parseSize(value.trim());
  if (rate === undefined) return;
  setRequestRate(req, rate);
  paceResponse(res, rate, 0);
}

/** A value that would break the request head: a CR, LF or NUL, which a variable can hold
 * once decoded (`$uri` of `/a%0d%0a`). */
const UNSAFE_VALUE = /[\r\n\0]/;

export class Proxy {
  private readonly setHeaders: Array<{ name: string; value: (c: HttpContext) => string }>;
  /** A configured `proxy_set_header Connection`: zonal writes the header itself
   * (keep-alive while it caches the connection), but a value that says `close` makes the
   * request its connection's last, as nginx's `Connection: close` would. */
  private readonly connection: ((c: HttpContext) => string) | undefined;
  /** The request headers that do not go to the peer as they came: hop-by-hop ones and
   * those proxy_set_header replaces. */
  private readonly dropped: HeaderNames;
  private readonly prefix?: string;
  /** A URI part with variables. */
  private readonly uriValue?: (c: HttpContext) => string;
  readonly next: ReadonlySet<NextUpstreamCondition>;
  /** proxy_read_timeout of this location's requests. */
  readonly readDeadlines: Deadlines;
  /** The worker's connections to each peer, by what the balancer chose (looked up by
   * address and connect timeout only the first time, and when the address changed). */
  private readonly pools = new WeakMap<PeerChoice, PeerPool>();
  /** `proxy_pass` with variables in its host: the URL of a request. */
  private readonly url?: (c: HttpContext) => string;
  /** The addresses such URLs named that no upstream has (an address, or a name with its
   * port and what the resolver found for it), as few as requests name. */
  private readonly addresses = new Map<string, AddressUpstream>();
  /** The location's resolver, for a host in such a URL that is a name. */
  private readonly dns?: DnsResolver;
  readonly errorLog: ErrorLog;
  /** `proxy_pass https://`: how this location's connections talk TLS. */
  private readonly tls?: TlsProfile;
  /** The peer's headers left out of the response (nginx's list, proxy_hide_header, less
   * proxy_pass_header). */
  readonly hidden: HeaderNames;
  /** absolute_redirect and its kin of the location, for a Location proxy_redirect made. */
  readonly redirectSettings: RedirectSettings;
  /** proxy_method: the method sent instead of the client's. */
  readonly method: ((c: HttpContext) => string) | undefined;
  /** proxy_redirect's rewrites of Location and Refresh. */
  readonly redirects: readonly Rewrite[];
  /** proxy_cookie_domain's and proxy_cookie_path's rewrites of Set-Cookie. */
  readonly cookieDomains: readonly Rewrite[];
  readonly cookiePaths: readonly Rewrite[];

  constructor(
    readonly config: ProxyConfig,
    location: LocationConfig,
    /** The upstream of a `proxy_pass` without variables in its host. */
    readonly upstream: UpstreamRuntime | undefined,
    status?: StatusStore,
    /** The process's upstreams by name, for a URL with variables. */
    private readonly upstreams: ReadonlyMap<string, UpstreamRuntime> = new Map(),
    resolvers?: Resolvers,
  ) {
    if (config.url !== undefined) this.url = compileValue(config.url);
    if (config.resolver && resolvers) this.dns = resolvers.get(config.resolver);
    this.errorLog = errorLogOf(location.errorLogs);
    // Connection is zonal's own: keep-alive when the upstream caches connections.
    this.setHeaders = config.setHeaders
      .filter((h) => h.name.toLowerCase() !== 'connection')
      .map((h) => ({ name: h.name, value: compileValue(h.value) }));
    const connection = config.setHeaders.find((h) => h.name.toLowerCase() === 'connection');
    this.connection = connection && compileValue(connection.value);
    this.dropped = new HeaderNames([...HOP_NAMES, ...OWN_REQUEST, ...this.setHeaders.map((h) => h.name)]);
    // With a URI part, the location's prefix is what it replaces (exact locations: all);
    // with variables in it, it is the whole URI, as nginx sends it.
    if (config.uri?.includes('$')) this.uriValue = compileValue(config.uri);
    else if (config.uri !== undefined) this.prefix = location.modifier === '=' ? '' : location.path;
    this.next = new Set(config.nextUpstream);
    this.readDeadlines = new Deadlines(config.readTimeout);
    const options = config.options;
    const pass = new Set(options.passHeaders);
    this.hidden = new HeaderNames([...HIDDEN_BY_DEFAULT, ...options.hideHeaders].filter((n) => !pass.has(n)));
    this.redirects = compileRewrites(options.redirects);
    this.redirectSettings = location.content?.redirect ?? NGINX_REDIRECTS;
    this.cookieDomains = compileRewrites(options.cookieDomains ?? []);
    this.cookiePaths = compileRewrites(options.cookiePaths ?? []);
    this.method = options.method === undefined ? undefined : compileValue(options.method);
    if (config.ssl) this.tls = tlsProfile(config.ssl, options);
    if (config.addHeaders) this.addHeaders = new AddHeaders(config.addHeaders);
    // The cache needs the zones: only where traffic is recorded (workers).
    if (config.cache && status) this.cache = new LocationCache(config.cache, status, this);
  }

  /** proxy_cache of the location. */
  private readonly cache: LocationCache | undefined;
  /** add_header of the location (proxied responses). */
  readonly addHeaders: AddHeaders | undefined;

  get ignoreHeaders(): ReadonlySet<string> {
    return this.config.options.ignoreHeaders ?? NO_HEADERS;
  }

  /** `captures`: the request's `$1`..`$9`, when an `if` condition set them. */
  handle(req: IncomingMessage, res: ServerResponse, uri: string, captures?: readonly string[]): void {
    // An upgrade request's answer may be a tunnel: nothing to cache or serve from a cache.
    if (this.cache && !upgradeOf(req)) this.cache.handle(req, res, uri, captures);
    else new Exchange(this, req, res, uri, captures).start();
  }

  /** The request to a peer, past the cache (which taps it when given). */
  pass(req: IncomingMessage, res: ServerResponse, uri: string, captures: readonly string[] | undefined, tap?: ProxyTap): void {
    new Exchange(this, req, res, uri, captures, tap).start();
  }

  /** The worker's connections to the chosen peer of `upstream`, with `tls`. */
  pool(chosen: PeerChoice, upstream: ProxyUpstream, tls: TlsProfile | undefined): PeerPool {
    if (upstream !== this.upstream || tls !== this.tls) return upstream.pool(chosen, this.config.connectTimeout, tls);
    let pool = this.pools.get(chosen);
    if (pool === undefined || pool.address !== chosen.address) {
      pool = upstream.pool(chosen, this.config.connectTimeout, tls);
      this.pools.set(chosen, pool);
    }
    return pool;
  }

  /** Where a request goes: the location's upstream, or what its URL with variables names
   * (an upstream of that name, else an address), with the URI that URL gives; a status to
   * answer when it names nothing to reach. */
  reach(c: HttpContext): Reached | number {
    if (!this.url) return { upstream: this.upstream!, tls: this.tls, path: this.target(c), proxyHost: this.upstream!.proxyHost };
    const url = this.url(c);
    const m = /^(https?):\/\/([^/]+)(\/.*)?$/i.exec(url);
    if (!m) {
      this.errorLog.log('error', `invalid URL prefix in "${url}"`);
      return 500;
    }
    const ssl = m[1].toLowerCase() === 'https';
    const [, , host, uri] = m;
    // The URI part replaces the request's, as given; without one the request's goes.
    const path = uri === undefined ? (c.req.url ?? '/') : encodeUnsafe(uri);
    const tls = ssl ? this.tls : undefined;
    const named = /:\d*$/.test(host) || host.endsWith(']') ? undefined : this.upstreamNamed(host);
    if (named) return { upstream: named, tls, path, proxyHost: host };
    const address = parseUpstreamAddress(ssl && !/:\d+$/.test(host) ? `${host}:443` : host);
    if (address.error !== undefined) {
      if (address.resolver && this.dns) return { upstream: UNREACHED, resolving: this.resolve(this.dns, host, ssl), tls, path, proxyHost: host };
      this.errorLog.log('error', address.resolver ? `no resolver defined to resolve ${host.replace(/:\d*$/, '')}` : `${address.error} in "${url}"`);
      return 502;
    }
    const a = address.value;
    const implicit = this.upstreams.get(a.address);
    if (implicit) return { upstream: implicit, tls, path, proxyHost: host };
    const upstream = this.addressUpstream(a.address, host, [a]);
    return { upstream, tls, path, proxyHost: host };
  }

  /** The upstream made of `peers` for `key`, kept while they stay the same. */
  private addressUpstream(key: string, proxyHost: string, peers: ReadonlyArray<Omit<PeerChoice, 'id'>>): AddressUpstream {
    let upstream = this.addresses.get(key);
    if (upstream && upstream.holds(peers.map((p) => p.host))) return upstream;
    upstream?.close();
    this.addresses.delete(key);
    if (this.addresses.size >= ADDRESSES_KEPT) {
      const [oldest, old] = this.addresses.entries().next().value!;
      old.close();
      this.addresses.delete(oldest);
    }
    this.addresses.set(key, (upstream = new AddressUpstream(proxyHost, peers)));
    return upstream;
  }

  /** A URL's host that is a name, looked up by the location's resolver (its answers are
   * cached for their TTL, or `valid=`): every address it has is a peer of the request, as
   * nginx makes an upstream of them. */
  private async resolve(dns: DnsResolver, host: string, ssl: boolean): Promise<ProxyUpstream | number> {
    const m = /^(.*?)(?::(\d+))?$/.exec(host)!;
    const name = m[1].replace(/\.$/, '');
    const port = m[2] !== undefined ? Number(m[2]) : ssl ? 443 : 80;
    try {
      const { addresses } = await dns.lookup(name);
      const peers = addresses.map((ip) => ({ host: ip, port, address: addressKey(ip, port) }));
      return this.addressUpstream(`${name.toLowerCase()}:${port}`, host, peers);
    } catch (e) {
      const err = e as DnsError;
      // nginx's words: "<name> could not be resolved (3: Host not found)".
      this.errorLog.log('error', `${name} could not be resolved (${resolveFailure(err)})`);
      return 502;
    }
  }

  /** An upstream block by its name, caseless as host names are. */
  private upstreamNamed(host: string): UpstreamRuntime | undefined {
    const exact = this.upstreams.get(host);
    if (exact) return exact;
    const lower = host.toLowerCase();
    for (const [name, u] of this.upstreams) if (name.toLowerCase() === lower) return u;
    return undefined;
  }

  /** The peer's request target. */
  target(c: HttpContext): string {
    const { req, uri } = c;
    const url = req.url ?? '/';
    if (this.config.uri === undefined) return url;
    if (this.uriValue) return encodeUnsafe(this.uriValue(c));
    // After `rewrite ... break` nginx passes the changed URI, whatever the URI part says.
    if (isRewrittenHere(req)) return url;
    const q = url.indexOf('?');
    const rest = this.prefix === '' ? '' : uri.slice(this.prefix!.length);
    return this.config.uri + escapeUri(rest) + (q < 0 ? '' : url.slice(q));
  }

  /** The peer's request headers: name, value, name, value; undefined when a configured
   * header's value cannot be sent. Read from the raw headers: `req.headers` would build
   * the headers object. */
  headers(ctx: HttpContext): string[] | undefined {
    const raw = ctx.req.rawHeaders;
    const out: string[] = [];
    const listed = connectionListed(raw);
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i];
      if (this.dropped.has(name) || (listed !== undefined && listed.has(name.toLowerCase()))) continue;
      out.push(name, raw[i + 1]);
    }
    for (const h of this.setHeaders) {
      const v = h.value(ctx);
      if (UNSAFE_VALUE.test(v)) return undefined;
      if (v !== '') out.push(h.name, v);
    }
    return out;
  }

  /** What an upgrade request tells its peer: it may switch protocols, and the Connection
   * header is the configured one (nginx sends it as configured; `upgrade` asks the peer
   * to switch) unless that is empty. */
  upgrade(ctx: HttpContext): { upgrade: true; connection?: string } {
    const connection = this.connection?.(ctx);
    return connection && !UNSAFE_VALUE.test(connection) ? { upgrade: true, connection } : { upgrade: true };
  }

  /** The configured Connection asks the peer to close after this request. */
  closes(ctx: HttpContext): boolean {
    return this.connection !== undefined && /(^|[\s,])close($|[\s,])/i.test(this.connection(ctx));
  }
}

/** How many addresses no upstream has a location's URLs with variables keep (their
 * connections are not kept: only the lookup is saved). */
const ADDRESSES_KEPT = 64;

/** Where a request goes (Proxy.reach). */
interface Reached {
  readonly upstream: ProxyUpstream;
  /** The resolver's lookup of the URL's host when it is a name: the upstream it makes of
   * the addresses, or the status to answer. */
  readonly resolving?: Promise<ProxyUpstream | number>;
  readonly tls: TlsProfile | undefined;
  /** The peer's request target. */
  readonly path: string;
  /** `$proxy_host`: the upstream's name, or the host and port of the URL. */
  readonly proxyHost: string;
}

/** The upstream of an exchange answered at once (its URL named nothing to reach), and of
 * one whose host the resolver is looking up. */
const UNREACHED = new AddressUpstream('', []);

/** nginx's code and text of a failed lookup (ngx_resolver_strerror). */
function resolveFailure(err: DnsError): string {
  if (err.rcode === 'timedout') return '110: Operation timed out';
  const texts = ['', 'Format error', 'Server failure', 'Host not found', 'Unimplemented', 'Operation refused'];
  // NOERROR with no address: nginx says the host is not found.
  return err.rcode === 0 ? '3: Host not found' : `${err.rcode}: ${texts[err.rcode] ?? 'Unknown error'}`;
}

/** `$proxy_port`: the port of `$proxy_host`, or the scheme's. */
const portOf = (proxyHost: string, ssl: boolean): string => /:(\d+)$/.exec(proxyHost)?.[1] ?? (ssl ? '443' : '80');

/** What a variable holds was decoded: what a request line cannot carry is encoded again. */
const encodeUnsafe = (uri: string): string => uri.replace(/[^\x21-\x7e]/g, (ch) => [...Buffer.from(ch)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''));

/** A Location or Refresh value rewritten by the first proxy_redirect that matches. */
/** The headers a request's Connection header lists as its hop's own (RFC 9110 7.6.1),
 * lowercased; undefined when it lists none. */
function connectionListed(raw: readonly string[]): Set<string> | undefined {
  let listed: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length !== 10 || raw[i].toLowerCase() !== 'connection') continue;
    for (const option of raw[i + 1].toLowerCase().split(',')) {
      const name = option.trim();
      // keep-alive, the usual one, is dropped anyway: no set for it.
      if (!HOP.has(name)) (listed ??= new Set()).add(name);
    }
  }
  return listed;
}

/** The Refresh header's URL (`5; url=http://...`) rewritten as a Location. */
/** Leaves the hidden headers out of a raw name, value list, in place. */
function dropHidden(headers: string[], hidden: HeaderNames): void {
  let kept = 0;
  for (let i = 0; i < headers.length; i += 2) {
    if (hidden.has(headers[i])) continue;
    headers[kept++] = headers[i];
    headers[kept++] = headers[i + 1];
  }
  headers.length = kept;
}

/** Whether a request's body has a Content-Length. */
function hasLength(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 14 && raw[i].toLowerCase() === 'content-length') return true;
  return false;
}

/** Whether a request has a body (RFC 9112 6.3): a Transfer-Encoding, or a Content-Length
 * other than 0 (node's parser refuses a request with both, or with two lengths). */
function hasBody(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') return true;
    if (name.length === 14 && name.toLowerCase() === 'content-length' && raw[i + 1] !== '0') return true;
  }
  return false;
}

/** nginx escapes a URI it puts back together: what is not allowed in a path, and `?`/`#`. */
function escapeUri(s: string): string {
  return /^[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/.test(s) ? s : encodeURI(s).replace(/[?#]/g, (c) => (c === '?' ? '%3F' : '%23'));
}

/** Where a response keeps its exchange, for the one 'close' listener of all. */
const EXCHANGE = Symbol('zonal.exchange');
type Proxied = ServerResponse & { [EXCHANGE]?: Exchange };

/** The client went away (or the response ended): a 'close' listener without a closure. */
function responseClosed(this: Proxied): void {
  this[EXCHANGE]!.clientClosed();
}

/** One request's way through the proxy: its attempts, and the handler of the current one. */
class Exchange implements ExchangeHandler, Expiring, AfterIo {
  /** What the request's values read (proxy_set_header, proxy_redirect, add_header). */
  private readonly context: HttpContext;
  /** Where the request goes (the location's upstream, or what its URL named), and how:
   * settled once the resolver has answered for a name. */
  private upstream: ProxyUpstream = UNREACHED;
  private tls: TlsProfile | undefined;
  /** What to answer when the URL named nothing to reach; 0 otherwise. */
  private unreached: number = 0;
  private proxyHost: string = '';
  /** The resolver's lookup of the URL's host, while it runs. */
  private resolving: Promise<ProxyUpstream | number> | undefined;
  private chosen: PeerChoice | undefined;
  private client: UpstreamConnection | undefined;
  private pool: PeerPool | undefined;
  private abort: ((err: Error) => void) | undefined;
  private tried: Set<number> | undefined;
  private tries = 0;
  /** What the last failed attempt would answer when no other peer is left (nginx: 504
   * after a timeout, 502 otherwise, or the peer's own 50x). */
  private lastFailure = 0;
  private readonly hasBody: boolean;
  /** performance.now() of the first attempt (proxy_next_upstream_timeout). */
  private firstStarted = 0;
  /** proxy_intercept_errors: the peer's answer is read and dropped, the server's page
   * goes instead. */
  private intercepted = false;
  /** proxy_http_version 1.0: a body without a length, read whole first. */
  private body: Buffer | undefined;
  private headersSent = false;
  private finished = false;
  private started = 0;
  /** The answered attempt's time to its header (ms) and status. */
  headerMs = 0;
  status = 0;
  private received = 0;
  private sent = 0;
  private resume: (() => void) | undefined;
  /** The last piece of the body, held until the read that brought it is over: the piece
   * that completes the response goes out with res.end(), once the response is counted
   * and its peer released. (Node runs queued ticks between the parser's callbacks, and
   * a piece written at once would be flushed to the client before onComplete.) */
  private held: Buffer | undefined;
  private leaveQueue: (() => void) | undefined;
  /** The current attempt as the access log sees it ($upstream_*), when one names them. */
  private attempt: UpstreamAttempt | undefined;
  private path = '';
  private readonly head: string[] | undefined;
  /** The response went to the tap, not to the client. */
  private kept = false;
  // proxy_read_timeout (Expiring): from the request's dispatch to the response headers,
  // then between two reads of the body.
  deadline = 0;
  prevExpiring: Expiring | undefined = undefined;
  nextExpiring: Expiring | undefined = undefined;

  constructor(
    private readonly proxy: Proxy,
    readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    readonly uri: string,
    readonly captures?: readonly string[],
    private readonly tap?: ProxyTap,
  ) {
    this.hasBody = hasBody(req.rawHeaders);
    this.context = requestContext(req, res, uri, captures, {
      proxyHost: { get: () => this.proxyHost },
      proxyPort: { get: () => this.upstream && portOf(this.proxyHost, this.tls !== undefined) },
      upstreamCacheStatus: { get: () => tap?.cacheStatus ?? '' },
    });
    const reached = proxy.reach(this.context);
    if (typeof reached === 'number') this.unreached = reached;
    else ({ upstream: this.upstream, resolving: this.resolving, tls: this.tls, path: this.path, proxyHost: this.proxyHost } = reached);
    const head = proxy.headers(this.context);
    this.head = head && tap ? tap.requestHeaders(head) : head;
    (res as Proxied)[EXCHANGE] = this;
    res.on('close', responseClosed);
  }

  start(): void {
    if (this.resolving) {
      void this.resolving.then((upstream) => {
        this.resolving = undefined;
        if (typeof upstream === 'number') this.unreached = upstream;
        else this.upstream = upstream;
        if (!this.finished) this.start();
      });
      return;
    }
    if (this.unreached) return this.fail(this.unreached);
    // A configured header the request's variables made unsendable: nginx answers 400 too.
    if (!this.head) return this.fail(400);
    // HTTP/1.0 has no chunked bodies: a body without a length is read whole first, as
    // nginx's buffering gives it one.
    if (this.proxy.config.options.httpVersion === '1.0' && this.hasBody && this.body === undefined && !hasLength(this.req.rawHeaders)) return this.readBody();
    const upstream = this.upstream;
    const chosen = upstream.pick(this.req, this.uri, this.tried);
    if (typeof chosen !== 'string') {
      this.send(chosen);
      return;
    }
    if (chosen === 'busy' && upstream.queue) {
      const leave = upstream.queue.enter({ tryStart: () => this.retryFromQueue(), timedOut: () => this.fail(502) });
      if (leave) {
        this.leaveQueue = leave;
        return;
      }
    }
    // nginx's "no live upstreams": the attempt is the upstream's name in $upstream_addr.
    attemptEnded(attemptStarted(this.res, upstream.proxyHost, false), 0, -1, 0, 0, 502);
    if (this.tap?.failed(this.lastFailure || 502, 'error')) return;
    this.fail(this.lastFailure || 502);
  }

  private readBody(): void {
    const chunks: Buffer[] = [];
    // From the client, or from where the core module already spooled a chunked body.
    const body = requestBody(this.req);
    body.on('data', (c: Buffer) => chunks.push(c));
    body.once('end', () => {
      this.body = Buffer.concat(chunks);
      if (!this.finished) this.start();
    });
  }

  /** The client went away: the peer's request is aborted, a waiting one leaves the queue. */
  clientClosed(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.leaveQueue) this.leaveQueue();
    // Only a request still at the peer is aborted: making the Error costs a stack trace.
    else if (this.chosen && this.abort) this.abort(new Error('client closed the connection'));
  }

  private retryFromQueue(): boolean {
    if (this.finished) return true;
    const chosen = this.upstream.pick(this.req, this.uri, this.tried);
    if (typeof chosen === 'string') return false;
    this.leaveQueue = undefined;
    this.send(chosen);
    return true;
  }

  private send(chosen: PeerChoice): void {
    if (this.finished) {
      this.upstream.release(chosen, false);
      return;
    }
    this.chosen = chosen;
    this.abort = undefined;
    this.tries++;
    const now = performance.now();
    if (this.tries === 1) this.firstStarted = now;
    this.started = now;
    this.status = 0;
    this.received = 0;
    const pool = (this.pool = this.proxy.pool(chosen, this.upstream, this.tls));
    const client = (this.client = pool.take(now));
    this.attempt = attemptStarted(this.res, chosen.address, (client as unknown as { connected: boolean }).connected);
    this.proxy.readDeadlines.start(this, now);
    // The body's bytes follow through onBodySent, never before dispatch returns.
    const http10 = this.proxy.config.options.httpVersion === '1.0';
    const buffered = this.body;
    this.sent = client.dispatch(
      {
        path: this.path,
        method: this.proxy.method?.(this.context) || this.tap?.method || (this.req.method ?? 'GET'),
        headers: buffered ? [...this.head!, 'Content-Length', String(buffered.length)] : this.head!,
        body: buffered ? Readable.from([buffered]) : this.hasBody ? requestBody(this.req) : null,
        // HTTP/1.0 keeps no connection (nginx sends Connection: close with it).
        reset: http10 || this.upstream.config.keepalive === 0 || this.proxy.closes(this.context),
        http10,
        sendTimeout: this.proxy.config.sendTimeout,
        ...(!http10 && upgradeOf(this.req) ? this.proxy.upgrade(this.context) : {}),
      },
      this,
    );
  }

  /** $upstream_connect_time of the attempt: 0 on a connection open before it, -1 while
   * its new one is not up. */
  private connectMs(): number {
    const at = this.client!.connectedAt;
    return at === 0 ? -1 : Math.max(0, at - this.started);
  }

  /** proxy_read_timeout passed: the attempt is aborted as a timeout. */
  expired(): void {
    if (this.chosen) this.abort?.(new ReadTimeout('proxy_read_timeout'));
  }

  onConnect(abort: (err: Error) => void): void {
    this.abort = abort;
    if (this.finished) abort(new Error('client closed the connection'));
  }

  onBodySent(chunkSize: number): void {
    this.sent += chunkSize;
  }

  onHeaders(statusCode: number, headers: string[], resume: () => void, statusText: string): boolean {
    const now = performance.now();
    this.proxy.readDeadlines.start(this, now);
    // A 101 comes only to an upgrade request: the connection becomes a tunnel (onUpgrade).
    const switching = statusCode === 101;
    if (statusCode < 200 && !switching) return true;
    this.headerMs = now - this.started;
    this.status = statusCode;
    attemptHeaders(this.attempt, statusCode, this.headerMs, this.connectMs(), headers);
    this.resume = resume;
    this.received += 17 + statusText.length;
    // A listed status is a failed attempt: another peer gets the request when allowed.
    if (NEXT_STATUSES.has(statusCode) && this.proxy.next.has(`http_${statusCode}` as NextUpstreamCondition) && this.canRetry(true)) {
      this.abort?.(new RetryStatus());
      return false;
    }
    // The peer's hop-by-hop headers are left out in place: the array is this response's.
    // Hidden ones go only from what the client gets: the cache reads X-Accel-Expires.
    const hidden = this.proxy.hidden;
    const redirects = this.proxy.redirects.length > 0;
    const cookies = this.proxy.cookieDomains.length > 0 || this.proxy.cookiePaths.length > 0;
    let kept = 0;
    let hides = false;
    let accel: string | undefined;
    let limitRate: string | undefined;
    const ignored = this.proxy.ignoreHeaders;
    for (let i = 0; i < headers.length; i += 2) {
      const name = headers[i];
      let value = headers[i + 1];
      this.received += name.length + value.length + 4;
      // A 101's Upgrade names the protocol the client gets: nginx passes it on.
      if (HOP.has(name) && !(switching && name.length === 7 && name.toLowerCase() === 'upgrade')) continue;
      if (!hides && hidden.has(name)) hides = true;
      if (name.length > 8 && (name[0] === 'X' || name[0] === 'x')) {
        const lower = name.toLowerCase();
        if (lower === 'x-accel-redirect' && !ignored.has(lower)) accel = value;
        else if (lower === 'x-accel-limit-rate' && !ignored.has(lower)) limitRate = value;
      }
      let rewritten: string | undefined;
      if (redirects && name.length === 8 && name.toLowerCase() === 'location') rewritten = this.relocated(value);
      else if (redirects && name.length === 7 && name.toLowerCase() === 'refresh') rewritten = refreshRedirected(this.proxy.redirects, value, this.context);
      else if (cookies && name.length === 10 && name.toLowerCase() === 'set-cookie') rewritten = cookieRewritten(this.proxy.cookieDomains, this.proxy.cookiePaths, value, this.context);
      if (rewritten !== undefined) {
        // A rewrite's variables ($uri) may put in bytes node:http refuses.
        const sent = sendable(this.res, name, rewritten);
        if (sent === undefined) continue;
        value = sent;
      }
      headers[kept++] = name;
      headers[kept++] = value;
    }
    headers.length = kept;
    this.received += 2;
    const res = this.res;
    if (this.finished || res.destroyed) return false;
    if (switching) return this.switchProtocols(statusText, headers, hides);
    // proxy_intercept_errors: the body is read and dropped, the page goes at the end.
    // nginx intercepts the statuses an error_page names, and only those; the cache sees
    // the answer first (a stale entry may answer instead, or the error be remembered).
    const intercept = statusCode >= 300 && this.proxy.config.options.interceptErrors && errorPagesOf(res)?.has(statusCode) === true;
    if (this.tap && !this.tap.response(statusCode, statusText, headers, intercept)) {
      this.kept = true;
      return true;
    }
    if (intercept) {
      this.intercepted = true;
      return true;
    }
    if (limitRate !== undefined) paceByPeer(this.req, res, limitRate);
    if (accel !== undefined && !this.tap) {
      // nginx's redirect by the peer: the request goes on at once in the location the
      // header names (once this parser callback is over); the peer's body is read and
      // dropped behind it, and the exchange no longer answers the client.
      const kept = keptOnRedirect(headers);
      this.intercepted = true;
      setImmediate(() => this.redirect(accel, kept));
      return true;
    }
    // proxy_limit_rate is a filter of its own: it paces the peer's answer whatever the
    // client's rate is.
    const rate = this.proxy.config.options.limitRate;
    if (rate) filterBody(res, rateLimiter({ rate, after: 0 }));
    if (hides) dropHidden(headers, hidden);
    const cookie = this.upstream.stickyCookie?.(this.chosen!, this.req, this.uri);
    if (cookie !== undefined) headers.push('Set-Cookie', cookie);
    this.proxy.addHeaders?.addTo(headers, statusCode, this.context);
    this.headersSent = true;
    res.writeHead(statusCode, statusText, headers);
    return true;
  }

  /** The peer's 101 to the client, through the header filters (proxy_hide_header,
   * add_header, the sticky cookie) with nginx's `Connection: upgrade`; its head goes
   * out when the peer's connection is handed over (onUpgrade). */
  private switchProtocols(statusText: string, headers: string[], hides: boolean): boolean {
    if (hides) dropHidden(headers, this.proxy.hidden);
    const cookie = this.upstream.stickyCookie?.(this.chosen!, this.req, this.uri);
    if (cookie !== undefined) headers.push('Set-Cookie', cookie);
    this.proxy.addHeaders?.addTo(headers, 101, this.context);
    headers.push('Connection', 'upgrade');
    this.headersSent = true;
    // The connection is the tunnel's: no keep-alive after this response.
    this.res.shouldKeepAlive = false;
    this.res.writeHead(101, statusText, headers);
    return true;
  }

  /** The peer switched protocols: the client's connection and the peer's are joined
   * until either closes (nginx's upgraded connection), what each sent past its head
   * first. The request is counted and logged when the tunnel has closed. */
  onUpgrade(peer: Socket, rest: Buffer): void {
    this.proxy.readDeadlines.stop(this);
    const client = upgradeOf(this.req)!;
    if (this.finished || this.res.destroyed || client.socket.destroyed) {
      peer.destroy();
      this.upgradeEnded();
      return;
    }
    // The client's connection is taken: its closing no longer aborts a request.
    client.taken = true;
    this.finished = true;
    this.res.end();
    if (client.head.length > 0) {
      this.sent += client.head.length;
      peer.write(client.head);
    }
    if (rest.length > 0) {
      this.received += rest.length;
      client.socket.write(rest);
    }
    const proxy = this.proxy;
    tunnel(client.socket, peer, {
      timeout: proxy.config.readTimeout,
      halfClose: false,
      fromClient: (n) => (this.sent += n),
      fromPeer: (n) => (this.received += n),
      clientSendTimeout: sendTimeoutOf(this.res),
      peerSendTimeout: proxy.config.sendTimeout,
    });
    let open = 2;
    const closed = () => {
      if (--open === 0) this.upgradeEnded();
    };
    client.socket.once('close', closed);
    peer.once('close', closed);
  }

  /** The tunnel closed (or never opened): the peer's response is counted, its attempt
   * ends, and the client's response closes (the plane counts and logs it then). */
  private upgradeEnded(): void {
    const now = performance.now();
    const chosen = this.chosen!;
    this.chosen = undefined;
    chosen.metrics?.responded(101, this.received, this.sent, this.headerMs, now - this.started);
    attemptEnded(this.attempt, now - this.started, this.connectMs(), this.received, this.sent);
    this.upstream.release(chosen, false);
    closeResponse(this.res);
  }

  onData(chunk: Buffer): boolean {
    this.proxy.readDeadlines.start(this, performance.now());
    this.received += chunk.length;
    if (this.intercepted) return true;
    if (this.tap) {
      this.tap.data(chunk);
      if (this.kept) return true;
    }
    const held = this.held;
    this.held = chunk;
    return held === undefined || this.write(held);
  }

  onReadEnd(): boolean {
    const held = this.held;
    if (held === undefined) return true;
    this.held = undefined;
    return this.write(held);
  }

  /** A piece of the body to the client; false when it must wait for 'drain'. */
  private write(chunk: Buffer): boolean {
    if (this.res.write(chunk)) return true;
    this.res.once('drain', this.resume!);
    return false;
  }

  onComplete(): void {
    const now = performance.now();
    this.proxy.readDeadlines.stop(this);
    const chosen = this.chosen!;
    const upstream = this.upstream;
    chosen.metrics?.responded(this.status, this.received, this.sent, this.headerMs, now - this.started);
    attemptEnded(this.attempt, now - this.started, this.connectMs(), this.received, this.sent);
    this.pool!.give(this.client!, upstream.config.keepalive > 0, now);
    // A listed status is a failed attempt even when no other peer is left to try (but
    // 403 and 404, never the peer's failure).
    const status = this.status;
    upstream.release(chosen, FAILING_STATUSES.has(status) && this.proxy.next.has(`http_${status}` as NextUpstreamCondition));
    this.chosen = undefined;
    if (this.tap) {
      this.tap.complete();
      if (this.kept) return;
    }
    // The response ends with the other writes of this turn (after-io.ts).
    if (!this.finished) afterIo(this);
  }

  runAfterIo(): void {
    const held = this.held;
    this.held = undefined;
    if (this.finished) return;
    if (this.intercepted) {
      errorPagesOf(this.res)!.answer(this.status);
      return;
    }
    this.res.end(held);
  }


  /** A peer's Location through proxy_redirect: one the rewrite made a path is made a URL
   * as nginx's header filter makes the server's own (`absolute_redirect`); one no rewrite
   * matched goes as the peer sent it. */
  private relocated(value: string): string {
    const rewritten = redirected(this.proxy.redirects, value, this.context);
    const settings = this.proxy.redirectSettings;
    if (rewritten === value || !rewritten.startsWith('/') || !settings.absolute) return rewritten;
    return absoluteLocation(rewritten, requestOrigin(this.req), settings, serverNameOf(this.res));
  }

  /** X-Accel-Redirect: a named location, or a URI with its arguments that must not
   * climb out of the tree (`..`, as nginx's ngx_http_parse_unsafe_uri refuses: 404). The
   * request goes on as a GET (a HEAD stays one), with the peer's headers nginx keeps. */
  private redirect(target: string, kept: readonly string[]): void {
    if (this.finished) return;
    // What the peer does from here is no longer the client's answer (nor, if it fails,
    // a failure of the request).
    this.finished = true;
    const res = this.res;
    if (!target.startsWith('@') && unsafeUri(target)) {
      this.proxy.errorLog.log('error', `unsafe URI "${target}" was detected`);
      return sendPage(res, 404, this.req.method === 'HEAD');
    }
    for (let i = 0; i < kept.length; i += 2) res.appendHeader(kept[i], kept[i + 1]);
    if (this.req.method !== 'HEAD') this.req.method = 'GET';
    // The URI's arguments replace the request's, none when it has none (nginx's
    // ngx_http_internal_redirect with the URI's split args).
    internalRedirect(this.req, res, target.startsWith('@') || target.includes('?') ? target : `${target}?`, this.uri);
  }

  onError(err: Error): void {
    this.proxy.readDeadlines.stop(this);
    const chosen = this.chosen!;
    const upstream = this.upstream;
    this.chosen = undefined;
    this.held = undefined;
    this.pool!.give(this.client!, false, performance.now());
    const clientGone = this.finished;
    const retryStatus = err instanceof RetryStatus;
    const failure: Failure | undefined = retryStatus ? undefined : failureOf(err);
    attemptEnded(this.attempt, performance.now() - this.started, this.connectMs(), this.received, this.sent, failure === 'timeout' ? 504 : 502);
    const written = this.client!.written;
    // The client leaving is not the peer's failure, nor a 403 or 404 passed on.
    upstream.release(chosen, !clientGone && (!retryStatus || FAILING_STATUSES.has(this.status)));
    if (clientGone) {
      this.tap?.failed(0, 'client');
      return;
    }
    if (this.headersSent) {
      this.tap?.failed(502, 'error');
      this.res.destroy(err);
      return;
    }
    this.lastFailure = retryStatus ? this.status : failure === 'timeout' ? 504 : 502;
    if ((retryStatus || this.proxy.next.has(failure!)) && this.canRetry(written)) {
      (this.tried ??= new Set()).add(chosen.id);
      this.start();
      return;
    }
    if (this.tap?.failed(this.lastFailure, retryStatus ? 'status' : failure!)) return;
    this.fail(this.lastFailure);
  }

  /** Whether another peer may get the request (nginx's rules): nothing sent to the client
   * yet, no streamed body, within proxy_next_upstream_tries and _timeout, a peer left
   * untried, and a non-idempotent request only with `non_idempotent` once a peer had it
   * (`written`). */
  private canRetry(written: boolean): boolean {
    const config = this.proxy.config;
    const limit = config.nextUpstreamTries;
    if ((this.hasBody && this.body === undefined) || this.headersSent || (limit !== 0 && this.tries >= limit)) return false;
    const timeout = config.options.nextUpstreamTimeout;
    if (timeout !== 0 && performance.now() - this.firstStarted >= timeout) return false;
    if (written && NON_IDEMPOTENT.has(this.req.method ?? 'GET') && !this.proxy.next.has('non_idempotent')) return false;
    // nginx tries each peer once at most: the last one's answer is passed on as it is.
    return this.tries < this.upstream.peerCount;
  }

  /** The server's own answer for a request no peer answered: the location's error_page
   * for the code when it has one, else nginx's page with the location's add_header
   * (those marked `always` for an error), as nginx's special response. */
  private fail(code: number): void {
    if (this.finished || this.res.headersSent) return;
    this.leaveQueue = undefined;
    const pages = errorPagesOf(this.res);
    if (pages?.has(code)) return pages.answer(code);
    const add = this.proxy.addHeaders;
    if (add) {
      const list: string[] = [];
      add.addTo(list, code, this.context);
      for (let i = 0; i < list.length; i += 2) this.res.appendHeader(list[i], list[i + 1]);
    }
    sendPage(this.res, code, this.req.method === 'HEAD');
  }
}

/** A status proxy_next_upstream retries on, turned into an abort of that attempt. */
class RetryStatus extends Error {}

/** proxy_read_timeout passed: the attempt is aborted as a timeout. */
class ReadTimeout extends Error {}
