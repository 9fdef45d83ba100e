// `queue N timeout=T`: requests wait here when every peer is at max_conns. N counts the
// waiting requests of all workers together (a shared cell); each worker keeps its own in
// order and lets the first through when a peer frees up: at once when the peer was freed
// here, within a few milliseconds when another worker freed it (a poll while any wait).
import type { AtomicCells } from '../../engine/index.js';
import type { Upstream } from '../../metrics/upstreams.js';

/** Polling interval for peers freed by other workers. */
const POLL_MS = 5;

export interface Waiter {
  /** Tries to start the request on a peer: true when it did (it leaves the queue). */
  tryStart(): boolean;
  /** The queue timeout passed. */
  timedOut(): void;
}

interface Entry {
  readonly waiter: Waiter;
  readonly deadline: number;
}

export class UpstreamQueue {
  private readonly entries: Entry[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly size: number,
    private readonly timeout: number,
    /** Cell 0: requests waiting in all workers. */
    private readonly shared: AtomicCells,
    private readonly recorder: Upstream,
  ) {}

  /** Puts a request in the queue; false when it is full (an overflow, counted). The
   * returned function takes it out again when its client goes away (counted dropped). */
  enter(waiter: Waiter): (() => void) | false {
    if (!this.shared.acquire(0, this.size)) {
      this.recorder.queueOverflowed();
      return false;
    }
    const entry: Entry = { waiter, deadline: Date.now() + this.timeout };
    this.entries.push(entry);
    this.recorder.queued();
    this.timer ??= setInterval(() => this.poll(), POLL_MS).unref();
    return () => {
      if (this.remove(entry)) this.recorder.queueDropped();
    };
  }

  /** A peer may be free: let waiting requests through, first come first. */
  wake(): void {
    while (this.entries.length > 0) {
      const first = this.entries[0];
      if (!first.waiter.tryStart()) return;
      this.remove(first);
      this.recorder.dequeued();
    }
  }

  private poll(): void {
    const now = Date.now();
    for (let i = 0; i < this.entries.length; ) {
      const e = this.entries[i];
      if (e.deadline <= now) {
        this.remove(e);
        this.recorder.queueTimedOut();
        e.waiter.timedOut();
      } else i++;
    }
    this.wake();
  }

  private remove(entry: Entry): boolean {
    const i = this.entries.indexOf(entry);
    if (i < 0) return false;
    this.entries.splice(i, 1);
    this.shared.release(0);
    if (this.entries.length === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
    return true;
  }
}
