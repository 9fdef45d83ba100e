import { group, leaf, Layout } from './shape.js';
import { collection, FieldNode, ObjectNode } from './tree.js';
const layout = new Layout();
const size = layout.gauge('size', 'Current size of the cache in bytes.');
/** A cache status served from (or past) the cache: responses and bytes read. */
function read(what) {
    return {
        responses: layout.counter('responses', `${what}: responses read from the cache.`),
        bytes: layout.counter('bytes', `${what}: bytes read from the cache.`),
    };
}
/** A cache status not served from the cache: responses and bytes read from the proxied
 * server, and what of them was written to the cache. */
function fetched(what) {
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
export const cacheFields = group('', [
    size,
    leaf('max_size', 'Configured maximum size of the cache in bytes.', (s) => s.maxSize, 'gauge'),
    leaf('cold', 'Whether the cache loader is still loading data from disk (1) or not (0).', (s) => s.cold, 'gauge'),
    ...Object.entries(statuses).map(([status, counters]) => group(status, Object.values(counters))),
]);
const shardLayout = new Layout();
const shardSize = shardLayout.gauge('size', 'Current size of the cache shard in bytes.');
export const cacheShardFields = group('', [
    shardSize,
    leaf('max_size', 'Configured maximum size of the cache shard in bytes.', (s) => s.maxSize, 'gauge'),
    leaf('cold', 'Whether the cache loader is still loading the shard from disk (1) or not (0).', (s) => s.cold, 'gauge'),
]);
// Keys in the cache's zone. A shard's path is a key's tail: any character may follow.
const KEY = 'cache';
const COLD = 'cache/cold';
const shardKey = (path) => `cache/shards/${path}`;
const shardColdKey = (path) => `cache/shards-cold/${path}`;
const block = (status, cache) => status.gauges(cache, KEY, layout.size);
const coldCell = (status, cache) => status.cells(cache, COLD, 1);
const shardBlock = (status, cache, path) => status.gauges(cache, shardKey(path), shardLayout.size);
const shardColdCell = (status, cache, path) => status.cells(cache, shardColdKey(path), 1);
/** What a worker calls as its cache serves responses and its loader and manager work. */
export class Cache {
    constructor(status, name, block, cold) {
        this.status = status;
        this.name = name;
        this.block = block;
        this.cold = cold;
        this.shards = new Map();
    }
    /** A response went out with cache status `status`, `bytes` of it read from the cache
     * (hit, stale, updating, revalidated) or from the proxied server (miss, expired,
     * bypass). `written`: for miss, expired and bypass, the bytes written to the cache,
     * when the response was written to it (0 counts as a response written). */
    served(status, bytes, written) {
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
    sizeChanged(delta, shardPath) {
        if (delta >= 0)
            this.block.add(size.index, delta);
        else
            this.block.sub(size.index, -delta);
        if (shardPath === undefined)
            return;
        const shard = this.shard(shardPath).block;
        if (delta >= 0)
            shard.add(shardSize.index, delta);
        else
            shard.sub(shardSize.index, -delta);
    }
    /** Marks the cache (or the shard at `shardPath`) as being loaded from disk, or done. */
    setCold(cold, shardPath) {
        (shardPath === undefined ? this.cold : this.shard(shardPath).cold).store(0, cold ? 1 : 0);
    }
    shard(path) {
        let s = this.shards.get(path);
        if (!s) {
            s = { block: shardBlock(this.status, this.name, path), cold: shardColdCell(this.status, this.name, path) };
            this.shards.set(path, s);
        }
        return s;
    }
}
export function cache(status, name) {
    return new Cache(status, name, block(status, name), coldCell(status, name));
}
function shardSource(status, c, shard) {
    return {
        sums: shardBlock(status, c.name, shard.path).values(),
        maxSize: shard.maxSize,
        cold: shardColdCell(status, c.name, shard.path).load(0) !== 0,
    };
}
/** One cache: its declared fields, and `shards` when sharding is configured. */
function cacheNode(status, c) {
    const shards = c.shards ?? [];
    const cold = coldCell(status, c.name).load(0) !== 0 || shards.some((s) => shardColdCell(status, c.name, s.path).load(0) !== 0);
    const declared = new FieldNode(cacheFields, { sums: block(status, c.name).values(), maxSize: c.maxSize, cold }, true);
    if (shards.length === 0)
        return declared;
    const shardsNode = collection('shard', () => shards, (s) => s.path, (s) => new FieldNode(cacheShardFields, shardSource(status, c, s)));
    return new ObjectNode((ctx) => [...declared.members(ctx), ['shards', shardsNode]], (name, ctx) => (name === 'shards' ? shardsNode : declared.child(name, ctx)), undefined, true);
}
export function cachesNode(status) {
    return collection('zone', () => status.catalog().http?.caches ?? [], (c) => c.name, (c) => cacheNode(status, c));
}
export const caches = { fields: cacheFields, recorder: cache, node: cachesNode };
//# sourceMappingURL=caches.js.map