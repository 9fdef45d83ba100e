// The proxy cache's keys in a zone (native/cache.h): one call per decision under the
// zone mutex, so that every process sees one cache.
import type { NativeZone } from './native.js';

/** What a lookup tells a request to do (native CacheState). */
export const CacheLookupState = { Hit: 0, Miss: 1, MissLocked: 2, Expired: 3, Updating: 4, Exhausted: 5 } as const;
export type CacheLookupState = (typeof CacheLookupState)[keyof typeof CacheLookupState];

/** An entry the keys let go of: its file must be removed. */
export interface CacheEvicted {
  readonly key: Buffer;
  readonly size: number;
  readonly shard: number;
  /** Whether it had a file (a node may only count uses). */
  readonly exists: boolean;
}

export interface CacheLookup {
  readonly state: CacheLookupState;
  /** Miss or Expired: the response may be written (proxy_cache_min_uses reached), and
   * this request holds the updating flag when a lock time was given. */
  readonly store: boolean;
  /** Moves at every store: a copy of the file read at this version is current. */
  readonly version: number;
  readonly size: number;
  readonly validUntil: number;
  readonly evicted: readonly CacheEvicted[];
}

type RawEvicted = Array<[Buffer, number, number, boolean]> | null;

/** Most calls evict nothing: one empty list for all of them. */
const NONE: CacheEvicted[] = [];
const evictedOf = (raw: RawEvicted): CacheEvicted[] => (raw ? raw.map(([key, size, shard, exists]) => ({ key, size, shard, exists })) : NONE);

export class CacheKeys {
  constructor(
    private readonly native: NativeZone,
    private readonly table: number,
  ) {}

  /** Counts a use of `key` (16 bytes) at `now` (ms since the epoch) and says what the
   * request does; `lockMs` > 0 takes the updating flag for that long when it is to fetch
   * an expired entry, and a new one too when `lockMisses`. */
  lookup(key: Uint8Array, now: number, minUses: number, lockMs: number, lockMisses = true): CacheLookup {
    const out = this.out;
    const evicted = this.native.cacheLookup(this.table, key, now, minUses, lockMs, lockMisses, out);
    return { state: out[0] as CacheLookupState, store: out[1] === 1, version: out[2], size: out[3], validUntil: out[4], evicted: evictedOf(evicted) };
  }

  /** What lookup() reads the native answer from: one array for every call. */
  private readonly out = new Float64Array(5);

  /** The key's file was written: returns the change of the cache's size, and the version. */
  store(key: Uint8Array, now: number, validUntil: number, size: number, shard: number): { delta: number; version: number; evicted: CacheEvicted[] } {
    const [delta, version, evicted] = this.native.cacheStore(this.table, key, now, validUntil, size, shard);
    return { delta, version, evicted: evictedOf(evicted) };
  }

  /** The fetch ended without a store: the updating flag goes. */
  release(key: Uint8Array): void {
    this.native.cacheRelease(this.table, key);
  }

  /** A 304 revalidated the entry: valid until `validUntil`. */
  refresh(key: Uint8Array, validUntil: number): boolean {
    return this.native.cacheRefresh(this.table, key, validUntil);
  }

  /** The key's file is missing or broken: its node goes; returns the (negative) change of size. */
  forget(key: Uint8Array): number {
    return this.native.cacheForget(this.table, key);
  }

  /** The loader found a file: returns the bytes added (0 when the key was known). */
  load(key: Uint8Array, now: number, validUntil: number, size: number, shard: number): { delta: number; evicted: CacheEvicted[] } {
    const [delta, evicted] = this.native.cacheLoad(this.table, key, now, validUntil, size, shard);
    return { delta, evicted: evictedOf(evicted) };
  }

  /** The manager's pass: entries unused for `inactiveMs`, then the least recently used
   * while above `maxSize` (0: no limit) or a shard above its own; at most `max`. */
  expire(now: number, inactiveMs: number, maxSize: number, shardMax: Float64Array, max: number): CacheEvicted[] {
    return evictedOf(this.native.cacheExpire(this.table, now, inactiveMs, maxSize, shardMax, max));
  }

  /** The cache's size in bytes, its node count, and each shard's size. */
  sizes(): { size: number; nodes: number; shards: number[] } {
    const raw = this.native.cacheSizes(this.table);
    return { size: raw[0], nodes: raw[1], shards: raw.slice(2) };
  }

  /** "" when the table's links and sizes agree. */
  check(): string {
    return this.native.cacheCheck(this.table);
  }
}
