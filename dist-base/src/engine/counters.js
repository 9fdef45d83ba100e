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
    constructor(views, offset, length, shards, slot) {
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
    add(i, n = 1) {
        this.recent[this.low + i] += n;
    }
    /** Adds an amount of any size, straight into the shard's base word. */
    addLarge(i, n) {
        if (this.slot < 0)
            throw new Error('this process opened the zone with writer: false and has no shard to write');
        this.moveToBase(i, BigInt(n), 0);
    }
    /** Exact sum of counter i over all shards, modulo 2^64. */
    get(i) {
        let sum = 0n;
        for (let s = 0; s < this.shards; s++) {
            const [base, recent] = this.read(s, i);
            sum += base + BigInt(recent);
        }
        return BigInt.asUintN(64, sum);
    }
    /** Sum of counter i as a Number: exact up to 2^53, which JSON readers can hold. */
    value(i) {
        let sum = 0;
        for (let s = 0; s < this.shards; s++) {
            const [base, recent] = this.read(s, i);
            sum += Number(base) + recent;
        }
        return sum;
    }
    /** All K sums at once, into `out`: what renderers use. Each shard is read between two
     * loads of its sequence word; a move in between (rare) means reading again. */
    values(out = new Float64Array(this.length)) {
        for (let attempt = 0; attempt < SPINS; attempt++)
            if (this.tryValues(out))
                return out;
        return this.valuesAroundMove(out);
    }
    tryValues(out) {
        const { f64, u32, i32 } = this;
        const k = this.length;
        const signed = this.signedBase;
        for (let s = 0, shard = this.offset / 8; s < this.shards; s++, shard += this.stride) {
            const seq = shard * 2;
            const first = shard + HEAD;
            const before = Atomics.load(i32, seq);
            if (before & 1)
                return false;
            if (f64[shard + 1] === 0) {
                // This shard never moved anything to its base words: they are all 0.
                if (s === 0)
                    for (let i = 0; i < k; i++)
                        out[i] = f64[first + i];
                else
                    for (let i = 0; i < k; i++)
                        out[i] += f64[first + i];
            }
            else {
                if (s === 0)
                    out.fill(0, 0, k);
                for (let i = 0; i < k; i++) {
                    // A base is a multiple of 2^52 or an addLarge() amount: hi * 2^32 + lo as a
                    // Number (get() is exact past 2^53).
                    const lo = u32[(first + k + i) * 2];
                    const hi = u32[(first + k + i) * 2 + 1];
                    out[i] += (signed && hi >= 0x8000_0000 ? hi - 0x1_0000_0000 : hi) * 0x1_0000_0000 + lo + f64[first + i];
                }
            }
            if (Atomics.load(i32, seq) !== before)
                return false;
        }
        return true;
    }
    /** values() when a shard's move does not end: each counter read around it. */
    valuesAroundMove(out) {
        for (let i = 0; i < this.length; i++)
            out[i] = this.value(i);
        return out;
    }
    /** Sets counter i of this process's shard to v: for per-worker values that are not
     * sums, such as the time of the last event (read with max()) or a moving average. */
    set(i, v) {
        this.recent[this.low + i] = v;
    }
    /** Counter i of this process's own shard, as set() left it (a worker's running average). */
    own(i) {
        return this.recent[this.low + i];
    }
    /** The largest of counter i's shards (values written with set()). */
    max(i) {
        const f64 = this.views.f64;
        let m = 0;
        for (let s = 0, j = this.offset / 8 + HEAD + i; s < this.shards; s++, j += this.stride)
            if (f64[j] > m)
                m = f64[j];
        return m;
    }
    /** The mean of counter `value`'s shards weighted by counter `weight`'s (per-worker
     * averages and their sample counts); 0 when no shard has weight. */
    weightedMean(value, weight) {
        const f64 = this.views.f64;
        let sum = 0;
        let n = 0;
        for (let s = 0, j = this.offset / 8 + HEAD; s < this.shards; s++, j += this.stride) {
            sum += f64[j + value] * f64[j + weight];
            n += f64[j + weight];
        }
        return n ? sum / n : 0;
    }
    /** Moves whole 2^52s from this process's `recent` words into `base` (see top). False
     * once the zone is detached: there is nothing left to fold. */
    fold() {
        const f64 = this.views.f64;
        if (f64.length === 0)
            return false;
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
    moveToBase(i, amount, fromRecent) {
        const { f64, u64, i32 } = this.views;
        const seq = this.seqIndex(this.slot);
        const base = this.low + this.length + i;
        const journal = this.low + 2 * this.length;
        const oldBase = u64[base];
        u64[journal] = oldBase;
        f64[journal + 1] = f64[this.low + i];
        u64[journal + 2] = BigInt.asUintN(64, amount);
        f64[journal + 3] = fromRecent;
        i32[seq + 1] = i;
        Atomics.add(i32, seq, 1);
        f64[this.low - 1] += 1;
        Atomics.store(u64, base, BigInt.asUintN(64, oldBase + amount));
        f64[this.low + i] -= fromRecent;
        Atomics.add(i32, seq, 1);
    }
    /** A move this shard's previous owner left half done: redo it from the journal. */
    finishInterruptedMove() {
        const { f64, u64, i32 } = this.views;
        const seq = this.seqIndex(this.slot);
        if (!(Atomics.load(i32, seq) & 1))
            return;
        const i = i32[seq + 1];
        const journal = this.low + 2 * this.length;
        Atomics.store(u64, this.low + this.length + i, BigInt.asUintN(64, u64[journal] + u64[journal + 2]));
        f64[this.low + i] = f64[journal + 1] - f64[journal + 3];
        Atomics.add(i32, seq, 1);
    }
    /** Shard s's counter i as it was before a move that has not finished (journal). */
    beforeMove(s, i) {
        const { f64, u64, i32 } = this.views;
        const first = this.offset / 8 + s * this.stride + HEAD;
        if (i32[this.seqIndex(s) + 1] !== i)
            return undefined;
        const journal = first + 2 * this.length;
        return [this.signed(u64[journal]), f64[journal + 1]];
    }
    /** Shard s's counter i as [base, recent], consistent with each other. */
    read(s, i) {
        const { f64, u64, i32 } = this.views;
        const first = this.offset / 8 + s * this.stride + HEAD;
        const seq = this.seqIndex(s);
        for (let spin = 0;; spin++) {
            const before = Atomics.load(i32, seq);
            const base = u64[first + this.length + i];
            const recent = f64[first + i];
            if (!(before & 1) && Atomics.load(i32, seq) === before)
                return [this.signed(base), recent];
            // A move that does not end (its process died, or is stopped): read around it.
            if (spin > SPINS && before & 1)
                return this.beforeMove(s, i) ?? [this.signed(base), recent];
        }
    }
    /** How a base word reads: two's complement for gauges, unsigned for counters. */
    signed(base) {
        return this.signedBase ? BigInt.asIntN(64, base) : base;
    }
    /** Whether base words are two's complement (gauges). */
    get signedBases() {
        return false;
    }
    /** Int32 index of shard s's sequence word, after its `recent` and `base` words. */
    seqIndex(s) {
        return (this.offset / 8 + s * this.stride) * 2;
    }
}
/** Gauges go up and down; each shard may go below zero, and the sum is what counts. */
export class GaugeBlock extends CounterBlock {
    /** Subtracts n (a whole number, default 1) from gauge i in this process's shard. */
    sub(i, n = 1) {
        this.recent[this.low + i] -= n;
    }
    /** Exact signed value of gauge i. */
    get(i) {
        return BigInt.asIntN(64, super.get(i));
    }
    get signedBases() {
        return true;
    }
}
/** Bytes one shard of a K-counter block takes (see HEAD), in whole 64-byte cache lines
 * so that no two shards share one. */
export function strideOf(length) {
    return Math.ceil(((HEAD + 2 * length + JOURNAL) * 8) / 64) * 64;
}
// The blocks this process writes, folded once a second by a timer that does not keep the
// process alive. Blocks of detached zones drop out.
const folding = new Set();
let foldTimer;
function foldLater(block) {
    folding.add(block);
    foldTimer ??= setInterval(() => {
        for (const b of folding)
            if (!b.fold())
                folding.delete(b);
    }, 1000).unref();
}
//# sourceMappingURL=counters.js.map