// A worker's connections to one peer, as nginx's `keepalive N` keeps them: a connection
// whose response ended cleanly goes back to the cache of idle ones while it holds fewer
// than N, has carried fewer than keepalive_requests and is younger than keepalive_time,
// and is closed otherwise: the cache's size is exactly the `keepalive` the status shows.
// An idle connection closes after keepalive_timeout or the peer's shorter Keep-Alive
// hint: the pool
// checks a connection's idle time when it takes one, and one timer closes those left
// unused (no timer per request, as a socket timeout set and cleared around each
// response was).
import type { KeepaliveReuse } from '../config/model.js';
import { UpstreamConnection, type PeerTls } from './upstream-connection.js';

/** nginx's keepalive_requests and keepalive_time defaults. */
const REQUESTS = 1000;
const TIME_MS = 3_600_000;

export interface PeerPoolOptions {
  /** Idle connections kept; 0: every connection closes after its request. */
  readonly keepalive: number;
  /** Milliseconds (read timeouts are the request's: locations may differ). */
  readonly connectTimeout: number;
  /** How long a connection is reused (absent fields: nginx's defaults). */
  readonly reuse?: KeepaliveReuse;
  /** The number of idle cached connections changed by `delta`. */
  readonly idleChanged: (delta: number) => void;
  /** `proxy_pass https://`: TLS to the peer, its session kept for the next connection. */
  readonly tls?: PeerTls;
}

export class PeerPool {
  /** Idle connections, the last used last: taken from the end. */
  private readonly idle: UpstreamConnection[] = [];
  private closed = false;
  /** Closes the idle connections whose time is up, at `sweepAt` (performance.now()). */
  private sweeper: NodeJS.Timeout | undefined;
  private sweepAt = 0;
  private readonly sweep = () => this.closeExpired();
  /** The peer closed an idle connection: no longer cached. */
  private readonly forget = (conn: UpstreamConnection) => {
    const i = this.idle.indexOf(conn);
    if (i < 0) return;
    this.idle.splice(i, 1);
    this.options.idleChanged(-1);
  };

  constructor(
    /** The peer's `ip:port`. */
    readonly address: string,
    private readonly host: string,
    private readonly port: number,
    private readonly options: PeerPoolOptions,
  ) {}

  /** An idle connection, or a new one. `now`: performance.now(). */
  take(now: number): UpstreamConnection {
    for (let cached = this.idle.pop(); cached !== undefined; cached = this.idle.pop()) {
      if (cached.idleUntil <= now) this.discard(cached);
      else return this.leave(cached);
    }
    return new UpstreamConnection(this.host, this.port, this.options.connectTimeout, this.options.tls);
  }

  /** A request on `conn` ended; `reusable` when its response ended cleanly. `now`:
   * performance.now(). */
  give(conn: UpstreamConnection, reusable: boolean, now: number): void {
    const reuse = this.options.reuse;
    if (
      reusable &&
      conn.reusable &&
      !conn.closed &&
      !this.closed &&
      this.idle.length < this.options.keepalive &&
      conn.requests < (reuse?.requests ?? REQUESTS) &&
      now - conn.openedAt < (reuse?.time ?? TIME_MS)
    ) {
      conn.onIdleClose = this.forget;
      conn.idleUntil = now + (reuse?.timeout === undefined ? conn.idleMs : Math.min(conn.idleMs, reuse.timeout));
      this.idle.push(conn);
      this.options.idleChanged(1);
      if (this.sweeper === undefined || conn.idleUntil < this.sweepAt) this.sweepFrom(now, conn.idleUntil);
    } else conn.close();
  }

  /** Closes the idle connections (the peer left the configuration, or the worker stops). */
  close(): void {
    this.closed = true;
    clearTimeout(this.sweeper);
    for (const c of this.idle.splice(0)) this.discard(c);
  }

  private closeExpired(): void {
    this.sweeper = undefined;
    const now = performance.now();
    let next = Infinity;
    for (let i = 0; i < this.idle.length; ) {
      const c = this.idle[i];
      if (c.idleUntil <= now) {
        this.idle.splice(i, 1);
        this.discard(c);
      } else {
        next = Math.min(next, c.idleUntil);
        i++;
      }
    }
    if (next !== Infinity) this.sweepFrom(now, next);
  }

  private sweepFrom(now: number, at: number): void {
    clearTimeout(this.sweeper);
    this.sweepAt = at;
    // Node's timers run on the loop's clock, in whole milliseconds: a timer a fraction
    // early finds nothing to close and is set again.
    this.sweeper = setTimeout(this.sweep, Math.max(1, Math.ceil(at - now))).unref();
  }

  /** `c`, out of the cache. */
  private leave(c: UpstreamConnection): UpstreamConnection {
    this.options.idleChanged(-1);
    c.onIdleClose = undefined;
    return c;
  }

  private discard(c: UpstreamConnection): void {
    this.leave(c).close();
  }
}
