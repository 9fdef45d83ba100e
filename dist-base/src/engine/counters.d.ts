import type { ZoneViews } from './views.js';
export declare class CounterBlock {
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
    private readonly f64;
    private readonly u32;
    private readonly i32;
    /** Whether base words are two's complement (gauges), fixed at construction. */
    private readonly signedBase;
    /** Words (8 bytes) from one shard to the next: a whole number of cache lines. */
    protected readonly stride: number;
    protected readonly shards: number;
    constructor(views: ZoneViews, offset: number, length: number, shards: number, slot: number);
    /** Adds n to counter i in this process's shard. n is a whole number below 2^52 (any
     * byte count or step a server makes); addLarge() takes any amount. */
    add(i: number, n?: number): void;
    /** Adds an amount of any size, straight into the shard's base word. */
    addLarge(i: number, n: number | bigint): void;
    /** Exact sum of counter i over all shards, modulo 2^64. */
    get(i: number): bigint;
    /** Sum of counter i as a Number: exact up to 2^53, which JSON readers can hold. */
    value(i: number): number;
    /** All K sums at once, into `out`: what renderers use. Each shard is read between two
     * loads of its sequence word; a move in between (rare) means reading again. */
    values(out?: Float64Array): Float64Array;
    private tryValues;
    /** values() when a shard's move does not end: each counter read around it. */
    private valuesAroundMove;
    /** Sets counter i of this process's shard to v: for per-worker values that are not
     * sums, such as the time of the last event (read with max()) or a moving average. */
    set(i: number, v: number): void;
    /** Counter i of this process's own shard, as set() left it (a worker's running average). */
    own(i: number): number;
    /** The largest of counter i's shards (values written with set()). */
    max(i: number): number;
    /** The mean of counter `value`'s shards weighted by counter `weight`'s (per-worker
     * averages and their sample counts); 0 when no shard has weight. */
    weightedMean(value: number, weight: number): number;
    /** Moves whole 2^52s from this process's `recent` words into `base` (see top). False
     * once the zone is detached: there is nothing left to fold. */
    fold(): boolean;
    /** Adds `amount` to shard base i and takes `fromRecent` off its recent word, as one
     * step for readers: between two bumps of the shard's sequence word. The journal,
     * written first, lets a reader read around a move that does not finish, and lets the
     * next owner of the slot finish it, should this process die half way. */
    private moveToBase;
    /** A move this shard's previous owner left half done: redo it from the journal. */
    private finishInterruptedMove;
    /** Shard s's counter i as it was before a move that has not finished (journal). */
    protected beforeMove(s: number, i: number): [bigint, number] | undefined;
    /** Shard s's counter i as [base, recent], consistent with each other. */
    protected read(s: number, i: number): [bigint, number];
    /** How a base word reads: two's complement for gauges, unsigned for counters. */
    private signed;
    /** Whether base words are two's complement (gauges). */
    protected get signedBases(): boolean;
    /** Int32 index of shard s's sequence word, after its `recent` and `base` words. */
    private seqIndex;
}
/** Gauges go up and down; each shard may go below zero, and the sum is what counts. */
export declare class GaugeBlock extends CounterBlock {
    /** Subtracts n (a whole number, default 1) from gauge i in this process's shard. */
    sub(i: number, n?: number): void;
    /** Exact signed value of gauge i. */
    get(i: number): bigint;
    protected get signedBases(): boolean;
}
/** Bytes one shard of a K-counter block takes (see HEAD), in whole 64-byte cache lines
 * so that no two shards share one. */
export declare function strideOf(length: number): number;
