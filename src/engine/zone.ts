// A zone: one named shared-memory segment that the primary creates and every worker
// attaches to. Blocks inside it (counters, cells, records, raw slab blocks) are found by
// key, so a process that did not allocate a block can still reach it.
import { AtomicCells } from './cells.js';
import { LimitConnTable, LimitKind, LimitReqTable } from './limits.js';
import { CounterBlock, GaugeBlock, strideOf, WrittenSlots } from './counters.js';
import { attachInstance, creatorInstance, requestedWorkerSlot } from './identity.js';
import { CacheKeys } from './cache-keys.js';
import { addon, EntryKind, type NativeSlabStats, type NativeZone } from './native.js';
import { SeqRecord } from './record.js';
import { makeViews, type ZoneViews } from './views.js';

/** Int32 index of the zone header's bitmap of slots ever claimed for writing. */
const WRITTEN_SLOTS = addon.writtenSlotsOffset / 4;

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
export class ZoneFullError extends Error {
  readonly code = 'ZONE_FULL';
  constructor(zone: string, key: string) {
    super(`zone "${zone}" has no room left for "${key}"`);
  }
}

export class Zone {
  readonly name: string;
  readonly instance: string;
  /** Whether this process created the zone (and so removes it on exit). */
  readonly owner: boolean;
  /** Whether this process writes counters, in the shard of its worker slot. */
  readonly writer: boolean;
  readonly pageSize: number;
  readonly workerSlots: number;
  private readonly native: NativeZone;
  private views: ZoneViews;
  /** Its slots ever claimed for writing, which every block's readers share. */
  private readonly written: WrittenSlots;
  private slot = -1;

  private constructor(native: NativeZone, name: string, instance: string, owner: boolean, writer: boolean) {
    this.native = native;
    this.name = name;
    this.instance = instance;
    this.owner = owner;
    this.writer = writer;
    const info = native.info();
    this.pageSize = info.pageSize;
    this.workerSlots = info.workerSlots;
    this.views = makeViews(native.buffer);
    this.written = new WrittenSlots(this.views.i32, WRITTEN_SLOTS, this.workerSlots);
  }

  static create(name: string, options: CreateZoneOptions): Zone {
    const instance = options.instance ?? creatorInstance();
    removeStaleZonesOnce();
    const native = addon.NativeZone.create(instance, name, options.size, options.workers);
    const zone = new Zone(native, name, instance, true, options.writer ?? true);
    created.add(zone);
    installCleanup();
    return zone;
  }

  static attach(name: string, options: AttachZoneOptions = {}): Zone {
    const instance = options.instance ?? attachInstance();
    return new Zone(addon.NativeZone.attach(instance, name), name, instance, false, options.writer ?? true);
  }

  /** Bytes of pages given to the slab allocator, as created. */
  get size(): number {
    return this.native.info().poolSize;
  }

  /** Times a process found the zone mutex's owner dead and rolled its work back. */
  get recoveries(): number {
    return this.native.info().recoveries;
  }

  /** The shard this process writes, claimed when it first makes a block (see
   * identity.ts); -1 for a process that opened the zone with `writer: false`. */
  workerSlot(): number {
    if (this.slot < 0 && this.writer) this.slot = this.native.claim(requestedWorkerSlot());
    return this.slot;
  }

  counters(key: string, length: number): CounterBlock {
    const offset = this.ensure(key, EntryKind.Counters, this.shardBytes(length));
    return new CounterBlock(this.views, offset, length, this.workerSlots, this.workerSlot(), this.written);
  }

  gauges(key: string, length: number): GaugeBlock {
    const offset = this.ensure(key, EntryKind.Counters, this.shardBytes(length));
    return new GaugeBlock(this.views, offset, length, this.workerSlots, this.workerSlot(), this.written);
  }

  cells(key: string, length: number): AtomicCells {
    checkLength(length);
    return new AtomicCells(this.views, this.ensure(key, EntryKind.Cells, length * 4), length);
  }

  record(key: string): SeqRecord {
    return new SeqRecord(this.native, this.views, key, this.ensure(key, EntryKind.Record, 16));
  }

  /** A request limit's keyed table (nginx's limit_req state), made on first use. */
  limitReqTable(key: string): LimitReqTable {
    return new LimitReqTable(this.native, this.limitTable(key, LimitKind.Req));
  }

  /** A connection limit's keyed table (nginx's limit_conn state), made on first use. */
  limitConnTable(key: string): LimitConnTable {
    return new LimitConnTable(this.native, this.limitTable(key, LimitKind.Conn));
  }

  private limitTable(key: string, kind: number): number {
    const offset = this.native.limitTable(key, kind);
    if (offset === null) throw new ZoneFullError(this.name, key);
    return offset;
  }

  /** A raw block of `size` bytes under `key`, as [byte offset, view of it]. */
  block(key: string, size: number): Uint8Array {
    const offset = this.ensure(key, EntryKind.Block, size);
    return this.views.u8.subarray(offset, offset + size);
  }

  /** The proxy cache's keyed table under `key`, made on first use. */
  cacheKeys(key: string): CacheKeys {
    const table = this.native.cacheTable(key);
    if (table === 0) throw new ZoneFullError(this.name, key);
    return new CacheKeys(this.native, table);
  }

  has(key: string): boolean {
    return this.native.find(key) !== null;
  }

  /** Frees the block under `key`; views of it must not be used afterwards. */
  drop(key: string): boolean {
    return this.native.drop(key);
  }

  keys(): string[] {
    return this.native.entries().map((e) => e[0]);
  }

  /** Direct slab allocation: a byte offset, or 0 when the zone is full. */
  alloc(size: number): number {
    return this.native.alloc(size);
  }

  free(offset: number): boolean {
    return this.native.free(offset);
  }

  /** What /status/slabs/<zone> shows: pages used and free, and per slot size (8 up to
   * half a page) slots used and free, allocation attempts and failures. */
  slabStats(): SlabStats {
    const packed = this.native.slabStatsPacked();
    const slots: SlabStats['slots'] = {};
    for (let k = 0, at = 2; at < packed.length; k++, at += 4)
      slots[String(8 << k)] = { used: packed[at], free: packed[at + 1], reqs: packed[at + 2], fails: packed[at + 3] };
    return { pages: { used: packed[0], free: packed[1] }, slots };
  }

  /** slabStats() as one array: pages used, pages free, then used, free, reqs and fails
   * for each slot size from 8 up (into `out` when it is large enough). */
  slabStatsPacked(out?: Float64Array): Float64Array {
    return this.native.slabStatsPacked(out);
  }

  /** Verifies every page and list of the slab allocator: "" when consistent. */
  check(): string {
    return this.native.check();
  }

  /** Unmaps the zone from this process. Views over it read as empty afterwards. */
  detach(): void {
    if (this.slot >= 0) this.native.release(this.slot);
    this.native.detach();
    created.delete(this);
  }

  /** Removes the zone's name: processes that have it mapped keep it until they detach. */
  remove(): boolean {
    created.delete(this);
    return addon.NativeZone.remove(this.instance, this.name);
  }

  /** Test hook: the next locked operation stops for good after `writes` logged writes. */
  stallAfter(writes: number): void {
    this.native.stallAfter(writes);
  }

  private shardBytes(length: number): number {
    checkLength(length);
    return strideOf(length) * this.workerSlots;
  }

  private ensure(key: string, kind: EntryKind, size: number): number {
    const entry = this.native.ensure(key, kind, size);
    if (!entry) throw new ZoneFullError(this.name, key);
    return entry[0];
  }
}

function checkLength(length: number): void {
  if (!Number.isInteger(length) || length < 1 || length > 1 << 20)
    throw new RangeError(`a block holds 1 to ${1 << 20} values, not ${length}`);
}

export function removeZone(name: string, options: AttachZoneOptions = {}): boolean {
  return addon.NativeZone.remove(options.instance ?? attachInstance(), name);
}

// Zones created here are removed when this process ends, however it ends short of
// SIGKILL; those of a SIGKILLed creator go when the next creator starts.
const created = new Set<Zone>();
let cleanupInstalled = false;
let staleRemoved = false;

function removeStaleZonesOnce(): void {
  if (staleRemoved) return;
  staleRemoved = true;
  addon.NativeZone.removeStale();
}

function removeCreatedZones(): void {
  for (const zone of created) zone.remove();
}

function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.on('exit', removeCreatedZones);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    // First in line, so that handlers after ours (the application's, or a library's such
    // as signal-exit, which defers to any other listener) see that we are gone.
    process.prependOnceListener(signal, () => {
      removeCreatedZones();
      // With no other listener the signal's default is to die: do it, as we found it.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}
