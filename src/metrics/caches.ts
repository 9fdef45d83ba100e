// HTTP caches (/status/http/caches/<cache>): one for each zone a cache directive uses.
// The counters live in the cache's own zone (beside its keys, as in Angie: that zone is
// what /status/slabs/<cache> shows); `cold` is a shared cell that all workers agree on.
//
// Units: `size` and `max_size` (of the cache and of its shards) are bytes. The spec
// leaves the unit open; Angie reports bytes (its sample shows max_size 10485760 for
// `max_size=10m`), and so does NGINX Plus.
//
// Sharding: a cache with configured shards shows `shards`, keyed by each shard's path,
// each with its own size, max_size (when configured) and cold. The cache's `size` is the
// total of everything recorded for it, its shards included; the cache is `cold` while it
// is marked cold itself or any of its shards is.
import type { AtomicCells, GaugeBlock } from '../engine/index.js';
import type { CacheConfig, CacheShardConfig } from './catalog.js';
import { group, leaf, Layout, type Counted, type Group } from './shape.js';
import type { StatusStore } from './store.js';
import { collection, FieldNode, ObjectNode, type StatusNode } from './tree.js';

export interface CacheSource extends Counted {
  readonly maxSize?: number;
  readonly cold: boolean;
}

const layout = new Layout<CacheSource>();
const size = layout.gauge('size', 'Current size of the cache in bytes.');

/** A cache status served from (or past) the cache: responses and bytes read. */
function read(what: string) {
  return {
    responses: layout.counter('responses', `${what}: responses read from the cache.`),
    bytes: layout.counter('bytes', `${what}: bytes read from the cache.`),
  };
}

/** A cache status not served from the cache: responses and bytes read from the proxied
 * server, and what of them was written to the cache. */
function fetched(what: string) {
  return {
    responses: layout.counter('responses', `${what}: responses.`),
    bytes: layout.counter('bytes', `${what}: bytes read from the proxied server.`),
    responses_written: layout.counter('responses_written', `${what}: responses written to the cache.`),
    bytes_written: layout.counter('bytes_written', `${what}: bytes written to the cache.`),
  };
}

const statuses = {
  hit: read('Valid cached responses served'),
  stale: read('Expired responses served from the cache'),
  updating: read('Expired responses served while the cache entry was being updated'),
  revalidated: read('Expired and revalidated responses served from the cache'),
  miss: fetched('Responses not found in the cache'),
  expired: fetched('Expired responses not taken from the cache'),
  bypass: fetched('Responses not looked up in the cache'),
};

/** How a response related to the cache ($upstream_cache_status, in lower case). */
export type CacheStatus = keyof typeof statuses;

export const cacheFields: Group<CacheSource> = group('', [
  size,
  leaf('max_size', 'Configured maximum size of the cache in bytes.', (s) => s.maxSize, 'gauge'),
  leaf('cold', 'Whether the cache loader is still loading data from disk (1) or not (0).', (s) => s.cold, 'gauge'),
  ...Object.entries(statuses).map(([status, counters]) => group(status, Object.values(counters))),
]);

export interface CacheShardSource extends Counted {
  readonly maxSize?: number;
  readonly cold: boolean;
}

const shardLayout = new Layout<CacheShardSource>();
const shardSize = shardLayout.gauge('size', 'Current size of the cache shard in bytes.');

export const cacheShardFields: Group<CacheShardSource> = group('', [
  shardSize,
  leaf('max_size', 'Configured maximum size of the cache shard in bytes.', (s) => s.maxSize, 'gauge'),
  leaf('cold', 'Whether the cache loader is still loading the shard from disk (1) or not (0).', (s) => s.cold, 'gauge'),
]);

// Keys in the cache's zone. A shard's path is a key's tail: any character may follow.
const KEY = 'cache';
const COLD = 'cache/cold';
const shardKey = (path: string) => `cache/shards/${path}`;
const shardColdKey = (path: string) => `cache/shards-cold/${path}`;

const block = (status: StatusStore, cache: string) => status.gauges(cache, KEY, layout.size);
const coldCell = (status: StatusStore, cache: string) => status.cells(cache, COLD, 1);
const shardBlock = (status: StatusStore, cache: string, path: string) => status.gauges(cache, shardKey(path), shardLayout.size);
const shardColdCell = (status: StatusStore, cache: string, path: string) => status.cells(cache, shardColdKey(path), 1);

interface Shard {
  readonly block: GaugeBlock;
  readonly cold: AtomicCells;
}

/** What a worker calls as its cache serves responses and its loader and manager work. */
export class Cache {
  private readonly shards = new Map<string, Shard>();

  constructor(
    private readonly status: StatusStore,
    private readonly name: string,
    private readonly block: GaugeBlock,
    private readonly cold: AtomicCells,
  ) {}

  /** A response went out with cache status `status`, `bytes` of it read from the cache
   * (hit, stale, updating, revalidated) or from the proxied server (miss, expired,
   * bypass: every body byte read, whether the response was written to the cache or not).
   * `written`: for miss, expired and bypass, the bytes written to the cache, when the
   * response was written to it (0 counts as a response written). */
  served(status: CacheStatus, bytes: number, written?: number): void {
    const s = statuses[status];
    this.block.add(s.responses.index);
    this.block.add(s.bytes.index, bytes);
    if (written !== undefined && 'bytes_written' in s) {
      this.block.add(s.responses_written.index);
      this.block.add(s.bytes_written.index, written);
    }
  }

  /** The cache grew (delta > 0) or shrank (delta < 0) by `delta` bytes: in the shard at
   * `shardPath` when given, which also counts in the cache's size. */
  sizeChanged(delta: number, shardPath?: string): void {
    if (delta >= 0) this.block.add(size.index, delta);
    else this.block.sub(size.index, -delta);
    if (shardPath === undefined) return;
    const shard = this.shard(shardPath).block;
    if (delta >= 0) shard.add(shardSize.index, delta);
    else shard.sub(shardSize.index, -delta);
  }

  /** Marks the cache (or the shard at `shardPath`) as being loaded from disk, or done. */
  setCold(cold: boolean, shardPath?: string): void {
    (shardPath === undefined ? this.cold : this.shard(shardPath).cold).store(0, cold ? 1 : 0);
  }

  private shard(path: string): Shard {
    let s = this.shards.get(path);
    if (!s) {
      s = { block: shardBlock(this.status, this.name, path), cold: shardColdCell(this.status, this.name, path) };
      this.shards.set(path, s);
    }
    return s;
  }
}

export function cache(status: StatusStore, name: string): Cache {
  return new Cache(status, name, block(status, name), coldCell(status, name));
}

function shardSource(status: StatusStore, c: CacheConfig, shard: CacheShardConfig): CacheShardSource {
  return {
    sums: shardBlock(status, c.name, shard.path).sums(),
    maxSize: shard.maxSize,
    cold: shardColdCell(status, c.name, shard.path).load(0) !== 0,
  };
}

/** One cache: its declared fields, and `shards` when sharding is configured. */
function cacheNode(status: StatusStore, c: CacheConfig): StatusNode {
  const shards = c.shards ?? [];
  const cold = coldCell(status, c.name).load(0) !== 0 || shards.some((s) => shardColdCell(status, c.name, s.path).load(0) !== 0);
  const declared = new FieldNode(cacheFields, { sums: block(status, c.name).sums(), maxSize: c.maxSize, cold }, true);
  if (shards.length === 0) return declared;
  const shardsNode = collection(
    'shard',
    () => shards,
    (s: CacheShardConfig) => s.path,
    (s: CacheShardConfig): StatusNode => new FieldNode(cacheShardFields, shardSource(status, c, s)),
  );
  return new ObjectNode(
    (ctx) => [...declared.members(ctx), ['shards', shardsNode]],
    (name, ctx) => (name === 'shards' ? shardsNode : declared.child(name, ctx)),
    // Not flat, as an upstream: its shards are instances, labelled by path.
  );
}

export function cachesNode(status: StatusStore): StatusNode {
  return collection(
    'zone',
    () => status.catalog().http?.caches ?? [],
    (c: CacheConfig) => c.name,
    (c: CacheConfig) => cacheNode(status, c),
  );
}

export const caches = { fields: cacheFields, recorder: cache, node: cachesNode };
