import { AtomicCells } from './cells.js';
import { CounterBlock, GaugeBlock } from './counters.js';
import { type NativeSlabStats } from './native.js';
import { SeqRecord } from './record.js';
export interface CreateZoneOptions {
    /** Bytes of pages for the zone's slab allocator (at least one page). */
    size: number;
    /** Worker slots: how many processes can write counters at once. */
    workers: number;
    /** Instance name; defaults to the inherited ZONAL_INSTANCE or one named after this process. */
    instance?: string;
    /** Whether this process writes counters (default true). A primary that only creates
     * zones and serves their status passes false, and takes no worker slot. */
    writer?: boolean;
}
export interface AttachZoneOptions {
    instance?: string;
    /** Whether this process writes counters (default true); see CreateZoneOptions. */
    writer?: boolean;
}
export type SlabStats = NativeSlabStats;
/** Thrown when a zone has no room left for a new block; counted in its slab `fails`. */
export declare class ZoneFullError extends Error {
    readonly code = "ZONE_FULL";
    constructor(zone: string, key: string);
}
export declare class Zone {
    readonly name: string;
    readonly instance: string;
    /** Whether this process created the zone (and so removes it on exit). */
    readonly owner: boolean;
    /** Whether this process writes counters, in the shard of its worker slot. */
    readonly writer: boolean;
    readonly pageSize: number;
    readonly workerSlots: number;
    private readonly native;
    private views;
    private slot;
    private constructor();
    static create(name: string, options: CreateZoneOptions): Zone;
    static attach(name: string, options?: AttachZoneOptions): Zone;
    /** Bytes of pages given to the slab allocator, as created. */
    get size(): number;
    /** Times a process found the zone mutex's owner dead and rolled its work back. */
    get recoveries(): number;
    /** The shard this process writes, claimed when it first makes a block (see
     * identity.ts); -1 for a process that opened the zone with `writer: false`. */
    workerSlot(): number;
    counters(key: string, length: number): CounterBlock;
    gauges(key: string, length: number): GaugeBlock;
    cells(key: string, length: number): AtomicCells;
    record(key: string): SeqRecord;
    /** A raw block of `size` bytes under `key`, as [byte offset, view of it]. */
    block(key: string, size: number): Uint8Array;
    has(key: string): boolean;
    /** Frees the block under `key`; views of it must not be used afterwards. */
    drop(key: string): boolean;
    keys(): string[];
    /** Direct slab allocation: a byte offset, or 0 when the zone is full. */
    alloc(size: number): number;
    free(offset: number): boolean;
    /** What /status/slabs/<zone> shows: pages used and free, and per slot size (8 up to
     * half a page) slots used and free, allocation attempts and failures. */
    slabStats(): SlabStats;
    /** slabStats() as one array: pages used, pages free, then used, free, reqs and fails
     * for each slot size from 8 up (into `out` when it is large enough). */
    slabStatsPacked(out?: Float64Array): Float64Array;
    /** Verifies every page and list of the slab allocator: "" when consistent. */
    check(): string;
    /** Unmaps the zone from this process. Views over it read as empty afterwards. */
    detach(): void;
    /** Removes the zone's name: processes that have it mapped keep it until they detach. */
    remove(): boolean;
    /** Test hook: the next locked operation stops for good after `writes` logged writes. */
    stallAfter(writes: number): void;
    private shardBytes;
    private ensure;
}
export declare function removeZone(name: string, options?: AttachZoneOptions): boolean;
