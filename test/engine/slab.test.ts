// The slab allocator's statistics are what /status/slabs shows: they must be exact.
import t from 'tap';
import { Zone } from '../../src/engine/index.js';
import { uniqueName } from '../helpers.js';

const PAGE = 4096;
const SIZES = [8, 16, 32, 64, 128, 256, 512, 1024, 2048];

function zoneOf(pages: number): Zone {
  return Zone.create(uniqueName('slab'), { size: pages * PAGE, workers: 1 });
}

t.test('slot sizes are 8 .. half a page, and a fresh zone is all free', async (t) => {
  const zone = zoneOf(16);
  t.equal(zone.pageSize, PAGE, 'this suite assumes 4 KiB pages');
  const s = zone.slabStats();
  t.same(Object.keys(s.slots).map(Number), SIZES);
  t.same(s.pages, { used: 0, free: 16 });
  for (const size of SIZES) t.same(s.slots[size], { used: 0, free: 0, reqs: 0, fails: 0 }, `slot ${size}`);
  zone.remove();
});

t.test('allocations round up to their slot size and fill pages exactly', async (t) => {
  const zone = zoneOf(16);
  const offsets = Array.from({ length: 600 }, () => zone.alloc(33)); // 64-byte slots: 64 a page
  t.ok(offsets.every((o) => o > 0 && o % 64 === 0), 'every block is aligned to its slot size');
  t.equal(new Set(offsets).size, 600, 'no block is handed out twice');
  let s = zone.slabStats();
  t.same(s.slots['64'], { used: 600, free: 10 * 64 - 600, reqs: 600, fails: 0 }, '600 slots on 10 pages');
  t.same(s.pages, { used: 10, free: 6 });
  for (const o of offsets.slice(0, 64)) t.ok(zone.free(o));
  s = zone.slabStats();
  t.same(s.slots['64'], { used: 536, free: 9 * 64 - 536, reqs: 600, fails: 0 }, 'an emptied page goes back');
  t.same(s.pages, { used: 9, free: 7 });
  t.equal(zone.check(), '');
  zone.remove();
});

t.test('a freed slot is reused, and a double free is refused without harm', async (t) => {
  const zone = zoneOf(4);
  const a = zone.alloc(100);
  const b = zone.alloc(100);
  t.ok(zone.free(a));
  t.equal(zone.alloc(128), a, 'the freed slot is handed out again first');
  t.ok(zone.free(b));
  t.notOk(zone.free(b), 'freeing twice is refused');
  t.notOk(zone.free(a + 8), 'an offset inside a slot is refused');
  t.notOk(zone.free(12345678), 'an offset outside the zone is refused');
  t.same(zone.slabStats().slots['128'], { used: 1, free: 31, reqs: 3, fails: 0 });
  t.equal(zone.check(), '');
  zone.remove();
});

t.test('exhaustion is counted in fails and never crashes', async (t) => {
  const zone = zoneOf(4);
  const big = zone.alloc(3 * PAGE);
  t.ok(big > 0);
  const small: number[] = [];
  for (let i = 0; i < 16; i++) small.push(zone.alloc(256)); // the last page holds 16
  t.equal(zone.alloc(256), 0, 'the 17th 256-byte slot does not fit');
  t.equal(zone.alloc(8), 0, 'nor does a new page for 8-byte slots');
  t.equal(zone.alloc(PAGE), 0, 'nor a whole page');
  const s = zone.slabStats();
  t.same(s.slots['256'], { used: 16, free: 0, reqs: 17, fails: 1 });
  t.same(s.slots['8'], { used: 0, free: 0, reqs: 1, fails: 1 });
  t.same(s.pages, { used: 4, free: 0 });
  t.ok(zone.free(big));
  t.ok(zone.alloc(8) > 0, 'room again after a free');
  t.equal(zone.check(), '');
  zone.remove();
});

t.test('page runs: freed runs merge with both neighbours', async (t) => {
  const zone = zoneOf(12);
  const runs = [2, 3, 1, 4, 2].map((n) => zone.alloc(n * PAGE - 100));
  t.same(zone.slabStats().pages, { used: 12, free: 0 });
  t.equal(runs[1] - runs[0], 2 * PAGE, 'runs are laid out page after page');
  for (const i of [0, 2, 4, 1, 3]) t.ok(zone.free(runs[i]), `run ${i} freed`);
  t.equal(zone.check(), '', 'no two free runs are left side by side');
  t.equal(zone.alloc(12 * PAGE), runs[0], 'the whole zone is one run again');
  zone.remove();
});

t.test('random alloc and free against a model: stats exact, blocks never overlap', async (t) => {
  const zone = zoneOf(64);
  let seed = 42;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed / 2 ** 31);
  const live = new Map<number, number>(); // offset -> bytes reserved
  const model = new Map<number, { used: number; reqs: number; fails: number }>(SIZES.map((s) => [s, { used: 0, reqs: 0, fails: 0 }]));
  const slotOf = (n: number) => SIZES.find((s) => s >= n);
  let problems = 0;
  for (let step = 0; step < 20000; step++) {
    if (live.size > 0 && random() < 0.45) {
      const keys = [...live.keys()];
      const off = keys[Math.floor(random() * keys.length)];
      const bytes = live.get(off)!;
      if (!zone.free(off)) problems++;
      live.delete(off);
      const slot = slotOf(bytes);
      if (slot) model.get(slot)!.used--;
      continue;
    }
    const bytes = random() < 0.1 ? Math.ceil(random() * 3 * PAGE) : Math.ceil(random() * 2048);
    const off = zone.alloc(bytes);
    const slot = slotOf(bytes);
    if (slot) model.get(slot)!.reqs++;
    if (off === 0) {
      if (slot) model.get(slot)!.fails++;
      continue;
    }
    const reserved = slot ?? Math.ceil(bytes / PAGE) * PAGE;
    for (const [o, b] of live) if (off < o + b && o < off + reserved) problems++;
    live.set(off, reserved);
    if (slot) model.get(slot)!.used++;
  }
  t.equal(problems, 0, 'no overlapping block and no refused free');
  const s = zone.slabStats();
  for (const size of SIZES) {
    const m = model.get(size)!;
    t.same({ used: s.slots[size].used, reqs: s.slots[size].reqs, fails: s.slots[size].fails }, m, `slot ${size} matches the model`);
  }
  t.equal(zone.check(), '');
  for (const off of live.keys()) zone.free(off);
  t.same(zone.slabStats().pages, { used: 0, free: 64 }, 'all pages back after freeing everything');
  zone.remove();
});

t.test('slabStatsPacked() fills the array it is given when that is a large enough Float64Array, and makes one otherwise', async (t) => {
  const zone = zoneOf(16);
  t.teardown(() => zone.remove());
  for (let i = 0; i < 70; i++) zone.alloc(33);
  // 70 slots of 64 bytes take 2 of the 16 pages.
  const want = [2, 14, ...SIZES.flatMap((size) => (size === 64 ? [70, 2 * 64 - 70, 70, 0] : [0, 0, 0, 0]))];
  const out = new Float64Array(2 + 4 * 16).fill(-1);
  t.equal(zone.slabStatsPacked(out), out, 'the same array back');
  t.same(Array.from(out.subarray(0, want.length)), want, 'pages, then used, free, reqs and fails per slot size');
  t.same(Array.from(out.subarray(want.length)), new Array(out.length - want.length).fill(-1), 'nothing written past the last slot size');
  for (const [what, given] of [
    ['no array', undefined],
    ['one too short', new Float64Array(want.length - 1)],
    ['an Int32Array', new Int32Array(100)],
    ['a plain object', { length: 100 }],
    ['a number', 7],
  ] as const) {
    const got = zone.slabStatsPacked(given as Float64Array | undefined);
    t.not(got, given, `${what}: a new array`);
    t.ok(got instanceof Float64Array, `${what}: a Float64Array`);
    t.same(Array.from(got), want, `${what}: the same figures`);
  }
});
