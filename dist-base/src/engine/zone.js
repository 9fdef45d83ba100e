// A zone: one named shared-memory segment that the primary creates and every worker
// attaches to. Blocks inside it (counters, cells, records, raw slab blocks) are found by
// key, so a process that did not allocate a block can still reach it.
import { AtomicCells } from './cells.js';
import { CounterBlock, GaugeBlock, strideOf } from './counters.js';
import { attachInstance, creatorInstance, requestedWorkerSlot } from './identity.js';
import { addon, EntryKind } from './native.js';
import { SeqRecord } from './record.js';
import { makeViews } from './views.js';
/** Thrown when a zone has no room left for a new block; counted in its slab `fails`. */
export class ZoneFullError extends Error {
    constructor(zone, key) {
        super(`zone "${zone}" has no room left for "${key}"`);
        this.code = 'ZONE_FULL';
    }
}
export class Zone {
    constructor(native, name, instance, owner, writer) {
        this.slot = -1;
        this.native = native;
        this.name = name;
        this.instance = instance;
        this.owner = owner;
        this.writer = writer;
        const info = native.info();
        this.pageSize = info.pageSize;
        this.workerSlots = info.workerSlots;
        this.views = makeViews(native.buffer);
    }
    static create(name, options) {
        const instance = options.instance ?? creatorInstance();
        removeStaleZonesOnce();
        const native = addon.NativeZone.create(instance, name, options.size, options.workers);
        const zone = new Zone(native, name, instance, true, options.writer ?? true);
        created.add(zone);
        installCleanup();
        return zone;
    }
    static attach(name, options = {}) {
        const instance = options.instance ?? attachInstance();
        return new Zone(addon.NativeZone.attach(instance, name), name, instance, false, options.writer ?? true);
    }
    /** Bytes of pages given to the slab allocator, as created. */
    get size() {
        return this.native.info().poolSize;
    }
    /** Times a process found the zone mutex's owner dead and rolled its work back. */
    get recoveries() {
        return this.native.info().recoveries;
    }
    /** The shard this process writes, claimed when it first makes a block (see
     * identity.ts); -1 for a process that opened the zone with `writer: false`. */
    workerSlot() {
        if (this.slot < 0 && this.writer)
            this.slot = this.native.claim(requestedWorkerSlot());
        return this.slot;
    }
    counters(key, length) {
        const offset = this.ensure(key, EntryKind.Counters, this.shardBytes(length));
        return new CounterBlock(this.views, offset, length, this.workerSlots, this.workerSlot());
    }
    gauges(key, length) {
        const offset = this.ensure(key, EntryKind.Counters, this.shardBytes(length));
        return new GaugeBlock(this.views, offset, length, this.workerSlots, this.workerSlot());
    }
    cells(key, length) {
        checkLength(length);
        return new AtomicCells(this.views, this.ensure(key, EntryKind.Cells, length * 4), length);
    }
    record(key) {
        return new SeqRecord(this.native, this.views, key, this.ensure(key, EntryKind.Record, 16));
    }
    /** A raw block of `size` bytes under `key`, as [byte offset, view of it]. */
    block(key, size) {
        const offset = this.ensure(key, EntryKind.Block, size);
        return this.views.u8.subarray(offset, offset + size);
    }
    has(key) {
        return this.native.find(key) !== null;
    }
    /** Frees the block under `key`; views of it must not be used afterwards. */
    drop(key) {
        return this.native.drop(key);
    }
    keys() {
        return this.native.entries().map((e) => e[0]);
    }
    /** Direct slab allocation: a byte offset, or 0 when the zone is full. */
    alloc(size) {
        return this.native.alloc(size);
    }
    free(offset) {
        return this.native.free(offset);
    }
    /** What /status/slabs/<zone> shows: pages used and free, and per slot size (8 up to
     * half a page) slots used and free, allocation attempts and failures. */
    slabStats() {
        const packed = this.native.slabStatsPacked();
        const slots = {};
        for (let k = 0, at = 2; at < packed.length; k++, at += 4)
            slots[String(8 << k)] = { used: packed[at], free: packed[at + 1], reqs: packed[at + 2], fails: packed[at + 3] };
        return { pages: { used: packed[0], free: packed[1] }, slots };
    }
    /** slabStats() as one array: pages used, pages free, then used, free, reqs and fails
     * for each slot size from 8 up (into `out` when it is large enough). */
    slabStatsPacked(out) {
        return this.native.slabStatsPacked(out);
    }
    /** Verifies every page and list of the slab allocator: "" when consistent. */
    check() {
        return this.native.check();
    }
    /** Unmaps the zone from this process. Views over it read as empty afterwards. */
    detach() {
        if (this.slot >= 0)
            this.native.release(this.slot);
        this.native.detach();
        created.delete(this);
    }
    /** Removes the zone's name: processes that have it mapped keep it until they detach. */
    remove() {
        created.delete(this);
        return addon.NativeZone.remove(this.instance, this.name);
    }
    /** Test hook: the next locked operation stops for good after `writes` logged writes. */
    stallAfter(writes) {
        this.native.stallAfter(writes);
    }
    shardBytes(length) {
        checkLength(length);
        return strideOf(length) * this.workerSlots;
    }
    ensure(key, kind, size) {
        const entry = this.native.ensure(key, kind, size);
        if (!entry)
            throw new ZoneFullError(this.name, key);
        return entry[0];
    }
}
function checkLength(length) {
    if (!Number.isInteger(length) || length < 1 || length > 1 << 20)
        throw new RangeError(`a block holds 1 to ${1 << 20} values, not ${length}`);
}
export function removeZone(name, options = {}) {
    return addon.NativeZone.remove(options.instance ?? attachInstance(), name);
}
// Zones created here are removed when this process ends, however it ends short of
// SIGKILL; those of a SIGKILLed creator go when the next creator starts.
const created = new Set();
let cleanupInstalled = false;
let staleRemoved = false;
function removeStaleZonesOnce() {
    if (staleRemoved)
        return;
    staleRemoved = true;
    addon.NativeZone.removeStale();
}
function removeCreatedZones() {
    for (const zone of created)
        zone.remove();
}
function installCleanup() {
    if (cleanupInstalled)
        return;
    cleanupInstalled = true;
    process.on('exit', removeCreatedZones);
    for (const signal of ['SIGINT', 'SIGTERM']) {
        // First in line, so that handlers after ours (the application's, or a library's such
        // as signal-exit, which defers to any other listener) see that we are gone.
        process.prependOnceListener(signal, () => {
            removeCreatedZones();
            // With no other listener the signal's default is to die: do it, as we found it.
            if (process.listenerCount(signal) === 0)
                process.kill(process.pid, signal);
        });
    }
}
//# sourceMappingURL=zone.js.map