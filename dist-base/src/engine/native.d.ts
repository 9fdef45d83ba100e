/** Kinds of directory entries, as native/layout.h numbers them. */
export declare const EntryKind: {
    readonly Block: 1;
    readonly Counters: 2;
    readonly Cells: 3;
    readonly Record: 4;
};
export type EntryKind = (typeof EntryKind)[keyof typeof EntryKind];
export interface NativeSlotStats {
    used: number;
    free: number;
    reqs: number;
    fails: number;
}
export interface NativeSlabStats {
    pages: {
        used: number;
        free: number;
    };
    slots: Record<string, NativeSlotStats>;
}
export interface NativeZoneInfo {
    size: number;
    poolSize: number;
    pageSize: number;
    workerSlots: number;
    creatorPid: number;
    createdMs: number;
    entries: number;
    recoveries: number;
    layoutVersion: number;
}
export interface NativeZone {
    readonly buffer: ArrayBuffer;
    info(): NativeZoneInfo;
    alloc(size: number): number;
    free(offset: number): boolean;
    /** pages used, pages free, then used, free, reqs, fails per slot size from 8 up; into
     * `out` when it is large enough. */
    slabStatsPacked(out?: Float64Array): Float64Array;
    check(): string;
    /** [offset, size, created (1|0)], or null when the zone has no room. */
    ensure(key: string, kind: EntryKind, size: number): [number, number, number] | null;
    /** [offset, size, kind], or null. */
    find(key: string): [number, number, EntryKind] | null;
    drop(key: string): boolean;
    entries(): Array<[string, EntryKind, number, number]>;
    writeRecord(offset: number, content: Uint8Array): boolean;
    readRecord(offset: number): Buffer;
    claim(slot?: number): number;
    release(slot: number): void;
    detach(): void;
    stallAfter(writes: number): void;
}
export interface NativeZoneStatic {
    create(instance: string, name: string, size: number, workerSlots: number): NativeZone;
    attach(instance: string, name: string): NativeZone;
    remove(instance: string, name: string): boolean;
    removeStale(instance?: string): number;
}
interface Addon {
    NativeZone: NativeZoneStatic;
    pageSize: number;
    layoutVersion: number;
    maxWorkerSlots: number;
}
export declare const addon: Addon;
export {};
