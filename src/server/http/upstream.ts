// An upstream in a worker: its balancer (shared state across workers), its queue, and
// the worker's connections to each of its peers.
import type { IncomingMessage } from 'node:http';
import type { UpstreamConfig } from '../../metrics/catalog.js';
import { queueCells, upstream as upstreamRecorder, type Upstream } from '../../metrics/upstreams.js';
import type { Status } from '../../metrics/status.js';
import type { UpstreamBlockConfig } from '../config/model.js';
import { Balancer, type Chosen, type NoPeer } from '../upstream/balancer.js';
import { PeerPool } from './peer-pool.js';
import type { TlsProfile } from './proxy-ssl.js';
import { UpstreamQueue } from './upstream-queue.js';
import { compileValue } from '../config/variables.js';

export class UpstreamRuntime {
  readonly queue?: UpstreamQueue;
  /** `$proxy_host`: what `Host` is by default. */
  readonly proxyHost: string;
  private readonly balancer: Balancer;
  private readonly recorder: Upstream;
  private readonly pools = new Map<string, PeerPool>();
  private readonly key?: (req: IncomingMessage, uri: string) => string;

  constructor(
    status: Status,
    readonly config: UpstreamBlockConfig,
    catalog: UpstreamConfig,
  ) {
    this.proxyHost = config.name;
    this.balancer = new Balancer(status, catalog, config.method);
    this.recorder = upstreamRecorder(status, 'http', config.name);
    const method = config.method;
    if (method.kind === 'hash') {
      const value = compileValue(method.key);
      this.key = (req, uri) => value({ req, uri, proxyHost: this.proxyHost });
    } else if (method.kind === 'ip_hash') this.key = (req) => req.socket.remoteAddress ?? '';
    if (config.queue) {
      this.queue = new UpstreamQueue(config.queue.size, config.queue.timeout, queueCells(status, catalog), this.recorder);
      this.balancer.onRelease(() => this.queue!.wake());
    }
  }

  pick(req: IncomingMessage, uri: string, tried?: ReadonlySet<number>): Chosen | NoPeer {
    return this.balancer.pick(this.key?.(req, uri), tried);
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
    const key = tls ? `${chosen.address} ${connectTimeout} ${tls.key}` : `${chosen.address} ${connectTimeout}`;
    let p = this.pools.get(key);
    if (!p) {
      p = new PeerPool(chosen.address, chosen.host, chosen.port, {
        keepalive: this.config.keepalive,
        connectTimeout,
        idleChanged: (delta) => (delta > 0 ? this.recorder.keepaliveCached() : this.recorder.keepaliveUsed()),
        // Each peer keeps its own last session.
        ...(tls ? { tls: { options: tls.options, reuse: tls.reuse } } : {}),
      });
      this.pools.set(key, p);
    }
    return p;
  }

  close(): void {
    for (const p of this.pools.values()) p.close();
  }
}
