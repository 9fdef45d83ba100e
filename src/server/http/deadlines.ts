// Timeouts of one length (a location's proxy_read_timeout) on one timer. A node timer per
// request cost the worker a Timeout object, and list moves in node's timer lists at each
// refresh (every read of a response). Here every waiting entry is in one list ordered by
// deadline (appending keeps the order: all have the same length and the clock only moves
// forward), and one timer is set for the first deadline: starting, pushing back and
// stopping a timeout are a few pointer moves. The timer is not moved when entries leave:
// when it fires early it is set again for the first deadline still waiting.

/** What waits for a deadline: the links are the list's own. */
export interface Expiring {
  /** The deadline passed (the entry has left the list). */
  expired(): void;
  deadline: number;
  prevExpiring: Expiring | undefined;
  nextExpiring: Expiring | undefined;
}

export class Deadlines {
  private first: Expiring | undefined;
  private last: Expiring | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly fire = () => this.expire();

  /** `ms`: the timeout, in milliseconds. */
  constructor(readonly ms: number) {}

  /** (Re)starts `e`'s timeout: it expires `ms` after `now` (performance.now()) unless
   * started again or stopped before. */
  start(e: Expiring, now: number): void {
    e.deadline = now + this.ms;
    // Already the last: its place stays right.
    if (e === this.last) return;
    if (this.has(e)) this.unlink(e);
    e.prevExpiring = this.last;
    e.nextExpiring = undefined;
    if (this.last) this.last.nextExpiring = e;
    else this.first = e;
    this.last = e;
    this.timer ??= setTimeout(this.fire, this.ms).unref();
  }

  /** Stops `e`'s timeout, if it runs. */
  stop(e: Expiring): void {
    if (this.has(e)) this.unlink(e);
  }

  private has(e: Expiring): boolean {
    return e.prevExpiring !== undefined || e === this.first;
  }

  private unlink(e: Expiring): void {
    const prev = e.prevExpiring;
    const next = e.nextExpiring;
    if (prev) prev.nextExpiring = next;
    else this.first = next;
    if (next) next.prevExpiring = prev;
    else this.last = prev;
    e.prevExpiring = undefined;
    e.nextExpiring = undefined;
  }

  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    for (let e = this.first; e !== undefined && e.deadline <= now; e = this.first) {
      this.unlink(e);
      e.expired();
    }
    // Node's timers run on the loop's clock, in whole milliseconds: a fraction early is
    // possible, and is waited out.
    if (this.first) this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(this.first.deadline - now))).unref();
  }
}
