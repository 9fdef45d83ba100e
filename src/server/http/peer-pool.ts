// A worker's connections to one peer, as nginx's `keepalive N` keeps them: a connection
// whose response ended cleanly goes back to the cache of idle ones while it holds fewer
// than N, and is closed otherwise: the cache's size is exactly the `keepalive` the status
// shows. An idle connection closes itself after the peer's Keep-Alive hint or 60 s.
import { UpstreamConnection } from './upstream-connection.js';

export interface PeerPoolOptions {
  /** Idle connections kept; 0: every connection closes after its request. */
  readonly keepalive: number;
  /** Milliseconds (read timeouts are the request's: locations may differ). */
  readonly connectTimeout: number;
  /** The number of idle cached connections changed by `delta`. */
  readonly idleChanged: (delta: number) => void;
}

export class PeerPool {
  private readonly idle: UpstreamConnection[] = [];
  private closed = false;
  /** The peer closed an idle connection, or it outlived its idle time: no longer cached. */
  private readonly forget = (conn: UpstreamConnection) => {
    const i = this.idle.indexOf(conn);
    if (i < 0) return;
    this.idle.splice(i, 1);
    this.options.idleChanged(-1);
  };

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly options: PeerPoolOptions,
  ) {}

  /** An idle connection, or a new one. */
  take(): UpstreamConnection {
    const cached = this.idle.pop();
    if (cached) {
      this.options.idleChanged(-1);
      cached.onIdleClose = undefined;
      return cached;
    }
    return new UpstreamConnection(this.host, this.port, this.options.connectTimeout);
  }

  /** A request on `conn` ended; `reusable` when its response ended cleanly. */
  give(conn: UpstreamConnection, reusable: boolean): void {
    if (reusable && conn.reusable && !conn.closed && !this.closed && this.idle.length < this.options.keepalive) {
      conn.onIdleClose = this.forget;
      this.idle.push(conn);
      this.options.idleChanged(1);
    } else conn.close();
  }

  /** Closes the idle connections (the peer left the configuration, or the worker stops). */
  close(): void {
    this.closed = true;
    for (const c of this.idle.splice(0)) {
      this.options.idleChanged(-1);
      c.onIdleClose = undefined;
      c.close();
    }
  }
}
