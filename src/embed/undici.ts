// Outgoing calls as upstreams: undici interceptors and a dispatcher bound to an HTTP
// upstream of a status's catalog, so that `fetch('http://backend/...', { dispatcher })`
// reaches that upstream's live peers and shows in /status/http/upstreams/backend.
//
// - balanceTo(status, name): an interceptor (`agent.compose(balanceTo(...))`) that sends
//   each request for the upstream to a peer chosen by zonal's own balancer
//   (server/upstream/balancer.ts, the one the server's proxy uses: its methods, max_conns,
//   max_fails/fail_timeout, slow start, backup, and a /config change noticed with one
//   atomic load), retries another peer as nginx's proxy_next_upstream does, and records
//   the peer's fields.
// - upstreamDispatcher(status, name): an undici Agent with balanceTo composed on it, for
//   every request it is given.
// - recordTo(status, name, peer?): recording only, on any undici dispatcher: the peer a
//   request was sent to (its origin's host:port, or the peer named) counts the request.
//
// What is recorded per request, as the server's proxy does (server/http/proxy.ts): the
// balancer's pick counts `selected` (total, current, last) and its release ends
// `current`; at the end of a response, `responses` by code, `data.received` and
// `data.sent` (wire-bytes.ts says what is exact), and `header_time` and `response_time`
// (from the attempt's dispatch to its response head, and to its end). A failed attempt
// counts in `fails` (balancer.release(chosen, true)), and max_fails of them make the peer
// `unavailable` for fail_timeout in every worker. Neither the caller cancelling a request
// nor a request undici refuses before sending it (a bad header) is the peer's failure.
//
// Retries (nginx's proxy_next_upstream, default `error timeout`): an attempt that failed
// with an error or a timeout before its response head was handed to the caller goes to
// another peer of the upstream, never one this request already tried, while
// - the method is idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE; undici's
//   `idempotent` option says otherwise when given): nginx's default, which never retries
//   POST, LOCK or PATCH unless `non_idempotent` is listed;
// - the body can be sent again: none, a string or bytes. A stream or an iterable (what
//   fetch makes of a body) is read once, so such a request is never retried;
// - `nextUpstreamTries` (proxy_next_upstream_tries, 0: no limit) is not reached.
// `http_500`, `http_502`, `http_503`, `http_504`, `http_429` listed retry that answer too,
// when another peer can be had (it is picked before the answer is dropped); otherwise the
// caller gets the peer's answer, which still counts as the peer's failure, as nginx does.
// When no peer is left, the caller gets the last attempt's error; when there was none to
// try, a NoLivePeerError (nginx's "no live upstreams": 502 in the server).
//
// undici itself is not imported here but for the Agent of upstreamDispatcher(), and then
// lazily: the interceptors need none of its code, and a process that never calls
// upstreamDispatcher() does not need undici installed. The dispatchers composed on must be
// undici 7's (the handler API of onRequestStart/onResponseStart...); the caller may be
// undici 7's fetch or node's own global fetch.
import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import type { Duplex } from 'node:stream';
import type { Agent, Dispatcher } from 'undici';
import type { SeqRecord } from '../engine/index.js';
import { isPeerAddressError, parsePeerAddress, peerName, type UpstreamConfig } from '../metrics/catalog.js';
import { peerSet, peerSetRecord } from '../metrics/peers.js';
import type { Status } from '../metrics/status.js';
import { peerHandles, type Peer } from '../metrics/upstreams.js';
import type { BalancingMethod } from '../server/config/model.js';
import { Balancer, balancingMethodOf, type Chosen } from '../server/upstream/balancer.js';
import { requestBytesEstimate, WireMeter } from './wire-bytes.js';

type DispatchOptions = Dispatcher.DispatchOptions;
type DispatchHandler = Dispatcher.DispatchHandler;
type DispatchController = Dispatcher.DispatchController;
type Dispatch = Dispatcher.Dispatch;
type Interceptor = Dispatcher.DispatcherComposeInterceptor;

/** nginx's proxy_next_upstream conditions this dispatcher knows. */
export type NextUpstream = 'error' | 'timeout' | 'http_500' | 'http_502' | 'http_503' | 'http_504' | 'http_429' | 'non_idempotent';

export interface BalanceOptions {
  /** Which requests go to the upstream: those whose origin's host name is the upstream's
   * name (`http://backend/...`; the default of balanceTo), or every request (`all`, the
   * default of upstreamDispatcher). Others pass through untouched. */
  match?: 'name' | 'all';
  /** proxy_next_upstream: default `['error', 'timeout']`; `[]` is nginx's `off`. */
  nextUpstream?: readonly NextUpstream[];
  /** proxy_next_upstream_tries: attempts per request at most, 0 (default) no limit. */
  nextUpstreamTries?: number;
  /** The key of the `hash` and `ip_hash` methods for a request (nginx's `hash $key`, or
   * the address ip_hash hashes). Without it they balance by round robin, as nginx does
   * for an empty key. */
  key?: (options: DispatchOptions) => string;
  /** The balancing method, when the catalog's kind does not say all of it: `random two`,
   * consistent `hash`. By default the catalog's (`method`, round robin when absent). */
  method?: BalancingMethod;
}

export interface UpstreamDispatcherOptions extends BalanceOptions {
  /** Options of the undici Agent that holds the connections to the peers (connections per
   * peer, keep-alive and connect timeouts, TLS). */
  agent?: Agent.Options;
}

/** No peer could be chosen: each selectable one is at max_conns (`busy`), or none is up
 * (`unavailable`: down, unavailable after max_fails, or all tried). */
export class NoLivePeerError extends Error {
  readonly code = 'ZONAL_NO_LIVE_PEER';
  constructor(
    readonly upstream: string,
    readonly reason: 'busy' | 'unavailable',
  ) {
    super(
      reason === 'busy'
        ? `no live upstreams: every selectable peer of upstream "${upstream}" is at max_conns`
        : `no live upstreams: no peer of upstream "${upstream}" is up`,
    );
    this.name = 'NoLivePeerError';
  }
}

/** The HTTP upstream `name` of the status's catalog. */
function httpUpstream(status: Status, name: string): UpstreamConfig {
  const u = status.catalog().http?.upstreams?.find((x) => x.name === name);
  if (!u)
    throw new Error(`no HTTP upstream "${name}" in the status's catalog: create the status with { http: { upstreams: [{ name: '${name}', peers: [...] }] } }`);
  return u;
}

// ---- Requests: origins, headers, bodies ---------------------------------------------------

/** What a request's origin says. */
interface Origin {
  /** `http:` or `https:`. */
  readonly protocol: string;
  /** The host name as written (IPv6 in brackets), lowercased. */
  readonly hostname: string;
  /** Host and port as the Host header has them (the port only when not the default). */
  readonly host: string;
  /** The canonical `ip:port` a peer would be keyed by (the host name and port when it is
   * not an address). */
  readonly address: string;
}

// Origins seen, parsed once: a process calls a few origins many times.
const origins = new Map<string, Origin | null>();

function originOf(origin: DispatchOptions['origin']): Origin | undefined {
  if (origin === undefined) return undefined;
  const text = typeof origin === 'string' ? origin : origin.origin;
  let o = origins.get(text);
  if (o === undefined) {
    try {
      const url = new URL(text);
      const port = url.port || (url.protocol === 'https:' ? '443' : '80');
      const parsed = parsePeerAddress(`${url.hostname}:${port}`);
      o = {
        protocol: url.protocol,
        hostname: url.hostname,
        host: url.host,
        address: isPeerAddressError(parsed) ? `${url.hostname}:${port}` : parsed.address,
      };
    } catch {
      o = null;
    }
    if (origins.size >= 256) origins.clear();
    origins.set(text, o);
  }
  return o ?? undefined;
}

/** undici's request headers (an object, a flat array, or an iterable of pairs) as name,
 * value pairs, a list value as several pairs, as undici writes them. */
function headerPairs(headers: unknown): string[] {
  const out: string[] = [];
  const add = (name: unknown, value: unknown) => {
    if (value === undefined) return;
    for (const v of Array.isArray(value) ? value : [value]) out.push(String(name), v === null ? '' : String(v));
  };
  if (headers === null || headers === undefined) return out;
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) add(headers[i], headers[i + 1]);
  } else if (typeof headers === 'object' && typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const pair of headers as Iterable<[unknown, unknown]>) add(pair[0], pair[1]);
  } else if (typeof headers === 'object') {
    for (const [name, value] of Object.entries(headers as Record<string, unknown>)) add(name, value);
  }
  return out;
}

function hasHeader(pairs: readonly string[], name: string): boolean {
  for (let i = 0; i < pairs.length; i += 2) if (pairs[i].length === name.length && pairs[i].toLowerCase() === name) return true;
  return false;
}

/** RFC 9110 9.2.2: what may be sent twice. */
const IDEMPOTENT: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/** A body that can be sent again: none, a string or bytes (not a stream or an iterable). */
function replayable(body: unknown): boolean {
  return body === null || body === undefined || typeof body === 'string' || ArrayBuffer.isView(body) || body instanceof ArrayBuffer;
}

// ---- Failures -----------------------------------------------------------------------------

/** Errors that are not the peer's: the request was refused before it was sent, or the
 * caller or the dispatcher ended it. */
const NOT_THE_PEERS: ReadonlySet<string> = new Set([
  'UND_ERR_INVALID_ARG',
  'UND_ERR_NOT_SUPPORTED',
  'UND_ERR_ABORTED',
  'UND_ERR_ABORT',
  'UND_ERR_DESTROYED',
  'UND_ERR_CLOSED',
  'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH',
  'ABORT_ERR',
]);
const TIMEOUTS: ReadonlySet<string> = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

/** What an error says of the peer: proxy_next_upstream's `error` or `timeout`, or
 * undefined when it is not the peer's failure. */
function failureOf(err: unknown): 'error' | 'timeout' | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    if (TIMEOUTS.has(code)) return 'timeout';
    if (NOT_THE_PEERS.has(code)) return undefined;
  }
  if ((err as { name?: unknown } | null)?.name === 'AbortError') return undefined;
  return 'error';
}

/** An answer whose status proxy_next_upstream lists: the attempt is dropped for another. */
class RetryStatus extends Error {}

// ---- balanceTo ------------------------------------------------------------------------

/** One balanceTo(): the upstream's balancer, made again when a reload changes the
 * upstream's catalog entry (one atomic load per request tells). */
class Route {
  private catalogGeneration = -1;
  private entry: UpstreamConfig | undefined;
  private balancer!: Balancer;
  readonly next: ReadonlySet<NextUpstream>;
  readonly tries: number;

  constructor(
    readonly status: Status,
    readonly name: string,
    readonly options: BalanceOptions,
  ) {
    this.next = new Set(options.nextUpstream ?? ['error', 'timeout']);
    this.tries = options.nextUpstreamTries ?? 0;
    this.current();
  }

  /** The balancer of the upstream as the catalog has it now. */
  current(): Balancer {
    const generation = this.status.generation;
    if (generation !== this.catalogGeneration) {
      // Throws when a reload took the upstream away: the request fails, and the next one
      // looks again.
      const u = httpUpstream(this.status, this.name);
      if (u !== this.entry) {
        this.balancer = new Balancer(this.status, u, this.options.method ?? balancingMethodOf(u.method), { protocol: 'http' });
        this.entry = u;
      }
      this.catalogGeneration = generation;
    }
    return this.balancer;
  }

  /** Whether `status` is an answer proxy_next_upstream lists. */
  retriesStatus(status: number): boolean {
    return (
      (status === 500 || status === 502 || status === 503 || status === 504 || status === 429) &&
      this.next.has(`http_${status}` as NextUpstream)
    );
  }
}

/** What the caller's handler is given: one controller for all of the request's attempts,
 * acting on the current one. */
class CallerController implements DispatchController {
  private abortedBy: Error | null = null;
  private isAborted = false;
  private isPaused = false;

  constructor(private readonly exchange: Exchange) {}

  get aborted(): boolean {
    return this.isAborted;
  }
  get paused(): boolean {
    return this.isPaused;
  }
  get reason(): Error | null {
    return this.abortedBy;
  }
  get rawHeaders(): DispatchController['rawHeaders'] {
    return this.exchange.attempt?.controller?.rawHeaders;
  }
  get rawTrailers(): DispatchController['rawTrailers'] {
    return this.exchange.attempt?.controller?.rawTrailers;
  }

  abort(reason: Error): void {
    if (this.isAborted) return;
    this.isAborted = true;
    this.abortedBy = reason ?? new Error('aborted');
    const attempt = this.exchange.attempt;
    if (attempt && !attempt.done) attempt.controller?.abort(this.abortedBy);
  }

  pause(): void {
    this.isPaused = true;
    this.exchange.attempt?.controller?.pause();
  }

  resume(): void {
    this.isPaused = false;
    this.exchange.attempt?.controller?.resume();
  }
}

/** One request through balanceTo: its attempts, one peer each. */
class Exchange {
  readonly controller = new CallerController(this);
  /** The current attempt (or the last one). */
  attempt: Attempt | undefined = undefined;
  /** Peers this request tried (proxy_next_upstream never tries one twice). */
  private tried: Set<number> | undefined = undefined;
  private tries = 0;
  /** The caller's handler has had onRequestStart. */
  started = false;
  /** The caller's handler has had a response head: no retry from here on. */
  responded = false;
  private lastError: Error | undefined = undefined;
  /** The peer the next attempt goes to, picked before a listed answer was dropped. */
  private next: { readonly balancer: Balancer; readonly chosen: Chosen } | undefined = undefined;
  /** The request as each attempt sends it, but for its origin. */
  private readonly request: DispatchOptions;
  private readonly retryable: boolean;
  private readonly key: string | undefined;
  private estimate = -1;

  constructor(
    readonly route: Route,
    private readonly dispatch: Dispatch,
    private readonly opts: DispatchOptions,
    readonly handler: DispatchHandler,
    private readonly origin: Origin,
  ) {
    // Host stays the one the caller named (nginx's `$proxy_host`: the upstream's name)
    // unless the caller set one.
    const pairs = headerPairs(opts.headers);
    if (!hasHeader(pairs, 'host')) pairs.push('host', origin.host);
    this.request = { ...opts, headers: pairs };
    const idempotent = opts.idempotent ?? IDEMPOTENT.has(opts.method);
    this.retryable = replayable(opts.body) && (idempotent || route.next.has('non_idempotent'));
    this.key = route.options.key?.(opts);
  }

  get method(): string {
    return this.opts.method;
  }
  get path(): string {
    return this.opts.path;
  }

  /** What undici would write for the request, when no connection told (wire-bytes.ts). */
  requestEstimate(): number {
    if (this.estimate < 0)
      this.estimate = requestBytesEstimate(this.opts.method, this.opts.path, this.origin.host, this.request.headers as string[], this.opts.body);
    return this.estimate;
  }

  /** The next attempt: a peer from the balancer, or the end of the request. */
  start(): void {
    let balancer: Balancer;
    let chosen: Chosen | 'busy' | 'unavailable';
    if (this.next) {
      ({ balancer, chosen } = this.next);
      this.next = undefined;
      if (this.controller.aborted) {
        balancer.release(chosen, false);
        return this.fail(this.controller.reason!);
      }
    } else {
      if (this.controller.aborted) return this.fail(this.controller.reason!);
      try {
        balancer = this.route.current();
        chosen = balancer.pick(this.key, this.tried);
      } catch (err) {
        return this.fail(err as Error);
      }
    }
    if (typeof chosen === 'string') return this.fail(this.lastError ?? new NoLivePeerError(this.route.name, chosen));
    this.tries++;
    const attempt = (this.attempt = new Attempt(this, balancer, chosen));
    try {
      this.dispatch({ ...this.request, origin: `${this.origin.protocol}//${chosen.address}` }, attempt);
    } catch (err) {
      attempt.onResponseError(undefined, err as Error);
    }
  }

  /** Whether a failed attempt may be followed by another. */
  canRetry(): boolean {
    return this.retryable && !this.responded && !this.controller.aborted && (this.route.tries === 0 || this.tries < this.route.tries);
  }

  /** A listed answer of `chosen`: another peer now, if one can be had (kept for start()). */
  pickInstead(balancer: Balancer, chosen: Chosen): boolean {
    if (!this.canRetry()) return false;
    (this.tried ??= new Set()).add(chosen.id);
    const other = balancer.pick(this.key, this.tried);
    if (typeof other === 'string') return false;
    this.next = { balancer, chosen: other };
    return true;
  }

  /** The attempt on `chosen` failed before the caller had a response: another, or not. */
  failed(chosen: Chosen, err: Error, failure: 'error' | 'timeout' | 'status' | undefined): void {
    if (this.next) return this.start();
    if (failure !== undefined && failure !== 'status' && this.route.next.has(failure) && this.canRetry()) {
      this.lastError = err;
      (this.tried ??= new Set()).add(chosen.id);
      return this.start();
    }
    this.fail(this.controller.aborted ? this.controller.reason! : err);
  }

  fail(err: Error): void {
    this.handler.onResponseError?.(this.controller, err);
  }
}

/** One attempt of a request, on one peer: what undici tells of it, recorded, and passed
 * on to the caller's handler. */
class Attempt implements DispatchHandler {
  controller: DispatchController | undefined = undefined;
  done = false;
  private readonly begun = performance.now();
  private status = 0;
  private headerMs = 0;
  private readonly meter: WireMeter;

  constructor(
    private readonly exchange: Exchange,
    private readonly balancer: Balancer,
    private readonly chosen: Chosen,
  ) {
    this.meter = new WireMeter(exchange.method, exchange.path, () => exchange.requestEstimate());
  }

  onRequestStart(controller: DispatchController, context: unknown): void {
    this.controller = controller;
    const x = this.exchange;
    if (x.controller.aborted) return controller.abort(x.controller.reason!);
    if (!x.started) {
      x.started = true;
      x.handler.onRequestStart?.(x.controller, context);
      if (this.done || controller.aborted) return;
    }
    if (x.controller.paused) controller.pause();
    // Last: the head undici writes next, in this same call, is this attempt's.
    this.meter.started();
  }

  onRequestUpgrade(controller: DispatchController, statusCode: number, headers: IncomingHttpHeaders, socket: Duplex): void {
    // The connection leaves HTTP (CONNECT, an upgrade): the peer's part ends here.
    this.status = statusCode;
    this.headerMs = performance.now() - this.begun;
    this.exchange.responded = true;
    this.meter.responseHead(undefined, controller.rawHeaders, headers);
    this.finish(false);
    this.exchange.handler.onRequestUpgrade?.(this.exchange.controller, statusCode, headers, socket);
  }

  onResponseStart(controller: DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    const x = this.exchange;
    // An informational answer (undici passes on those it does not handle) is not the one.
    if (statusCode >= 200) {
      this.status = statusCode;
      this.headerMs = performance.now() - this.begun;
      this.meter.responseHead(statusMessage, controller.rawHeaders, headers);
      if (x.route.retriesStatus(statusCode) && x.pickInstead(this.balancer, this.chosen)) return controller.abort(new RetryStatus(`${statusCode}`));
      x.responded = true;
    }
    x.handler.onResponseStart?.(x.controller, statusCode, headers, statusMessage);
  }

  onResponseData(_controller: DispatchController, chunk: Buffer): void {
    this.meter.data(chunk.length);
    this.exchange.handler.onResponseData?.(this.exchange.controller, chunk);
  }

  onResponseEnd(_controller: DispatchController, trailers: IncomingHttpHeaders): void {
    if (this.done) return;
    // A listed answer no other peer could take counts as the peer's failure (nginx).
    this.finish(this.exchange.route.retriesStatus(this.status));
    this.exchange.handler.onResponseEnd?.(this.exchange.controller, trailers);
  }

  /** The response is over: recorded, and the peer released. */
  private finish(failed: boolean): void {
    this.done = true;
    this.chosen.metrics.responded(this.status, this.meter.received(), this.meter.sent(), this.headerMs, performance.now() - this.begun);
    this.meter.ended();
    this.balancer.release(this.chosen, failed);
  }

  onResponseError(_controller: DispatchController | undefined, err: Error): void {
    if (this.done) return;
    this.done = true;
    this.meter.ended();
    const x = this.exchange;
    // The caller going away is not the peer's failure; a dropped listed answer is.
    const failure = err instanceof RetryStatus ? 'status' : x.controller.aborted ? undefined : failureOf(err);
    this.balancer.release(this.chosen, failure !== undefined);
    if (x.responded) return void x.handler.onResponseError?.(x.controller, err);
    x.failed(this.chosen, err, failure);
  }
}

/**
 * An interceptor that balances the requests for HTTP upstream `name` of the status's
 * catalog over its live peers (see the header of this file):
 * `new Agent().compose(balanceTo(status, 'backend'))`, then
 * `fetch('http://backend/path', { dispatcher })`. Requests for other origins pass through.
 * Throws at once when the catalog has no such upstream.
 */
export function balanceTo(status: Status, name: string, options: BalanceOptions = {}): Interceptor {
  const route = new Route(status, name, options);
  const all = options.match === 'all';
  return (dispatch) =>
    function balanced(opts: DispatchOptions, handler: DispatchHandler): boolean {
      const origin = originOf(opts.origin);
      if (!origin || (!all && origin.hostname !== name)) return dispatch(opts, handler);
      let exchange: Exchange;
      try {
        exchange = new Exchange(route, dispatch, opts, handler, origin);
      } catch (err) {
        // The caller's key function threw: the request ends as undici ends a refused one.
        handler.onResponseError?.(undefined as never, err as Error);
        return true;
      }
      exchange.start();
      return true;
    };
}

let undici: typeof import('undici') | undefined;

/**
 * An undici dispatcher for HTTP upstream `name`: every request given to it goes to a peer
 * of the upstream (balanceTo on an undici Agent, which keeps the connections to each peer).
 * `fetch('http://backend/path', { dispatcher })`. Needs the `undici` package (7 or later).
 */
export function upstreamDispatcher(status: Status, name: string, options: UpstreamDispatcherOptions = {}): Dispatcher {
  undici ??= createRequire(import.meta.url)('undici') as typeof import('undici');
  const { agent, ...balance } = options;
  return new undici.Agent(agent).compose(balanceTo(status, name, { match: 'all', ...balance }));
}

// ---- recordTo -----------------------------------------------------------------------------

/** The recorders of an upstream's live peers by name, made again when the set changes
 * (one atomic load per request tells) or a reload changes the upstream. */
class PeerIndex {
  private catalogGeneration = -1;
  private entry: UpstreamConfig | undefined;
  private record: SeqRecord | undefined;
  private generation = -1;
  private byName = new Map<string, Peer>();
  private byId = new Map<number, Peer>();

  constructor(
    private readonly status: Status,
    private readonly name: string,
  ) {
    this.refresh();
  }

  /** The recorder of peer `name`; undefined for no peer of the upstream, or when a
   * reload took the upstream away (the request then passes unrecorded). */
  get(name: string): Peer | undefined {
    try {
      this.refresh();
    } catch {
      return undefined;
    }
    return this.byName.get(name);
  }

  private refresh(): void {
    const status = this.status;
    const catalogGeneration = status.generation;
    if (catalogGeneration !== this.catalogGeneration) {
      const u = httpUpstream(status, this.name);
      if (u !== this.entry) {
        this.record = peerSetRecord(status, u);
        this.entry = u;
        this.generation = -1;
        this.byId = new Map();
      }
      this.catalogGeneration = catalogGeneration;
    }
    const generation = this.record!.generation;
    if (generation === this.generation) return;
    this.generation = generation;
    const u = this.entry!;
    const byName = new Map<string, Peer>();
    const byId = new Map<number, Peer>();
    for (const p of peerSet(status, u).peers) {
      const metrics = this.byId.get(p.id) ?? peerHandles(status, u, p.id, 'http').metrics;
      byId.set(p.id, metrics);
      byName.set(peerName(p), metrics);
    }
    this.byName = byName;
    this.byId = byId;
  }
}

/** One request recorded by recordTo: its handler's calls passed on as they come. */
class Recording implements DispatchHandler {
  private readonly begun = performance.now();
  private status = 0;
  private headerMs = 0;
  private done = false;
  private readonly meter: WireMeter;

  constructor(
    private readonly peer: Peer,
    opts: DispatchOptions,
    host: string,
    private readonly handler: DispatchHandler,
  ) {
    peer.selected(Date.now());
    let estimate = -1;
    this.meter = new WireMeter(opts.method, opts.path, () =>
      estimate < 0 ? (estimate = requestBytesEstimate(opts.method, opts.path, host, headerPairs(opts.headers), opts.body)) : estimate,
    );
  }

  onRequestStart(controller: DispatchController, context: unknown): void {
    this.handler.onRequestStart?.(controller, context);
    if (!this.done && !controller.aborted) this.meter.started();
  }

  onRequestUpgrade(controller: DispatchController, statusCode: number, headers: IncomingHttpHeaders, socket: Duplex): void {
    this.status = statusCode;
    this.headerMs = performance.now() - this.begun;
    this.meter.responseHead(undefined, controller.rawHeaders, headers);
    this.finish();
    this.handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
  }

  onResponseStart(controller: DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    if (statusCode >= 200) {
      this.status = statusCode;
      this.headerMs = performance.now() - this.begun;
      this.meter.responseHead(statusMessage, controller.rawHeaders, headers);
    }
    this.handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: DispatchController, chunk: Buffer): void {
    this.meter.data(chunk.length);
    this.handler.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: DispatchController, trailers: IncomingHttpHeaders): void {
    if (!this.done) this.finish();
    this.handler.onResponseEnd?.(controller, trailers);
  }

  private finish(): void {
    this.done = true;
    this.peer.responded(this.status, this.meter.received(), this.meter.sent(), this.headerMs, performance.now() - this.begun);
    this.meter.ended();
    this.peer.released();
  }

  onResponseError(controller: DispatchController | undefined, err: Error): void {
    if (!this.done) {
      this.done = true;
      this.meter.ended();
      if (!controller?.aborted && failureOf(err) !== undefined) this.peer.failed();
      this.peer.released();
    }
    this.handler.onResponseError?.(controller as DispatchController, err);
  }
}

/**
 * Recording only, on any undici dispatcher (`agent.compose(recordTo(status, 'backend'))`):
 * each request sent to a peer of HTTP upstream `upstream` (its origin's `host:port` is the
 * peer's name, `127.0.0.1:8081`) counts in that peer's `selected`, `responses`, `data`,
 * `header_time`, `response_time` and `fails`. With `peer`, every request through it counts
 * in that peer, wherever it goes. A request for no peer of the upstream passes unrecorded.
 * Nothing is balanced, so no peer becomes `unavailable` and `max_conns` is not applied:
 * that is balanceTo's. Throws at once when the catalog has no such upstream.
 */
export function recordTo(status: Status, upstream: string, peer?: string): Interceptor {
  const index = new PeerIndex(status, upstream);
  return (dispatch) =>
    function recorded(opts: DispatchOptions, handler: DispatchHandler): boolean {
      const origin = originOf(opts.origin);
      const metrics = index.get(peer ?? origin?.address ?? '');
      if (!metrics) return dispatch(opts, handler);
      return dispatch(opts, new Recording(metrics, opts, origin?.host ?? '', handler));
    };
}
