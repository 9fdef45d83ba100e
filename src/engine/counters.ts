// Counter blocks: K 64-bit counters with one shard per worker slot. A worker writes only
// its own shard, with plain stores and no atomics; a reader sums the shards of the slots
// ever claimed for writing (the zone's bitmap, WrittenSlots): zones have slots to spare.
//
// A shard's counter is two words: `recent`, a float64 that the worker adds to, and
// `base`, an unsigned 64-bit word. Its value is base + recent.
// - Why a float64: BigInt arithmetic costs about 10 ns per operation in Node 20, ten times
//   a whole request record, and detecting a carry out of a 32-bit word costs four more
//   instructions per update than the add itself. `recent[i] += n` costs what a plain
//   Float64Array costs (bench/engine.ts measures both), and a float64 holds every integer
//   up to 2^53 exactly.
// - Why `base`: so that a counter never stops being exact. Once a second, each writing
//   process moves 2^52 at a time from `recent` to `base` (fold()), long before `recent`
//   could reach 2^53: that would take 2^52 increments in one second. The move happens
//   between two bumps of the shard's sequence word, which readers check, so a reader
//   never sees the 2^52 in both words or in neither.
// - Every field is set once, in the constructor: V8 then treats them as constants and
//   does not reload them around each update. (tsconfig's useDefineForClassFields: false
//   is part of this: with define semantics every field is written twice.)
import type { ZoneViews } from './views.js';

const FOLD = 2 ** 52;
// A shard, in 64-bit words: the sequence word (its upper half: the counter a move is
// about), the number of moves made so far (while 0, every base word is 0 and readers
// skip them), the K `recent` words, the K `base` words, and the journal of the last move
// (old base, old recent, amount added to base, amount taken from recent). The first two
// share a cache line with the first counters: a reader of many blocks waits on memory
// once less per shard.
const HEAD = 2;
const JOURNAL = 4;
// How long a reader waits for a fold in progress before it reads around it.
const SPINS = 10_000;

export class CounterBlock {
  /** Number of counters. */
  readonly length: number;
  /** Byte offset of the block in its zone (shard 0). */
  readonly offset: number;
  /** This process's shard, or -1 when the zone was opened with `writer: false`. */
  readonly slot: number;
  /** Where this process adds: its shard's `recent` words, or, in a process that does not
   * write, a private array, so that a stray add() cannot touch shared memory. */
  protected readonly recent: Float64Array;
  /** Float64 index of counter 0's `recent` word in this process's shard. */
  protected readonly low: number;
  protected readonly views: ZoneViews;
  // The zone's views, as fields of their own: reading thousands of blocks per render,
  // one load each instead of two.
  private readonly f64: Float64Array;
  private readonly u32: Uint32Array;
  private readonly i32: Int32Array;
  /** Whether base words are two's complement (gauges), fixed at construction. */
  private readonly signedBase: boolean;
  /** Words (8 bytes) from one shard to the next: a whole number of cache lines. */
  protected readonly stride: number;
  protected readonly shards: number;
  /** sums()'s array, made at its first call. */
  private scratch: Float64Array | undefined;

  /** The zone's slots ever claimed for writing: only their shards are read. */
  private readonly written: WrittenSlots;

  constructor(views: ZoneViews, offset: number, length: number, shards: number, slot: number, written: WrittenSlots) {
    this.scratch = undefined;
    this.written = written;
    this.views = views;
    this.f64 = views.f64;
    this.u32 = views.u32;
    this.i32 = views.i32;
    this.signedBase = this.signedBases;
    this.offset = offset;
    this.length = length;
    this.shards = shards;
    this.stride = strideOf(length) / 8;
    this.slot = slot;
    this.recent = slot >= 0 ? views.f64 : new Float64Array(length);
    this.low = slot >= 0 ? offset / 8 + slot * this.stride + HEAD : 0;
    if (slot >= 0) {
      this.finishInterruptedMove();
      foldLater(this);
    }
  }

  /** Adds n to counter i in this process's shard. n is a whole number below 2^52 (any
   * byte count or step a server makes); addLarge() takes any amount. */
  add(i: number, n = 1): void {
    this.recent[this.low + i] += n;
  }

  /** Adds an amount of any size, straight into the shard's base word. */
  addLarge(i: number, n: number | bigint): void {
    if (this.slot < 0) throw new Error('this process opened the zone with writer: false and has no shard to write');
    this.moveToBase(i, BigInt(n), 0);
  }

  /** Exact sum of counter i over all shards, modulo 2^64. */
  get(i: number): bigint {
    let sum = 0n;
    const list = this.written.shards();
    for (let j = 0; j < list.length; j++) {
      const [base, recent] = this.read(list[j], i);
      sum += base + BigInt(recent);
    }
    return BigInt.asUintN(64, sum);
  }

  /** Sum of counter i as a Number: exact up to 2^53, which JSON readers can hold. */
  value(i: number): number {
    let sum = 0;
    const list = this.written.shards();
    for (let j = 0; j < list.length; j++) {
      const [base, recent] = this.read(list[j], i);
      sum += Number(base) + recent;
    }
    return sum;
  }

  /** All K sums at once, into `out`. Each shard is read between two loads of its
   * sequence word; a move in between (rare) means reading again. */
  values(out: Float64Array = new Float64Array(this.length)): Float64Array {
    for (let attempt = 0; attempt < SPINS; attempt++) if (this.tryValues(out)) return out;
    return this.valuesAroundMove(out);
  }

  /**
   * All K sums, read now into this block's own array, which the next sums() of the block
   * overwrites: what renderers use, since they read a block once per answer and write it
   * out at once. A fresh Float64Array of more than 64 bytes lives outside V8's heap, and
   * allocating one cost more than reading and writing a whole zone.
   */
  sums(): Float64Array {
    return this.values((this.scratch ??= new Float64Array(this.length)));
  }

  /**
   * Reads a word of each cache line that values() reads, and returns them OR-ed (a value
   * of no meaning, there only so the reads are kept). A reader of thousands of blocks
   * touches them all first, in a loop short enough for the CPU to have many of their
   * lines on the way at once; values() then finds them in cache instead of waiting for
   * each block's memory in turn.
   */
  touch(): number {
    const u32 = this.u32;
    const words = HEAD + this.length;
    const list = this.written.shards();
    let seen = 0;
    for (let j = 0; j < list.length; j++) {
      const shard = this.offset / 8 + list[j] * this.stride;
      for (let i = 0; i < words; i += 8) seen |= u32[(shard + i) * 2];
    }
    return seen;
  }

  private tryValues(out: Float64Array): boolean {
    const { f64, u32, i32 } = this;
    const k = this.length;
    const signed = this.signedBase;
    const list = this.written.shards();
    for (let j = 0; j < list.length; j++) {
      const shard = this.offset / 8 + list[j] * this.stride;
      const seq = shard * 2;
      const first = shard + HEAD;
      const before = Atomics.load(i32, seq);
      if (before & 1) return false;
      if (f64[shard + 1] === 0) {
        // This shard never moved anything to its base words: they are all 0.
        if (j === 0) for (let i = 0; i < k; i++) out[i] = f64[first + i];
        else for (let i = 0; i < k; i++) out[i] += f64[first + i];
      } else {
        if (j === 0) out.fill(0, 0, k);
        for (let i = 0; i < k; i++) {
          // A base is a multiple of 2^52 or an addLarge() amount: hi * 2^32 + lo as a
          // Number (get() is exact past 2^53).
          const lo = u32[(first + k + i) * 2];
          const hi = u32[(first + k + i) * 2 + 1];
          out[i] += (signed && hi >= 0x8000_0000 ? hi - 0x1_0000_0000 : hi) * 0x1_0000_0000 + lo + f64[first + i];
        }
      }
      if (Atomics.load(i32, seq) !== before) return false;
    }
    if (list.length === 0) out.fill(0, 0, k);
    return true;
  }

  /** values() when a shard's move does not end: each counter read around it. */
  private valuesAroundMove(out: Float64Array): Float64Array {
    for (let i = 0; i < this.length; i++) out[i] = this.value(i);
    return out;
  }

  /** Sets counter i of this process's shard to v: for per-worker values that are not
   * sums, such as the time of the last event (read with max()) or a moving average. */
  set(i: number, v: number): void {
    this.recent[this.low + i] = v;
  }

  /**
   * Publishes `values`, half the block's length, as this process's sample: figures that belong together and are
   * set, not added to (a worker's runtime, metrics/runtime.ts, where heap used and heap
   * total from two different samples could show more used than there is). The block holds
   * two copies of a sample, each half its length: `values` go into the copy readers are
   * not reading, with plain stores, and one bump of the shard's sequence word makes it the
   * current one. So a reader (published()) never waits for a writer: one stopped or
   * killed half way through leaves the current copy as it was. For blocks written only
   * this way: values below 2^52 in magnitude, as set()'s.
   */
  publish(values: ArrayLike<number>): void {
    if (this.slot < 0) throw new Error('this process opened the zone with writer: false and has no shard to write');
    const half = this.length >> 1;
    if (values.length !== half) throw new RangeError(`${values.length} values for a block of ${this.length}, which holds two copies of ${half}`);
    const i32 = this.i32;
    const seq = this.seqIndex(this.slot);
    // Bumps of 2 keep the word even: odd is a move in progress to every other reader.
    const next = (((Atomics.load(i32, seq) >> 1) + 1) & 1) * half;
    const recent = this.recent;
    const low = this.low + next;
    for (let i = 0; i < values.length; i++) recent[low + i] = values[i];
    Atomics.add(i32, seq, 2);
  }

  /** Shard `slot`'s last sample that publish() wrote, whole, into `out` (half the
   * block's length); zeros where nothing was published. */
  published(slot: number, out: Float64Array = new Float64Array(this.length >> 1)): Float64Array {
    this.checkShard(slot);
    const { f64, i32 } = this;
    const half = this.length >> 1;
    const seq = this.seqIndex(slot);
    const first = this.offset / 8 + slot * this.stride + HEAD;
    // The current copy is not written to while the sequence word stays the same: a read
    // during which it moved (a writer publishing, seldom more than once a second) is made
    // again.
    for (let attempt = 0; attempt < SPINS; attempt++) {
      const before = Atomics.load(i32, seq);
      if (before & 1) continue;
      const at = first + ((before >> 1) & 1) * half;
      for (let i = 0; i < half; i++) out[i] = f64[at + i];
      if (Atomics.load(i32, seq) === before) break;
    }
    return out;
  }

  /** The slots whose shards readers read: those ever claimed for writing, lowest first. */
  writtenSlots(): Int32Array {
    return this.written.shards();
  }

  /** Counter i of this process's own shard, as set() left it (a worker's running average). */
  own(i: number): number {
    return this.recent[this.low + i];
  }

  /** The largest of counter i's shards (values written with set()). */
  max(i: number): number {
    const f64 = this.views.f64;
    let m = 0;
    const list = this.written.shards();
    for (let s = 0; s < list.length; s++) {
      const j = this.offset / 8 + list[s] * this.stride + HEAD + i;
      if (f64[j] > m) m = f64[j];
    }
    return m;
  }

  /** The mean of counter `value`'s shards weighted by counter `weight`'s (per-worker
   * averages and their sample counts); 0 when no shard has weight. */
  weightedMean(value: number, weight: number): number {
    const f64 = this.views.f64;
    let sum = 0;
    let n = 0;
    const list = this.written.shards();
    for (let s = 0; s < list.length; s++) {
      const j = this.offset / 8 + list[s] * this.stride + HEAD;
      sum += f64[j + value] * f64[j + weight];
      n += f64[j + weight];
    }
    return n ? sum / n : 0;
  }

  /** Shard `slot`'s own value of counter i (base + recent), as one consistent read. For
   * the primary, about a shard whose worker died: see setShard(). */
  shardValue(slot: number, i: number): number {
    this.checkShard(slot);
    const [base, recent] = this.read(slot, i);
    return Number(base) + recent;
  }

  /**
   * Sets shard `slot`'s counter i to v (a whole number): only for a shard no process
   * writes, such as a dead worker's, by the process that stands in for its owner (the
   * primary, before another worker takes the slot). A move its owner left half done is
   * finished first; the change is a move like fold()'s (journaled, between two bumps of
   * the shard's sequence word), so readers never see half of it.
   */
  setShard(slot: number, i: number, v: number): void {
    this.checkShard(slot);
    // Readers must see what is set here even in a slot no process ever claimed.
    this.written.mark(slot);
    this.finishInterruptedMove(slot);
    const [base, recent] = this.read(slot, i);
    this.moveInShard(slot, i, -base, recent - v);
  }

  private checkShard(slot: number): void {
    if (!Number.isInteger(slot) || slot < 0 || slot >= this.shards) throw new RangeError(`no shard ${slot}: the block has ${this.shards}`);
  }

  /** Moves whole 2^52s from this process's `recent` words into `base` (see top). False
   * once the zone is detached: there is nothing left to fold. */
  fold(): boolean {
    const f64 = this.views.f64;
    if (f64.length === 0) return false;
    for (let i = 0; i < this.length; i++) {
      const r = f64[this.low + i];
      if (r >= FOLD || r <= -FOLD) {
        const moved = Math.trunc(r / FOLD) * FOLD;
        this.moveToBase(i, BigInt(moved), moved);
      }
    }
    return true;
  }

  /** Adds `amount` to shard base i and takes `fromRecent` off its recent word, as one
   * step for readers: between two bumps of the shard's sequence word. The journal,
   * written first, lets a reader read around a move that does not finish, and lets the
   * next owner of the slot finish it, should this process die half way. */
  private moveToBase(i: number, amount: bigint, fromRecent: number): void {
    this.moveInShard(this.slot, i, amount, fromRecent);
  }

  /** moveToBase() in shard s: its owner's, or a dead owner's (setShard()). */
  private moveInShard(s: number, i: number, amount: bigint, fromRecent: number): void {
    const { f64, u64, i32 } = this.views;
    const low = this.lowOf(s);
    const seq = this.seqIndex(s);
    const base = low + this.length + i;
    const journal = low + 2 * this.length;
    const oldBase = u64[base];
    u64[journal] = oldBase;
    f64[journal + 1] = f64[low + i];
    u64[journal + 2] = BigInt.asUintN(64, amount);
    f64[journal + 3] = fromRecent;
    i32[seq + 1] = i;
    Atomics.add(i32, seq, 1);
    f64[low - 1] += 1;
    Atomics.store(u64, base, BigInt.asUintN(64, oldBase + amount));
    f64[low + i] -= fromRecent;
    Atomics.add(i32, seq, 1);
  }

  /** A move shard s's previous owner left half done: redo it from the journal. */
  private finishInterruptedMove(s = this.slot): void {
    const { f64, u64, i32 } = this.views;
    const low = this.lowOf(s);
    const seq = this.seqIndex(s);
    if (!(Atomics.load(i32, seq) & 1)) return;
    const i = i32[seq + 1];
    const journal = low + 2 * this.length;
    Atomics.store(u64, low + this.length + i, BigInt.asUintN(64, u64[journal] + u64[journal + 2]));
    f64[low + i] = f64[journal + 1] - f64[journal + 3];
    Atomics.add(i32, seq, 1);
  }

  /** Float64 index of counter 0's `recent` word in shard s. */
  private lowOf(s: number): number {
    return this.offset / 8 + s * this.stride + HEAD;
  }

  /** Shard s's counter i as it was before a move that has not finished (journal). */
  protected beforeMove(s: number, i: number): [bigint, number] | undefined {
    const { f64, u64, i32 } = this.views;
    const first = this.offset / 8 + s * this.stride + HEAD;
    if (i32[this.seqIndex(s) + 1] !== i) return undefined;
    const journal = first + 2 * this.length;
    return [this.signed(u64[journal]), f64[journal + 1]];
  }

  /** Shard s's counter i as [base, recent], consistent with each other. */
  protected read(s: number, i: number): [bigint, number] {
    const { f64, u64, i32 } = this.views;
    const first = this.offset / 8 + s * this.stride + HEAD;
    const seq = this.seqIndex(s);
    for (let spin = 0; ; spin++) {
      const before = Atomics.load(i32, seq);
      const base = u64[first + this.length + i];
      const recent = f64[first + i];
      if (!(before & 1) && Atomics.load(i32, seq) === before) return [this.signed(base), recent];
      // A move that does not end (its process died, or is stopped): read around it.
      if (spin > SPINS && before & 1) return this.beforeMove(s, i) ?? [this.signed(base), recent];
    }
  }

  /** How a base word reads: two's complement for gauges, unsigned for counters. */
  private signed(base: bigint): bigint {
    return this.signedBase ? BigInt.asIntN(64, base) : base;
  }

  /** Whether base words are two's complement (gauges). */
  protected get signedBases(): boolean {
    return false;
  }

  /** Int32 index of shard s's sequence word, after its `recent` and `base` words. */
  private seqIndex(s: number): number {
    return (this.offset / 8 + s * this.stride) * 2;
  }
}

/** Gauges go up and down; each shard may go below zero, and the sum is what counts. */
export class GaugeBlock extends CounterBlock {
  /** Subtracts n (a whole number, default 1) from gauge i in this process's shard. */
  sub(i: number, n = 1): void {
    this.recent[this.low + i] -= n;
  }

  /** Exact signed value of gauge i. */
  override get(i: number): bigint {
    return BigInt.asIntN(64, super.get(i));
  }

  protected override get signedBases(): boolean {
    return true;
  }
}

// A render reads each zone's bitmap once: inside inReadPass(), a zone's list of written
// shards is the one its first read in the pass found. A peer's render reads its blocks
// several times (its sums, each time it shows, each average), and each read of the
// bitmap is an atomic load: V8 makes a call of each, several times what the rest of
// shards() costs. A slot claimed during the pass shows at the next one, as if the pass
// had read a moment earlier; outside a pass, every read loads the bitmap.
let pass = 0;
let passOpen = false;

/** Runs `read`, which is synchronous (a render is), as one read pass (see above); a
 * pass inside a pass is the same pass. */
export function inReadPass<T>(read: () => T): T {
  if (passOpen) return read();
  passOpen = true;
  pass++;
  try {
    return read();
  } finally {
    passOpen = false;
  }
}

/**
 * A zone's slots ever claimed for writing (the zone header's bitmap, set at each claim
 * before the claimer's first write, never cleared), as the list of shards a reader reads.
 * One per zone, shared by its blocks: the bitmap is loaded at every read (once per read
 * pass, see above), and the list made again only when it changed, so that reading every
 * shard costs what the plain loop over all of them did.
 */
export class WrittenSlots {
  private words: Int32Array;
  private list: Int32Array = new Int32Array(0);
  /** The pass the list was last checked in. */
  private pass = 0;

  constructor(
    private readonly i32: Int32Array,
    /** Int32 index of the bitmap. */
    private readonly at: number,
    slots: number,
  ) {
    // -1 in every word: no bitmap looks like that, so the first read makes the list.
    this.words = new Int32Array(Math.ceil(slots / 32)).fill(-1);
  }

  /** The shards to read now, lowest first. Loaded before the shards themselves: only they
   * can hold anything but zeros. */
  shards(): Int32Array {
    if (passOpen && this.pass === pass) return this.list;
    this.pass = pass;
    const words = this.words;
    for (let w = 0; w < words.length; w++) if (Atomics.load(this.i32, this.at + w) !== words[w]) return this.remake();
    return this.list;
  }

  /** Marks a slot as written (what a claim does), for a shard set by another process. */
  mark(slot: number): void {
    Atomics.or(this.i32, this.at + (slot >> 5), 1 << (slot & 31));
  }

  private remake(): Int32Array {
    const words = this.words;
    const shards: number[] = [];
    for (let w = 0; w < words.length; w++) {
      const bits = Atomics.load(this.i32, this.at + w);
      words[w] = bits;
      for (let b = bits; b !== 0; b &= b - 1) shards.push((w << 5) + 31 - Math.clz32(b & -b));
    }
    this.list = Int32Array.from(shards);
    return this.list;
  }
}

/** Bytes one shard of a K-counter block takes (see HEAD), in whole 64-byte cache lines
 * so that no two shards share one. */
export function strideOf(length: number): number {
  return Math.ceil(((HEAD + 2 * length + JOURNAL) * 8) / 64) * 64;
}

// The blocks this process writes, folded once a second by a timer that does not keep the
// process alive. Blocks of detached zones drop out.
const folding = new Set<CounterBlock>();
let foldTimer: NodeJS.Timeout | undefined;

function foldLater(block: CounterBlock): void {
  folding.add(block);
  foldTimer ??= setInterval(() => {
    for (const b of folding) if (!b.fold()) folding.delete(b);
  }, 1000).unref();
}
