// A worker's connections to one peer, as nginx's `keepalive N` keeps them: a connection
// whose response ended cleanly goes back to the cache of idle ones while it holds fewer
// than N, and is closed otherwise. Each undici Client here is one connection
// (pipelining 1): the cache's size is exactly the `keepalive` the status shows.
import { Client } from 'undici';

export interface PeerPoolOptions {
  /** Idle connections kept; 0: every connection closes after its request. */
  readonly keepalive: number;
  /** Milliseconds (read timeouts are the request's: locations may differ). */
  readonly connectTimeout: number;
  /** The number of idle cached connections changed by `delta`. */
  readonly idleChanged: (delta: number) => void;
}

/** How long an idle cached connection stays (nginx's keepalive_timeout default). */
const IDLE_MS = 60_000;

export class PeerPool {
  private readonly idle: Client[] = [];
  private closed = false;

  constructor(
    private readonly origin: string,
    private readonly options: PeerPoolOptions,
  ) {}

  /** An idle connection, or a new one. */
  take(): Client {
    const cached = this.idle.pop();
    if (cached) {
      this.options.idleChanged(-1);
      return cached;
    }
    const client = new Client(this.origin, {
      connectTimeout: this.options.connectTimeout,
      keepAliveTimeout: IDLE_MS,
      keepAliveMaxTimeout: IDLE_MS,
      pipelining: 1,
    });
    // The peer closed an idle connection: it is no longer cached.
    client.on('disconnect', () => this.forget(client));
    return client;
  }

  /** A request on `client` ended; `reusable` when its response ended cleanly. */
  give(client: Client, reusable: boolean): void {
    if (reusable && !this.closed && this.idle.length < this.options.keepalive && !client.closed && !client.destroyed) {
      this.idle.push(client);
      this.options.idleChanged(1);
    } else void client.close().catch(() => {});
  }

  private forget(client: Client): void {
    const i = this.idle.indexOf(client);
    if (i < 0) return;
    this.idle.splice(i, 1);
    this.options.idleChanged(-1);
    void client.close().catch(() => {});
  }

  /** Closes the idle connections (the peer left the configuration, or the worker stops). */
  close(): void {
    this.closed = true;
    for (const c of this.idle.splice(0)) {
      this.options.idleChanged(-1);
      void c.close().catch(() => {});
    }
  }
}
