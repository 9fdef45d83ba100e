// `events { worker_connections N; }` in a worker: the client connections it holds open,
// HTTP and stream together, and what happens past N. nginx takes no connection it has no
// room for (it closes it at once, with "worker_connections are not enough" in its log);
// zonal closes it at once too, and the plane counts it in `connections.dropped`.
// nginx's N counts its connections to upstream servers too; zonal's, clients' only.

/** How often at most the alert is written: a flood of refused connections is one line a second. */
const ALERT_EVERY_MS = 1000;

export class ConnectionBudget {
  private open = 0;
  private lastAlert = 0;

  constructor(readonly limit: number) {}

  /** Room for one more connection: taken, or false (then it is closed at once). */
  take(): boolean {
    if (this.open < this.limit) {
      this.open++;
      return true;
    }
    const now = Date.now();
    if (now - this.lastAlert >= ALERT_EVERY_MS) {
      this.lastAlert = now;
      process.stderr.write(`zonal: [alert] ${this.limit} worker_connections are not enough\n`);
    }
    return false;
  }

  /** A connection taken has closed. */
  give(): void {
    this.open--;
  }
}
