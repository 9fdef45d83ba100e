import type { AtomicCells, GaugeBlock } from '../engine/index.js';
import { type Counted, type Group } from './shape.js';
import type { Status } from './status.js';
import { type StatusNode } from './tree.js';
export interface CacheSource extends Counted {
    readonly maxSize?: number;
    readonly cold: boolean;
}
declare const statuses: {
    hit: {
        responses: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        bytes: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
    };
    stale: {
        responses: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        bytes: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
    };
    updating: {
        responses: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        bytes: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
    };
    revalidated: {
        responses: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        bytes: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
    };
    miss: {
        responses: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        bytes: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        responses_written: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        bytes_written: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
    };
    expired: {
        responses: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        bytes: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        responses_written: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        bytes_written: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
    };
    bypass: {
        responses: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        bytes: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        responses_written: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
        bytes_written: import("./shape.js").Leaf<CacheSource> & {
            readonly index: number;
        };
    };
};
/** How a response related to the cache ($upstream_cache_status, in lower case). */
export type CacheStatus = keyof typeof statuses;
export declare const cacheFields: Group<CacheSource>;
export interface CacheShardSource extends Counted {
    readonly maxSize?: number;
    readonly cold: boolean;
}
export declare const cacheShardFields: Group<CacheShardSource>;
/** What a worker calls as its cache serves responses and its loader and manager work. */
export declare class Cache {
    private readonly status;
    private readonly name;
    private readonly block;
    private readonly cold;
    private readonly shards;
    constructor(status: Status, name: string, block: GaugeBlock, cold: AtomicCells);
    /** A response went out with cache status `status`, `bytes` of it read from the cache
     * (hit, stale, updating, revalidated) or from the proxied server (miss, expired,
     * bypass). `written`: for miss, expired and bypass, the bytes written to the cache,
     * when the response was written to it (0 counts as a response written). */
    served(status: CacheStatus, bytes: number, written?: number): void;
    /** The cache grew (delta > 0) or shrank (delta < 0) by `delta` bytes: in the shard at
     * `shardPath` when given, which also counts in the cache's size. */
    sizeChanged(delta: number, shardPath?: string): void;
    /** Marks the cache (or the shard at `shardPath`) as being loaded from disk, or done. */
    setCold(cold: boolean, shardPath?: string): void;
    private shard;
}
export declare function cache(status: Status, name: string): Cache;
export declare function cachesNode(status: Status): StatusNode;
export declare const caches: {
    fields: Group<CacheSource>;
    recorder: typeof cache;
    node: typeof cachesNode;
};
export {};
