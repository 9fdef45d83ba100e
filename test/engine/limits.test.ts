// Keyed limit tables (native/limit.cc): nginx's leaky bucket and connection counts, one
// state for all processes, consistent after a process killed in the middle of a call.
import t from 'tap';
import { LIMIT_BUSY, LIMIT_EXHAUSTED, LimitReqMode, Zone } from '../../src/engine/index.js';
import { start, uniqueName } from '../helpers.js';

const RATE_10 = 10_000; // 10 r/s in milli-requests

t.test('limit_req: nginx leaky bucket arithmetic, to the millisecond', async (t) => {
  const zone = Zone.create(uniqueName('lr'), { size: 64 * 4096, workers: 2 });
  t.teardown(() => zone.remove());
  const table = zone.limitReqTable('http/limit_reqs/keys');
  t.equal(table.take('a', RATE_10, 0, LimitReqMode.Charge, 1000), 0, 'a new key passes with an empty bucket');
  t.equal(table.take('a', RATE_10, 0, LimitReqMode.Charge, 1000), LIMIT_BUSY, 'at once again: one request over, no burst');
  t.equal(table.take('a', RATE_10, 0, LimitReqMode.Charge, 1099), LIMIT_BUSY, '99 ms later the bucket still holds 10 milli-requests');
  t.equal(table.take('a', RATE_10, 0, LimitReqMode.Charge, 1100), 0, '100 ms later: leaked');
  t.equal(table.peek('a'), 0);

  // burst=3: three more at once are within it, the fourth is not.
  t.equal(table.take('b', RATE_10, 3000, LimitReqMode.Charge, 2000), 0);
  t.same([1, 2, 3, 4].map(() => table.take('b', RATE_10, 3000, LimitReqMode.Charge, 2000)), [1000, 2000, 3000, LIMIT_BUSY]);
  t.equal(table.peek('b'), 3000, 'a rejected request is not charged');
  t.equal(table.take('b', RATE_10, 3000, LimitReqMode.Charge, 2050), LIMIT_BUSY, '50 ms leak 500, the request would add 1000: 3500');
  t.equal(table.take('b', RATE_10, 3000, LimitReqMode.Charge, 2100), 3000, '100 ms leak 1000, the request adds 1000');

  // Look decides without charging; Account charges without checking the burst.
  t.equal(table.take('c', RATE_10, 0, LimitReqMode.Look, 3000), 0, 'a look makes the key');
  t.equal(table.take('c', RATE_10, 0, LimitReqMode.Account, 3000), 0, 'its account finds the bucket empty, as nginx');
  t.equal(table.take('c', RATE_10, 0, LimitReqMode.Look, 3000), LIMIT_BUSY);
  t.equal(table.take('c', RATE_10, 0, LimitReqMode.Account, 3000), 1000, 'account charges over the burst');
  t.equal(table.take('c', RATE_10, 0, LimitReqMode.Look, 3150), LIMIT_BUSY, '150 ms leak 1500 of 2000');
  t.equal(table.take('c', RATE_10, 0, LimitReqMode.Look, 3200), 0, '200 ms: room for one');
  t.equal(table.peek('c'), 1000, 'a look charged nothing');

  t.equal(table.take(Buffer.from([127, 0, 0, 1]), RATE_10, 0, LimitReqMode.Charge, 1000), 0, 'binary keys');
  t.equal(table.peek(Buffer.from([127, 0, 0, 1])), 0);
  t.equal(table.peek(Buffer.from([127, 0, 0, 2])), -1);
  t.equal(table.take('€'.repeat(200), RATE_10, 0, LimitReqMode.Charge, 1000), 0, 'a long UTF-8 key');
  t.equal(table.take('€'.repeat(200), RATE_10, 0, LimitReqMode.Charge, 1000), LIMIT_BUSY, 'is found again');
  t.equal(table.check(), '');
  t.equal(table.size, 5);
  t.throws(() => table.take('x', 0, 0), /rate/, 'a zero rate is refused');
  t.throws(() => table.take(42 as unknown as string, 1, 0), /key must be/);
  t.throws(() => zone.limitConnTable('http/limit_reqs/keys'), /another kind/, 'a table keeps its kind');
});

t.test('limit_req: idle keys expire as nginx, and a full zone evicts the oldest', async (t) => {
  const zone = Zone.create(uniqueName('lrx'), { size: 8 * 4096, workers: 1 });
  t.teardown(() => zone.remove());
  const table = zone.limitReqTable('k');
  for (let i = 0; i < 10; i++) table.take(`idle-${i}`, RATE_10, 0, LimitReqMode.Charge, 1000);
  t.equal(table.size, 10);
  table.take('late', RATE_10, 0, LimitReqMode.Charge, 62_000);
  t.equal(table.size, 9, 'a new key removes two entries idle for a minute and leaked empty');
  t.equal(table.peek('idle-0'), -1, 'the least recently used first');
  t.equal(table.peek('idle-2'), 0);

  // Fill the zone with same-sized keys: each new one past the full zone evicts the oldest.
  let evicted = 0;
  for (let i = 0; i < 2000; i++) {
    const before = table.size;
    t.not(table.take(`k${String(i).padStart(5, '0')}`, RATE_10, 0, LimitReqMode.Charge, 63_000), LIMIT_EXHAUSTED);
    if (table.size <= before) evicted++;
  }
  t.ok(evicted > 0, `${evicted} keys went in by evicting the least recently used`);
  t.equal(table.check(), '');
  // A key needing a larger slot finds no free page: the oldest small nodes free none.
  t.equal(table.take('x'.repeat(300), RATE_10, 0, LimitReqMode.Charge, 63_000), LIMIT_EXHAUSTED, 'no room: exhausted');
  t.equal(table.check(), '');
  t.ok((zone.slabStats().slots['512']?.fails ?? 0) > 0, 'the failure shows in the slab statistics');
});

t.test('limit_conn: counts per key, held per worker slot, repaired per slot', async (t) => {
  const zone = Zone.create(uniqueName('lc'), { size: 16 * 4096, workers: 4 });
  t.teardown(() => zone.remove());
  const table = zone.limitConnTable('http/limit_conns/keys');
  t.same([0, 1].map(() => table.acquire('a', 3, 0)), [1, 1]);
  t.equal(table.acquire('a', 3, 1), 1);
  t.equal(table.acquire('a', 3, 2), 0, 'the fourth is over 3, from any slot');
  t.equal(table.peek('a'), 3);
  t.equal(table.release('a', 2), false, 'slot 2 holds nothing of it');
  t.equal(table.release('a', 0), true);
  t.equal(table.acquire('a', 3, 2), 1);
  t.equal(table.acquire('b', 0, 1), 1, 'limit 0: no limit');
  t.equal(table.check(), '');
  t.equal(table.repair(1), 2, 'slot 1 held one of a and one of b');
  t.equal(table.peek('a'), 2);
  t.equal(table.peek('b'), 0, 'a key nobody holds stays, idle, for its next request');
  t.ok(table.release('a', 0));
  t.ok(table.release('a', 2));
  t.equal(table.peek('a'), 0, 'every count given back');
  t.equal(table.size, 2, 'both keys idle');
  t.equal(table.check(), '');
  t.equal(table.acquire('a', 1, 2), 1, 'an idle key is taken again');
  t.equal(table.check(), '');
  t.ok(table.release('a', 2));

  // No room: many keys held at once in a small zone; the idle keys make room first.
  let exhausted = 0;
  let held = 0;
  for (let i = 0; i < 2000 && !exhausted; i++) {
    const r = table.acquire(`key-${i}`, 1, 3);
    if (r === -1) exhausted++;
    else held++;
  }
  t.equal(exhausted, 1, 'a key the zone has no room for is refused');
  t.equal(table.peek('a'), -1, 'the idle keys were reclaimed for held ones');
  t.equal(table.check(), '');
  t.equal(table.repair(3), held, 'the repair ends every hold of the slot');
  t.equal(table.size, held, 'their keys stay, idle');
  t.equal(table.check(), '');
  // Keys taken and given back one after another: far more than the zone holds, each new
  // one finds room by reclaiming the least recently idle.
  let refused = 0;
  for (let i = 0; i < 3000; i++) {
    if (table.acquire(`once-${i}`, 1, 0) !== 1) refused++;
    else table.release(`once-${i}`, 0);
  }
  t.equal(refused, 0, 'idle keys never make a new one exhausted');
  t.ok(table.size < 3000, `the table keeps ${table.size} keys`);
  t.equal(table.peek('once-0'), -1, 'the least recently idle went first');
  t.equal(table.peek('once-2999'), 0);
  t.equal(table.check(), '');
  t.throws(() => table.acquire('a', 1, 4), /out of range/, 'a slot past the zone');
});

t.test('two processes, one bucket and one count: exact', async (t) => {
  const name = uniqueName('lr2');
  const zone = Zone.create(name, { size: 64 * 4096, workers: 4 });
  t.teardown(() => zone.remove());
  for (const kind of ['req', 'conn'] as const) {
    const key = `${kind}-table`;
    const takers = [0, 1].map(() => start('limit-taker.mjs', [zone.instance, name, kind, key, '20000', '5000']));
    await Promise.all(takers.map((c) => new Promise((resolve) => c.proc.once('message', resolve))));
    for (const c of takers) c.proc.send('go');
    const results = await Promise.all(takers.map(async (c) => JSON.parse(await c.line(/passed/)) as { passed: number; rejected: number }));
    const passed = results[0].passed + results[1].passed;
    t.equal(passed, kind === 'req' ? 51 : 7, `${kind}: ${results[0].passed} + ${results[1].passed} passed of 40000`);
    t.equal(results[0].rejected + results[1].rejected, 40_000 - passed);
    for (const c of takers) c.proc.send('exit');
    await Promise.all(takers.map((c) => c.exit()));
    if (kind === 'conn') {
      const table = zone.limitConnTable(key);
      t.equal(table.peek('one key'), 7, 'the dead processes still hold their counts');
      const repaired = [0, 1, 2, 3].reduce((n, slot) => n + table.repair(slot), 0);
      t.equal(repaired, results.filter((r) => r.passed > 0).length, 'the primary gives back what each slot held');
      t.equal(table.peek('one key'), 0, 'nothing held: the key is idle');
      t.equal(table.check(), '');
    }
  }
});

// Each operation killed after 1, 2, 3 ... logged writes: the table is as it was.
const sweeps: Array<{ name: string; op: string; kind: 'req' | 'conn'; setup(zone: Zone, offset: number): void }> = [
  { name: 'limit_req: a new key', op: 'limitReq', kind: 'req', setup: (z) => void z.limitReqTable('t').take('old', 1000, 0, 0, 1000) },
  { name: 'limit_req: a new key evicting idle ones', op: 'limitReq', kind: 'req', setup: (z) => {
    const table = z.limitReqTable('t');
    for (let i = 0; i < 5; i++) table.take(`idle-${i}`, 1000, 0, 0, 1);
  } },
  { name: 'limit_conn: a new key', op: 'limitAcquire', kind: 'conn', setup: (z) => void z.limitConnTable('t').acquire('held', 0, 0) },
  { name: 'limit_conn: the last release of a key', op: 'limitRelease', kind: 'conn', setup: (z) => void z.limitConnTable('t').acquire('held', 0, 1) },
  { name: 'limit_conn: repairing a dead slot', op: 'limitRepair', kind: 'conn', setup: (z) => {
    const table = z.limitConnTable('t');
    for (let i = 0; i < 3; i++) table.acquire(`k${i}`, 0, 1);
    table.acquire('k0', 0, 0);
  } },
];

for (const c of sweeps) {
  t.test(`SIGKILL at every write of ${c.name}`, async (t) => {
    const name = uniqueName('lsweep');
    const zone = Zone.create(name, { size: 64 * 4096, workers: 2 });
    t.teardown(() => zone.remove());
    const table = c.kind === 'req' ? zone.limitReqTable('t') : zone.limitConnTable('t');
    c.setup(zone, table.offset);
    const state = () => JSON.stringify({ slabs: zone.slabStats(), size: table.size, keys: ['new-key', 'held', 'k0', 'k1', 'old', 'idle-0'].map((k) => table.peek(k)) });
    const before = state();
    let completedAt = 0;
    for (let writes = 1; writes <= 200 && !completedAt; writes++) {
      const child = start('stall.mjs', [zone.instance, name, c.op, String(writes), String(table.offset)]);
      const outcome = await Promise.race([child.stderrLine(/stalled/).then(() => 'stalled'), child.line(/completed/).then(() => 'completed')]);
      if (outcome === 'completed') {
        completedAt = writes;
        await child.exit();
        break;
      }
      child.proc.kill('SIGKILL');
      await child.exit();
      const problem = table.check() || zone.check();
      if (problem !== '' || state() !== before) {
        t.fail(`killed after ${writes} writes: ${problem || 'state differs from before'}`);
        break;
      }
    }
    t.ok(completedAt > 1, `every kill before the call completed (${completedAt - 1} write points) was rolled back`);
    t.equal(table.check(), '');
    t.not(state(), before, 'the completed call took effect');
  });
}

t.test('a table offset that is none is refused, not read', async (t) => {
  const zone = Zone.create(uniqueName('lbad'), { size: 16 * 4096, workers: 1 });
  t.teardown(() => zone.remove());
  const native = (zone as unknown as { native: import('../../src/engine/native.js').NativeZone }).native;
  const table = zone.limitReqTable('t');
  for (const offset of [0, 8, table.offset + 8, zone.size * 4, 2 ** 52])
    for (const call of [() => native.limitPeek(offset, 'k'), () => native.limitNodes(offset), () => native.limitCheck(offset), () => native.limitReq(offset, 'k', 1, 0, 0)])
      t.throws(call, /not a limit table offset/, `offset ${offset}`);
  t.throws(() => native.limitConnAcquire(table.offset, 'k', 1, 0), /not a connection limit table/);
  t.throws(() => native.limitReq(table.offset, 'k', 1000, 0, 3), /mode/);
  t.throws(() => native.limitReq(table.offset, 'k', '1000' as unknown as number, 0, 0), /rate must be a number/);
  t.equal(table.check(), '');
});
