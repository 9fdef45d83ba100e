import type { NativeZone } from './native.js';
import type { ZoneViews } from './views.js';
export declare class SeqRecord {
    readonly key: string;
    readonly offset: number;
    private readonly native;
    private readonly u32;
    private readonly seqIndex;
    private cachedSeq;
    private cachedValue;
    constructor(native: NativeZone, views: ZoneViews, key: string, offset: number);
    /** Number of writes published so far. Cheap enough to check on every request. */
    get generation(): number;
    changedSince(generation: number): boolean;
    /** Publishes new content; false when the zone has no room (the old content stays). */
    write(content: Uint8Array): boolean;
    read(): Buffer;
    writeJSON(value: unknown): boolean;
    /** The record's content parsed as JSON (undefined while empty), decoded again only
     * when the record's sequence has moved since the last call. */
    readJSON<T>(): T | undefined;
}
