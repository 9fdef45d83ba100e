// Shared atomic cells: state that all workers must agree on at the same instant, such as
// a peer's live connections checked against max_conns. Unlike counters they are not
// sharded: every change is one atomic operation on the one shared value.
import type { ZoneViews } from './views.js';

export class AtomicCells {
  readonly length: number;
  readonly offset: number;
  private readonly i32: Int32Array;
  private readonly base: number;

  constructor(views: ZoneViews, offset: number, length: number) {
    this.i32 = views.i32;
    this.offset = offset;
    this.length = length;
    this.base = offset / 4;
  }

  load(i: number): number {
    return Atomics.load(this.i32, this.base + i);
  }

  /** Reads cell i without ordering, for its cache line only (CounterBlock.touch). */
  touch(i: number): number {
    return this.i32[this.base + i];
  }

  store(i: number, value: number): void {
    Atomics.store(this.i32, this.base + i, value);
  }

  /** Adds n and returns the value before. */
  add(i: number, n = 1): number {
    return Atomics.add(this.i32, this.base + i, n);
  }

  /** Subtracts n and returns the value before. */
  sub(i: number, n = 1): number {
    return Atomics.sub(this.i32, this.base + i, n);
  }

  /** Sets the cell to `replacement` if it holds `expected`; returns what it held. */
  compareExchange(i: number, expected: number, replacement: number): number {
    return Atomics.compareExchange(this.i32, this.base + i, expected, replacement);
  }

  /** Increments cell i unless it already holds `limit` or more (0: no limit); true if it
   * did. The check and the increment are one step for all processes, so N workers can
   * never together go past the limit. */
  acquire(i: number, limit: number): boolean {
    const k = this.base + i;
    if (limit <= 0) {
      Atomics.add(this.i32, k, 1);
      return true;
    }
    for (let cur = Atomics.load(this.i32, k); cur < limit; ) {
      const seen = Atomics.compareExchange(this.i32, k, cur, cur + 1);
      if (seen === cur) return true;
      cur = seen;
    }
    return false;
  }

  /** Undoes one acquire(). */
  release(i: number): void {
    Atomics.sub(this.i32, this.base + i, 1);
  }
}
