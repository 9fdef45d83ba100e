// Counter blocks: K unsigned 64-bit counters with one shard per worker slot. A worker
// writes only its own shard, with plain stores; a reader sums the shards.
//
// Why the low half: BigInt arithmetic costs about 10 ns per operation in Node 20, ten
// times the whole budget of a request record. A worker therefore adds to the low 32-bit
// word of its counter with a Number store, and only when that word would overflow (once
// per 2^32 of the counter) does it store all 64 bits in one atomic 8-byte write. A reader
// thus always sees a whole value: either the low word changed alone, or both at once.
import type { ZoneViews } from './views.js';

const LOW = 0x1_0000_0000;

/** The slot this process writes in a zone; claimed on first write. */
export interface ShardOwner {
  workerSlot(): number;
}

export class CounterBlock {
  /** Number of counters. */
  readonly length: number;
  /** Byte offset of the block in its zone (shard 0, counter 0). */
  readonly offset: number;
  protected readonly u32: Uint32Array;
  protected readonly u64: BigUint64Array;
  /** 64-bit words between the shards of two worker slots: a whole number of cache lines. */
  protected readonly stride: number;
  protected readonly shards: number;
  /** u32 index of this process's shard; NaN until the first write claims a slot. */
  protected low = Number.NaN;
  private readonly owner: ShardOwner;

  constructor(views: ZoneViews, owner: ShardOwner, offset: number, length: number, shards: number) {
    this.u32 = views.u32;
    this.u64 = views.u64;
    this.offset = offset;
    this.length = length;
    this.shards = shards;
    this.stride = strideOf(length) / 8;
    this.owner = owner;
  }

  /** Adds n (a whole number, default 1) to counter i in this process's shard. */
  add(i: number, n = 1): void {
    const j = this.low + 2 * i;
    const lo = this.u32[j] + n;
    // Before a slot is claimed j is NaN and lo is NaN: the comparison fails into wide().
    if (lo < LOW) this.u32[j] = lo;
    else this.wide(i, n);
  }

  /** Exact sum of counter i over all shards. */
  get(i: number): bigint {
    let sum = 0n;
    for (let s = 0, k = this.offset / 8 + i; s < this.shards; s++, k += this.stride) sum += this.u64[k];
    return BigInt.asUintN(64, sum);
  }

  /** Sum of counter i as a Number: exact up to 2^53, which JSON readers can hold. */
  value(i: number): number {
    let sum = 0;
    for (let s = 0, j = this.offset / 4 + 2 * i; s < this.shards; s++, j += 2 * this.stride) sum += this.word(j, false);
    return sum;
  }

  /** All K sums at once, into `out`. */
  values(out: Float64Array = new Float64Array(this.length)): Float64Array {
    out.fill(0, 0, this.length);
    for (let s = 0, j = this.offset / 4; s < this.shards; s++, j += 2 * this.stride)
      for (let i = 0; i < this.length; i++) out[i] += this.word(j + 2 * i, false);
    return out;
  }

  /** One shard's counter as a Number. The high word is read on both sides of the low
   * word: if it moved, a carry was stored in between and the pair is read again. */
  protected word(j: number, signed: boolean): number {
    const u32 = this.u32;
    let hi = u32[j + 1];
    let lo = u32[j];
    for (let again = u32[j + 1]; again !== hi; again = u32[j + 1]) {
      hi = again;
      lo = u32[j];
    }
    return (signed && hi >= 0x8000_0000 ? hi - LOW : hi) * LOW + lo;
  }

  /** The rare path: the first write of this process (which claims its slot), a carry or
   * borrow across the low word, or an n outside 0..2^32. One atomic 64-bit store. */
  protected wide(i: number, n: number): void {
    if (this.u32.length === 0) throw new Error('zone is detached');
    if (Number.isNaN(this.low)) this.low = (this.offset / 8 + this.owner.workerSlot() * this.stride) * 2;
    const k = this.low / 2 + i;
    Atomics.store(this.u64, k, BigInt.asUintN(64, this.u64[k] + BigInt(n)));
  }
}

/** Gauges go up and down; each shard may go below zero, and the sum is what counts. */
export class GaugeBlock extends CounterBlock {
  /** Subtracts n (a whole number, default 1) from gauge i in this process's shard. */
  sub(i: number, n = 1): void {
    const j = this.low + 2 * i;
    const lo = this.u32[j] - n;
    if (lo >= 0) this.u32[j] = lo;
    else this.wide(i, -n);
  }

  /** Exact signed value of gauge i. */
  override get(i: number): bigint {
    return BigInt.asIntN(64, super.get(i));
  }

  override value(i: number): number {
    let sum = 0;
    for (let s = 0, j = this.offset / 4 + 2 * i; s < this.shards; s++, j += 2 * this.stride) sum += this.word(j, true);
    return sum;
  }

  override values(out: Float64Array = new Float64Array(this.length)): Float64Array {
    for (let i = 0; i < this.length; i++) out[i] = this.value(i);
    return out;
  }
}

/** Bytes one shard of a K-counter block takes: whole 64-byte cache lines. */
export function strideOf(length: number): number {
  return Math.ceil((length * 8) / 64) * 64;
}
