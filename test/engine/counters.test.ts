import t, { type Test } from 'tap';
import { Histogram, histogramLength, inReadPass, Zone } from '../../src/engine/index.js';
import { strideOf } from '../../src/engine/counters.js';
import { start, uniqueName, type Child } from '../helpers.js';

// The recent word of this process's shard of counter 0 in a one-counter block (shards
// are 64 bytes apart, recent words after two header words), read straight from memory.
function rawRecent(zone: Zone, c: { offset: number; slot: number }): number {
  return new Float64Array(zone.block('raw-view', 8).buffer)[c.offset / 8 + c.slot * 8 + 2];
}

const RECORDS = 5_000_000;

// What count.ts adds per process, as exact 64-bit sums.
function expected(records: number, carry: boolean): bigint[] {
  const e = new Array<bigint>(12).fill(0n);
  for (let code = 1; code <= 3; code++) {
    const times = BigInt(Math.floor(records / 3) + (code <= records % 3 ? 1 : 0));
    e[code] += times;
    e[6 + code] += times;
  }
  e[0] = BigInt(records);
  e[6] = BigInt(records);
  let bytes = 0n;
  for (let r = 0; r < records; r++) bytes += BigInt(r & 1023);
  e[4] = bytes;
  e[5] = 7n * BigInt(records);
  e[10] = 3n * BigInt(records);
  e[11] = 1_000_003n * BigInt(records);
  if (carry) for (let i = 0; i < 12; i++) e[i] += 2n ** 52n - 1000n;
  return e;
}

async function race(t: Test, processes: number, carry: boolean) {
  const name = uniqueName('count');
  const zone = Zone.create(name, { size: 1 << 20, workers: processes, writer: false });
  const block = zone.counters('record', 12);
  const children = Array.from({ length: processes }, (_, slot) =>
    start('count.ts', [name, String(slot), String(RECORDS), carry ? 'fold' : '']),
  );
  await Promise.all(children.map((c) => new Promise((resolve) => c.proc.once('message', resolve))));
  children.forEach((c) => c.proc.send('go'));

  // Read while they write: a sum must never go backwards (a torn fold would).
  let reads = 0;
  let backwards = 0;
  const last = new Array<number>(12).fill(0);
  const running = () => children.some((c) => c.proc.exitCode === null);
  const deadline = Date.now() + 120_000;
  while (running() && Date.now() < deadline) {
    for (let i = 0; i < 12; i++) {
      const v = block.value(i);
      if (v < last[i]) backwards++;
      last[i] = v;
    }
    reads++;
    await new Promise((r) => setImmediate(r));
  }
  for (const c of children) t.equal(await c.exit(), 0, 'counting process exited cleanly');
  t.equal(backwards, 0, `no sum went backwards over ${reads} concurrent reads`);

  const want = expected(RECORDS, carry).map((v) => v * BigInt(processes));
  for (let i = 0; i < 12; i++) t.equal(block.get(i), want[i], `counter ${i} is exact`);
  if (!carry) t.same(Array.from(block.values()), want.map(Number), 'values() agrees with get()');
  zone.remove();
  zone.detach();
}

t.test('two processes, 5 million records each: exact sums', (t) => race(t, 2, false));
t.test('three processes folding past 2^52 while a reader watches: exact and monotonic', (t) => race(t, 3, true));

t.test('a counter stays exact past 2^52, 2^53 and 2^64', async (t) => {
  const zone = Zone.create(uniqueName('wide'), { size: 1 << 16, workers: 2 });
  const c = zone.counters('c', 2);
  c.add(0, 2 ** 52 - 1);
  c.add(0);
  t.ok(c.fold(), 'fold runs on an attached zone');
  t.equal(c.get(0), 2n ** 52n);
  c.add(0, 2 ** 52 - 1);
  c.fold();
  c.add(0, 2 ** 52);
  c.add(0, 3);
  t.equal(c.get(0), 3n * 2n ** 52n + 2n, 'past 2^53: the folded part is in the base word');
  c.fold();
  t.equal(c.get(0), 3n * 2n ** 52n + 2n, 'folding changes no value');
  c.addLarge(0, 2n ** 64n - 3n * 2n ** 52n);
  t.equal(c.get(0), 2n, 'counters wrap at 2^64 like any u64');
  t.equal(c.get(1), 0n, 'the neighbour is untouched');
  t.throws(() => c.addLarge(1, 0.5), RangeError, 'a fraction is refused');
  zone.remove();
});

t.test('the fold timer keeps recent words below 2^52 on its own', async (t) => {
  const zone = Zone.create(uniqueName('timer'), { size: 1 << 16, workers: 1 });
  const c = zone.counters('c', 1);
  c.add(0, 2 ** 52 + 5);
  t.equal(rawRecent(zone, c), 2 ** 52 + 5, 'not folded yet');
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && rawRecent(zone, c) >= 2 ** 52) await new Promise((r) => setTimeout(r, 100));
  t.ok(rawRecent(zone, c) < 2 ** 52, 'the timer folded within a few seconds');
  t.equal(c.get(0), 2n ** 52n + 5n, 'and the value is unchanged');
  zone.remove();
});

t.test('a process that does not write has no shard', async (t) => {
  const name = uniqueName('reader');
  const zone = Zone.create(name, { size: 1 << 16, workers: 1, writer: false });
  const c = zone.counters('c', 2);
  t.equal(c.slot, -1);
  t.equal(zone.workerSlot(), -1, 'no slot was claimed');
  c.add(0, 5);
  t.equal(c.value(0), 0, 'its add() goes nowhere');
  t.throws(() => c.addLarge(0, 1), /writer: false/);
  const writer = Zone.attach(name).counters('c', 2);
  writer.add(1, 9);
  t.equal(c.value(1), 9, 'it reads what writers write');
  zone.remove();
});

t.test('gauges go below zero per shard and sum right', async (t) => {
  const zone = Zone.create(uniqueName('gauge'), { size: 1 << 16, workers: 2 });
  const g = zone.gauges('g', 3);
  g.add(0, 5);
  g.sub(0, 7);
  t.equal(g.get(0), -2n);
  t.equal(g.value(0), -2);
  g.sub(1, 2 ** 40);
  g.add(1, 2 ** 40 + 1);
  t.equal(g.value(1), 1);
  t.same(Array.from(g.values()), [-2, 1, 0]);
  zone.remove();
});

t.test('blocks are found by key from another process, each shard on its own cache lines', async (t) => {
  const zone = Zone.create(uniqueName('key'), { size: 1 << 16, workers: 4 });
  const a = zone.counters('a', 3);
  const again = zone.counters('a', 3);
  t.equal(again.offset, a.offset, 'the same key is the same block');
  t.equal(a.offset % 64, 0, 'the block starts on a cache line');
  t.throws(() => zone.counters('a', 40), /key "a" holds a counter block of \d+ bytes, not a counter block of \d+/, 'another size under the key is refused');
  t.throws(() => zone.cells('a', 3), /not a cell block/);
  t.throws(() => zone.counters('b', 0), RangeError);
  zone.remove();
});

t.test('a fold interrupted by a dying writer: readers read around it, the next owner finishes it', async (t) => {
  const name = uniqueName('journal');
  const zone = Zone.create(name, { size: 1 << 16, workers: 2, writer: false });
  const reader = zone.counters('c', 2);
  // Shard 0 of a two-counter block: sequence word 0 (its upper half the journal's counter
  // index), move count 1, recent 2-3, base 4-5, journal 6-9. Stage a fold of counter 0
  // that stored the new base and died before taking 2^52 off the recent word.
  const buffer = zone.block('raw', 8).buffer as ArrayBuffer;
  const w = reader.offset / 8;
  const f64 = new Float64Array(buffer);
  const u64 = new BigUint64Array(buffer);
  const i32 = new Int32Array(buffer);
  f64[w + 3] = 7;
  u64[w + 6] = 0n;
  f64[w + 7] = 2 ** 52 + 100;
  u64[w + 8] = 2n ** 52n;
  f64[w + 9] = 2 ** 52;
  i32[w * 2 + 1] = 0;
  i32[w * 2] = 1; // odd: a move in progress
  f64[w + 1] = 1; // counted before the base was stored
  u64[w + 4] = 2n ** 52n;
  f64[w + 2] = 2 ** 52 + 100;
  t.equal(reader.get(0), 2n ** 52n + 100n, 'get() reads the value from before the move');
  t.equal(reader.value(0), 2 ** 52 + 100, 'value() too');
  t.equal(reader.values()[0], 2 ** 52 + 100, 'values() too');
  t.equal(reader.value(1), 7, 'the other counter of the shard reads as it is');
  const next = Zone.attach(name, { instance: zone.instance });
  const writer = next.counters('c', 2);
  t.equal(writer.slot, 0, 'the next writer took the slot');
  t.equal(i32[w * 2] & 1, 0, 'and finished the move');
  t.equal(f64[w + 2], 100, 'the recent word lost the 2^52');
  t.equal(u64[w + 4], 2n ** 52n, 'the base word kept it');
  t.equal(reader.get(0), 2n ** 52n + 100n, 'the value is the same');
  zone.remove();
});

t.test("another shard's value: read and set by a process standing in for its dead owner", async (t) => {
  const name = uniqueName('dead');
  const zone = Zone.create(name, { size: 1 << 20, workers: 2, writer: false });
  const block = zone.counters('record', 12);
  // A writer in slot 1 counts 60,000 records from just below 2^52, folding on the way
  // (so its shard has base words), and exits: its shard has no writer any more.
  const child = start('count.ts', [name, '1', '60000', 'fold']);
  await new Promise((resolve) => child.proc.once('message', resolve));
  child.proc.send('go');
  t.equal(await child.exit(), 0);
  const start0 = 2 ** 52 - 1000;
  t.equal(block.shardValue(1, 0), start0 + 60_000, 'the dead shard, base and recent words together');
  t.equal(block.shardValue(0, 0), 0, 'the other shard is empty');
  t.equal(block.shardValue(1, 5), start0 + 7 * 60_000);
  block.setShard(1, 0, 0);
  t.equal(block.get(0), 0n, 'set to zero, base word included');
  t.equal(block.shardValue(1, 0), 0);
  t.equal(block.get(5), BigInt(start0 + 7 * 60_000), 'its neighbours keep their values');
  block.setShard(1, 5, 12);
  t.equal(block.value(5), 12, 'set to any whole number');
  const all = block.values();
  t.same([all[0], all[5]], [0, 12], 'values() agrees');
  t.throws(() => block.shardValue(2, 0), RangeError, 'a shard the block does not have');
  t.throws(() => block.setShard(-1, 0, 0), RangeError);

  // A gauge shard below zero, set back by a non-writing process; its owner goes on
  // from the new value.
  const writer = Zone.attach(name, { instance: zone.instance });
  const g = writer.gauges('g', 2);
  g.sub(1, 3);
  const slot = g.slot;
  const reader = zone.gauges('g', 2);
  t.equal(reader.shardValue(slot, 1), -3, 'a gauge shard reads signed');
  reader.setShard(slot, 1, 0);
  t.equal(reader.get(1), 0n);
  g.add(1, 2);
  t.equal(reader.value(1), 2, "the owner's next change adds to what was set");
  writer.detach();
  zone.remove();
});

t.test('setShard first finishes a move the dead owner left half done', async (t) => {
  const zone = Zone.create(uniqueName('halfset'), { size: 1 << 16, workers: 2, writer: false });
  const c = zone.counters('c', 2);
  // As in the test above: shard 0's fold of counter 0 stored the new base and died.
  const buffer = zone.block('raw', 8).buffer as ArrayBuffer;
  const w = c.offset / 8;
  const f64 = new Float64Array(buffer);
  const u64 = new BigUint64Array(buffer);
  const i32 = new Int32Array(buffer);
  f64[w + 3] = 7;
  u64[w + 6] = 0n;
  f64[w + 7] = 2 ** 52 + 100;
  u64[w + 8] = 2n ** 52n;
  f64[w + 9] = 2 ** 52;
  i32[w * 2 + 1] = 0;
  i32[w * 2] = 1;
  f64[w + 1] = 1;
  u64[w + 4] = 2n ** 52n;
  f64[w + 2] = 2 ** 52 + 100;
  t.equal(c.shardValue(0, 0), 2 ** 52 + 100, 'read around the move');
  c.setShard(0, 1, 3);
  t.equal(i32[w * 2] & 1, 0, 'the move is finished, and the set is complete');
  t.equal(c.get(0), 2n ** 52n + 100n, 'the interrupted counter kept its value');
  t.equal(c.value(1), 3, 'the other counter was set');
  c.setShard(0, 0, 5);
  t.equal(u64[w + 4], 0n, 'the base word went back to zero');
  t.equal(c.get(0), 5n);
  zone.remove();
});

t.test("sums(): the block's own array, read again at each call", async (t) => {
  const zone = Zone.create(uniqueName('sums'), { size: 64 * 1024, workers: 2 });
  t.teardown(() => zone.remove());
  const block = zone.counters('s', 40);
  block.add(3, 5);
  const first = block.sums();
  t.equal(first.length, 40);
  t.equal(first[3], 5, 'the sum as values() gives it');
  block.add(3, 2);
  block.add(39, 1);
  const second = block.sums();
  t.equal(second, first, 'the same array: no allocation per read');
  t.same([second[3], second[39]], [7, 1], 'read again, not kept from the last call');
  t.same(Array.from(second), Array.from(block.values()), 'agrees with values()');
  const gauges = zone.gauges('g', 2);
  gauges.sub(1, 4);
  t.same(Array.from(gauges.sums()), [0, -4], 'gauges read signed');
});

// ---- Readers read only the shards of slots ever claimed for writing -------------------

/** What shard-writer.ts leaves in the blocks, summed over the slots that ran it. */
function written(slots: number[]) {
  const sum = (f: (s: number) => number) => slots.reduce((n, s) => n + f(s), 0);
  return {
    c: [sum((s) => 1000 + s), sum((s) => 2 ** 40 + s), slots.length],
    g: [-sum((s) => 10 + s), sum((s) => s)],
    max: 100 * (Math.max(...slots) + 1),
    mean: sum((s) => 10 * s * (s + 1)) / sum((s) => s + 1),
    buckets: [slots.length, slots.filter((s) => s <= 5).length, slots.filter((s) => s > 5).length],
    sumMs: sum((s) => 5.5 + s),
  };
}

/** The blocks shard-writer.ts writes, as a process that does not write sees them. */
function readers(zone: Zone) {
  return { c: zone.counters('c', 3), g: zone.gauges('g', 2), m: zone.counters('m', 3), h: new Histogram(zone.counters('h', histogramLength([1, 10])), [1, 10]) };
}

/** Every way of reading the blocks agrees with what the writers in `slots` wrote. */
function readsExactly(t: Test, r: ReturnType<typeof readers>, slots: number[], what: string): void {
  const want = written(slots);
  t.same(
    want.c.map((_, i) => r.c.get(i)),
    want.c.map(BigInt),
    `${what}: get()`,
  );
  t.same(
    want.c.map((_, i) => r.c.value(i)),
    want.c,
    `${what}: value()`,
  );
  t.same(Array.from(r.c.values()), want.c, `${what}: values()`);
  t.same(Array.from(r.c.sums()), want.c, `${what}: sums()`);
  t.same([r.g.get(0), r.g.get(1)], want.g.map(BigInt), `${what}: gauges, get()`);
  t.same(Array.from(r.g.sums()), want.g, `${what}: gauges, sums()`);
  t.equal(r.m.max(0), want.max, `${what}: max()`);
  t.equal(r.m.weightedMean(1, 2), want.mean, `${what}: weightedMean()`);
  const h = r.h.current();
  t.same([Array.from(h.buckets), h.count, h.sum], [want.buckets, 2 * slots.length, want.sumMs], `${what}: histogram`);
}

/** A zone of `workers` slots that no process of the test claims, removed after it, with
 * readers of its blocks. */
function unwrittenZone(t: Test, tag: string, workers = 8, size = 1 << 18) {
  const name = uniqueName(tag);
  const zone = Zone.create(name, { size, workers, writer: false });
  t.teardown(() => zone.remove());
  return { name, zone, r: readers(zone) };
}

/** A child process that claims `slot` of zone `name` and writes its shards, then does
 * `then`; killed after the test if it is still there. */
async function writeIn(t: Test, name: string, slot: number, then = ''): Promise<Child> {
  const child = start('shard-writer.ts', [name, String(slot), then]);
  t.teardown(() => child.proc.kill());
  await child.line(/^written$/);
  return child;
}

t.test('8 slots, only slot 3 written: every reader reads exactly that, and skips the rest', async (t) => {
  const { name, zone, r } = unwrittenZone(t, 'only3');
  await writeIn(t, name, 3);
  readsExactly(t, r, [3], 'slot 3 alone');
  // Values in the recent words of slot 5's shards, which no process claimed: not read.
  const f64 = new Float64Array(zone.block('raw', 8).buffer);
  const shard5 = (b: { offset: number }, i: number, stride: number) => b.offset / 8 + 5 * stride + 2 + i;
  f64[shard5(r.c, 0, strideOf(3) / 8)] = 1e9;
  f64[shard5(r.m, 0, strideOf(3) / 8)] = 1e9;
  readsExactly(t, r, [3], 'with words of an unclaimed shard changed by hand');
  // A stand-in (the primary repairing a slot) that sets a shard makes it count.
  r.c.setShard(5, 0, 7);
  t.equal(r.c.value(0), 1003 + 7, 'a shard set with setShard() is read from then on');
  t.equal(r.c.get(0), 1010n);
  t.equal(r.c.values()[0], 1010);
});

t.test('a slot claimed after a first read is read by the next read', async (t) => {
  const { name, r } = unwrittenZone(t, 'later');
  await writeIn(t, name, 3);
  readsExactly(t, r, [3], 'before');
  await writeIn(t, name, 6);
  readsExactly(t, r, [3, 6], 'the same readers, after slot 6 was claimed');
});

t.test('a read pass reads each zone\'s written slots once: a slot marked during it shows in the next pass', async (t) => {
  const { name, r } = unwrittenZone(t, 'pass');
  await writeIn(t, name, 3);
  const before = written([3]).c[0];
  inReadPass(() => {
    t.equal(r.c.value(0), before, 'the first read of the pass');
    // A stand-in setting slot 5's shard marks the slot, as a claim does.
    r.c.setShard(5, 0, 7);
    t.equal(r.c.value(0), before, 'the same pass, after slot 5 was marked');
    t.equal(
      inReadPass(() => r.c.sums()[0]),
      before,
      'a pass inside the pass is the same pass',
    );
  });
  t.equal(r.c.value(0), before + 7, 'outside a pass, at once');
  inReadPass(() => t.equal(r.c.value(0), before + 7, 'the next pass'));
});

t.test('the counts of a writer that gave its slot up, or was killed, are still read', async (t) => {
  const { name, r } = unwrittenZone(t, 'gone');
  const detached = await writeIn(t, name, 2, 'detach');
  const killed = await writeIn(t, name, 7);
  readsExactly(t, r, [2, 7], 'both written');
  detached.proc.disconnect();
  t.equal(await detached.exit(), 0, 'the writer that detached (releasing its slot) exited');
  killed.proc.kill('SIGKILL');
  t.equal(await killed.exit(), 'SIGKILL', 'the other was killed');
  readsExactly(t, r, [2, 7], 'both gone');
  await writeIn(t, name, 2);
  t.same(Array.from(r.c.sums()), written([2, 2, 7]).c, 'a new writer in the released slot adds to what its predecessor left');
});

t.test("slots past the bitmap's first word, and the one in its sign bit", async (t) => {
  const { name, r } = unwrittenZone(t, 'wide-slots', 40, 1 << 20);
  for (const slot of [31, 35]) await writeIn(t, name, slot);
  readsExactly(t, r, [31, 35], 'slots 31 and 35 of 40');
});
