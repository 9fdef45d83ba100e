// The proxy cache's keys in a zone: nginx's lookup states, the updating flag, sizes,
// LRU eviction by the manager and by a full zone, and the table's invariants throughout.
import { createHash } from 'node:crypto';
import t from 'tap';
import { CacheLookupState as S, Zone } from '../../src/engine/index.js';
import { start, uniqueName } from '../helpers.js';

const md5 = (s: string) => createHash('md5').update(s).digest();

t.test('miss, store, hit, expiry with the updating flag, refresh and forget', async (t) => {
  const zone = Zone.create(uniqueName('ckeys'), { size: 64 * 4096, workers: 1 });
  const keys = zone.cacheKeys('cache/keys');
  const k = md5('/a');
  let l = keys.lookup(k, 1000, 1, 5000);
  t.same([l.state, l.store], [S.Miss, true], 'a new key is a miss that may be stored');
  t.equal(keys.lookup(k, 1001, 1, 5000).state, S.MissLocked, 'a second request waits for the first (proxy_cache_lock)');
  t.equal(keys.lookup(k, 7000, 1, 5000).state, S.Miss, 'a lock past its time is taken again');
  const stored = keys.store(k, 7001, 10_000, 300, 0);
  t.same([stored.delta, stored.version], [300, 1]);
  l = keys.lookup(k, 8000, 1, 5000);
  t.same([l.state, l.size, l.version, l.validUntil], [S.Hit, 300, 1, 10_000]);
  t.equal(keys.lookup(k, 10_000, 1, 5000).state, S.Expired, 'expired: this request updates it');
  t.equal(keys.lookup(k, 10_001, 1, 5000).state, S.Updating, 'another one finds it updating');
  t.ok(keys.refresh(k, 20_000), 'a 304 makes it valid again');
  t.equal(keys.lookup(k, 10_002, 1, 5000).state, S.Hit);
  t.equal(keys.store(k, 10_003, 30_000, 100, 0).delta, -200, 'a smaller body shrinks the cache');
  t.same(keys.sizes().size, 100);
  t.equal(keys.forget(k), -100);
  t.same([keys.sizes().size, keys.sizes().nodes], [0, 0]);
  t.equal(keys.check(), '');
  zone.remove();
});

t.test('without proxy_cache_lock a new key takes no updating flag; an expired entry still does', async (t) => {
  const zone = Zone.create(uniqueName('ckeys'), { size: 64 * 4096, workers: 1 });
  const keys = zone.cacheKeys('cache/keys');
  const k = md5('/unlocked');
  t.same([keys.lookup(k, 1000, 1, 5000, false).state, keys.lookup(k, 1000, 1, 5000, false).state], [S.Miss, S.Miss], 'two misses fetch alike');
  t.same(keys.lookup(k, 1001, 1, 5000, false).store, true, 'each may store');
  keys.store(k, 1002, 2000, 10, 0);
  t.equal(keys.lookup(k, 3000, 1, 5000, false).state, S.Expired, 'expired: this request updates it');
  t.equal(keys.lookup(k, 3001, 1, 5000, false).state, S.Updating, 'and the next one knows');
  t.equal(keys.check(), '');
  zone.remove();
});

t.test('min_uses: stored only from the Nth use; release lets the next request fetch', async (t) => {
  const zone = Zone.create(uniqueName('ckeys'), { size: 64 * 4096, workers: 1 });
  const keys = zone.cacheKeys('cache/keys');
  const k = md5('/b');
  t.same(keys.lookup(k, 1, 3, 1000).store, false);
  t.same(keys.lookup(k, 2, 3, 1000).store, false);
  t.same(keys.lookup(k, 3, 3, 1000).store, true, 'third use');
  t.equal(keys.lookup(k, 4, 3, 1000).state, S.MissLocked);
  keys.release(k);
  t.equal(keys.lookup(k, 5, 3, 1000).state, S.Miss, 'released');
  zone.remove();
});

t.test('the manager evicts idle entries, then LRU ones above max size, per shard too', async (t) => {
  const zone = Zone.create(uniqueName('ckeys'), { size: 64 * 4096, workers: 1 });
  const keys = zone.cacheKeys('cache/keys');
  for (let i = 0; i < 10; i++) {
    keys.lookup(md5(`/${i}`), 100 + i, 1, 0);
    keys.store(md5(`/${i}`), 100 + i, 1e12, 1000, i % 2);
  }
  keys.lookup(md5('/0'), 200, 1, 0); // /0 is now the most recently used
  t.same(keys.sizes().shards.slice(0, 2), [5000, 5000]);
  let evicted = keys.expire(300, 1e9, 6000, new Float64Array(0), 100);
  t.same(evicted.map((e) => e.key.toString('hex')), ['/1', '/2', '/3', '/4'].map((k) => md5(k).toString('hex')), 'least recently used first, down to max_size');
  t.equal(keys.sizes().size, 6000);
  evicted = keys.expire(300, 1e9, 0, new Float64Array([0, 1000]), 100);
  t.same(evicted.map((e) => e.shard), [1, 1], 'shard 1 (/5, /7, /9: 3000) goes down to its 1000');
  evicted = keys.expire(10_000, 5000, 0, new Float64Array(0), 100);
  t.equal(evicted.length, 4, 'the rest (/0, /6, /8 and /9) is idle for inactive');
  t.same(keys.sizes().size, 0);
  t.equal(keys.check(), '');
  zone.remove();
});

t.test('a full zone evicts the least recently used entry that nobody updates', async (t) => {
  const zone = Zone.create(uniqueName('ckeys'), { size: 8 * 4096, workers: 1 });
  const keys = zone.cacheKeys('cache/keys');
  let evictions = 0;
  for (let i = 0; i < 2000; i++) {
    const l = keys.lookup(md5(`/f${i}`), i, 1, 0);
    t.not(l.state, S.Exhausted);
    evictions += l.evicted.length;
    evictions += keys.store(md5(`/f${i}`), i, 1e12, 10, 0).evicted.length;
  }
  t.ok(evictions > 0, `${evictions} evictions`);
  const { size, nodes } = keys.sizes();
  t.equal(size, nodes * 10, 'sizes follow the evictions');
  t.equal(keys.lookup(md5('/f1999'), 3000, 1, 0).state, S.Hit, 'the newest stays');
  t.equal(keys.check(), '');
  zone.remove();
});

// A worker killed in the middle of any cache call leaves the keys as they were.
for (const op of ['lookup', 'store', 'expire', 'forget'])
  t.test(`SIGKILL at every write of a cache ${op}: rolled back`, async (t) => {
    const name = uniqueName('ckill');
    const zone = Zone.create(name, { size: 64 * 4096, workers: 2 });
    const keys = zone.cacheKeys('cache/keys');
    for (let i = 0; i < 10; i++) {
      keys.lookup(md5(`/k${i}`), 100 + i, 1, 0);
      keys.store(md5(`/k${i}`), 100 + i, 50_000, 100 + i, 0);
    }
    const snapshot = () => JSON.stringify({ slab: zone.slabStats(), sizes: keys.sizes(), states: Array.from({ length: 10 }, (_, i) => keys.lookup(md5(`/k${i}`), 0, 1000, 0).version) });
    // lookup() above counts a use and touches the LRU: take the snapshot as the state.
    const before = snapshot();
    let completedAt = 0;
    for (let writes = 1; writes <= 400 && !completedAt; writes++) {
      const child = start('cache-stall.mjs', [zone.instance, name, op, String(writes)]);
      const outcome = await Promise.race([child.stderrLine(/stalled/).then(() => 'stalled'), child.line(/completed/).then(() => 'completed')]);
      if (outcome === 'completed') {
        completedAt = writes;
        await child.exit();
        break;
      }
      child.proc.kill('SIGKILL');
      await child.exit();
      const problem = keys.check();
      const now = snapshot();
      // snapshot() itself counts uses and moves the LRU order, the same way each time:
      // sizes, slab and versions are what only the killed call could change.
      if (problem !== '' || now !== before) {
        t.fail(`killed after ${writes} writes: ${problem || 'state differs from before'}`);
        break;
      }
    }
    t.ok(completedAt > 1, `every kill before the call completed (${completedAt - 1} write points) was rolled back`);
    t.equal(keys.check(), '', 'consistent after the completed call');
    zone.remove();
  });
