// An upstream in a worker: its balancer (shared state across workers), its queue, and
// the worker's connections to each of its peers.
import type { IncomingMessage } from 'node:http';
import type { UpstreamConfig } from '../../metrics/catalog.js';
import { queueCells, upstream as upstreamRecorder, type Upstream } from '../../metrics/upstreams.js';
import type { Status } from '../../metrics/status.js';
import type { UpstreamBlockConfig } from '../config/model.js';
import { Balancer, type Chosen, type NoPeer, type StickyHint } from '../upstream/balancer.js';
import { saltedSid, stickyCookie } from '../upstream/sticky.js';
import { PeerPool, type PeerPoolOptions } from './peer-pool.js';
import type { TlsProfile } from '../ssl/proxy.js';
import { UpstreamQueue } from './upstream-queue.js';
import { compileValue } from '../config/variables.js';
import { clientAddress } from './variables.js';

/** A peer a request was given: the balancer's choice, or the one address a `proxy_pass`
 * with variables named (no upstream's peer: no metrics). */
export interface PeerChoice {
  readonly id: number;
  readonly host: string;
  readonly port: number;
  /** The canonical `ip:port` name. */
  readonly address: string;
  /** Its server id, for an upstream's peer (sticky). */
  readonly sid?: string;
  readonly metrics?: { responded(status: number, received: number, sent: number, headerMs: number, responseMs: number): void };
}

/** What the proxy asks of where a request goes. */
export interface ProxyUpstream {
  /** `$proxy_host`: what `Host` is by default. */
  readonly proxyHost: string;
  readonly queue?: UpstreamQueue;
  readonly config: { readonly keepalive: number };
  /** How many peers a request may try. */
  readonly peerCount: number;
  pick(req: IncomingMessage, uri: string, tried?: ReadonlySet<number>): PeerChoice | NoPeer;
  release(chosen: PeerChoice, failed: boolean): void;
  /** `sticky cookie`: the Set-Cookie that binds the client to the peer that answered. */
  stickyCookie?(chosen: PeerChoice, req: IncomingMessage, uri: string): string | undefined;
  pool(chosen: PeerChoice, connectTimeout: number, tls?: TlsProfile): PeerPool;
}

/** The worker's connections to a peer, by address, connect timeout and TLS settings
 * (locations may set their own: a connection made for one is not handed to another). */
function pooled(pools: Map<string, PeerPool>, chosen: PeerChoice, connectTimeout: number, tls: TlsProfile | undefined, options: Omit<PeerPoolOptions, 'connectTimeout' | 'tls'>): PeerPool {
  const key = tls ? `${chosen.address} ${connectTimeout} ${tls.key}` : `${chosen.address} ${connectTimeout}`;
  let p = pools.get(key);
  if (!p) {
    // Each peer keeps its own last session.
    p = new PeerPool(chosen.address, chosen.host, chosen.port, { ...options, connectTimeout, ...(tls ? { tls: { options: tls.options, reuse: tls.reuse } } : {}) });
    pools.set(key, p);
  }
  return p;
}

/** The addresses a `proxy_pass` with variables named when it is no upstream's (one, or
 * those its resolver found for a name): each tried once per request, in turn across
 * requests, their connections not kept (nginx's upstream made for the request). */
export class AddressUpstream implements ProxyUpstream {
  readonly config = { keepalive: 0 };
  readonly peerCount: number;
  private readonly peers: readonly PeerChoice[];
  private next = 0;
  private readonly pools = new Map<string, PeerPool>();

  constructor(
    readonly proxyHost: string,
    peers: ReadonlyArray<Omit<PeerChoice, 'id'>>,
  ) {
    this.peers = peers.map((p, id) => ({ id, ...p }));
    this.peerCount = this.peers.length;
  }

  pick(_req?: IncomingMessage, _uri?: string, tried?: ReadonlySet<number>): PeerChoice | NoPeer {
    const n = this.peers.length;
    for (let i = 0; i < n; i++) {
      const p = this.peers[(this.next + i) % n];
      if (tried?.has(p.id)) continue;
      this.next = (this.next + i + 1) % n;
      return p;
    }
    return 'unavailable';
  }

  /** Whether it is made of exactly these addresses, in this order. */
  holds(addresses: readonly string[]): boolean {
    return addresses.length === this.peers.length && addresses.every((a, i) => this.peers[i].host === a);
  }

  release(): void {}

  pool(chosen: PeerChoice, connectTimeout: number, tls?: TlsProfile): PeerPool {
    return pooled(this.pools, chosen, connectTimeout, tls, { keepalive: 0, idleChanged: () => {} });
  }

  close(): void {
    for (const p of this.pools.values()) p.close();
  }
}

export class UpstreamRuntime implements ProxyUpstream {
  readonly queue?: UpstreamQueue;
  /** `$proxy_host`: what `Host` is by default. */
  readonly proxyHost: string;
  private readonly balancer: Balancer;
  private readonly recorder: Upstream;
  private readonly pools = new Map<string, PeerPool>();
  private readonly key?: (req: IncomingMessage, uri: string) => string;
  /** `sticky`: the server id a request names, and what salts ids (sticky_secret). */
  private readonly stickyHint?: (req: IncomingMessage, uri: string) => StickyHint;
  private readonly cookieAttributes?: Array<(c: { req: IncomingMessage; uri: string; proxyHost: string }) => string>;
  private readonly salt?: (c: { req: IncomingMessage; uri: string; proxyHost: string }) => string;

  constructor(
    status: Status,
    readonly config: UpstreamBlockConfig,
    catalog: UpstreamConfig,
  ) {
    // nginx's $proxy_host of a Unix-domain socket is `localhost`.
    this.proxyHost = config.implicit && config.name.startsWith('unix:') ? 'localhost' : config.name;
    this.balancer = new Balancer(status, catalog, config.method, { stickyStrict: !!config.sticky?.strict });
    this.recorder = upstreamRecorder(status, 'http', config.name);
    const method = config.method;
    const sticky = config.sticky;
    if (sticky) {
      // Angie reads the cookie as $cookie_<name>; a route, as its first non-empty value.
      const ids = (sticky.mode === 'cookie' ? [`\${cookie_${sticky.cookie}}`] : (sticky.variables ?? [])).map(compileValue);
      const salt = sticky.secret === undefined ? () => '' : compileValue(sticky.secret);
      this.salt = salt;
      this.stickyHint = (req, uri) => {
        const c = { req, uri, proxyHost: this.proxyHost };
        let id = '';
        for (let i = 0; i < ids.length && id === ''; i++) id = ids[i](c);
        return { id, salt: id === '' ? '' : salt(c) };
      };
      if (sticky.mode === 'cookie') this.cookieAttributes = (sticky.attributes ?? []).map(compileValue);
    }
    if (method.kind === 'hash') {
      const value = compileValue(method.key);
      this.key = (req, uri) => value({ req, uri, proxyHost: this.proxyHost });
    } else if (method.kind === 'ip_hash') this.key = clientAddress;
    if (config.queue) {
      this.queue = new UpstreamQueue(config.queue.size, config.queue.timeout, queueCells(status, catalog), this.recorder);
      this.balancer.onRelease(() => this.queue!.wake());
    }
  }

  pick(req: IncomingMessage, uri: string, tried?: ReadonlySet<number>): Chosen | NoPeer {
    return this.balancer.pick(this.key?.(req, uri), tried, this.stickyHint?.(req, uri));
  }

  stickyCookie(chosen: PeerChoice, req: IncomingMessage, uri: string): string | undefined {
    const attributes = this.cookieAttributes;
    if (!attributes || chosen.sid === undefined) return undefined;
    const c = { req, uri, proxyHost: this.proxyHost };
    const salt = this.salt!(c);
    // The id as the request will name it: salted when sticky_secret is set.
    const id = salt === '' ? chosen.sid : saltedSid(chosen.sid, salt);
    return stickyCookie(this.config.sticky!, id, attributes.map((a) => a(c)), Date.now());
  }

  /** The peers of the live set, backups too: how many a request may try (nginx's tries). */
  get peerCount(): number {
    return this.balancer.peers.length;
  }

  release(chosen: Chosen, failed: boolean): void {
    this.balancer.release(chosen, failed);
  }

  /** The worker's connections to a peer, by address (a peer removed and added again
   * finds its connections), connect timeout and TLS settings (locations may set their
   * own: a connection made for one is not handed to another). */
  pool(chosen: Chosen, connectTimeout: number, tls?: TlsProfile): PeerPool {
    return pooled(this.pools, chosen, connectTimeout, tls, {
      keepalive: this.config.keepalive,
      ...(this.config.reuse ? { reuse: this.config.reuse } : {}),
      idleChanged: (delta) => (delta > 0 ? this.recorder.keepaliveCached() : this.recorder.keepaliveUsed()),
    });
  }

  close(): void {
    for (const p of this.pools.values()) p.close();
  }
}
