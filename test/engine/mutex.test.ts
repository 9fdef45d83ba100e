// A process killed while it holds a zone's mutex must not block the others, and whatever
// it was doing must be undone: the zone is exactly as it was before the operation.
import t from 'tap';
import { Zone } from '../../src/engine/index.js';
import { start, uniqueName } from '../helpers.js';

interface Snapshot {
  stats: unknown;
  keys: string[];
  record?: string;
}

function snapshot(zone: Zone, record?: { read(): Buffer }): Snapshot {
  return { stats: zone.slabStats(), keys: zone.keys().sort(), record: record?.read().toString('hex') };
}

t.test('a holder SIGKILLed inside the mutex: a waiter gets it within 1 s', async (t) => {
  const name = uniqueName('hold');
  const zone = Zone.create(name, { size: 1 << 16, workers: 2 });
  const before = snapshot(zone);
  const holder = start('stall.mjs', [zone.instance, name, 'alloc', '3', '64']);
  await holder.stderrLine(/stalled holding the zone mutex/);
  const waiter = start('waiter.mjs', [zone.instance, name]);
  await new Promise((resolve) => waiter.proc.once('message', resolve));
  waiter.proc.send('go');
  // The waiter is now blocked in the lock; it must not get it while the holder lives.
  await new Promise((r) => setTimeout(r, 300));
  t.equal(waiter.stdout(), '', 'the waiter is blocked while the holder lives');
  const killed = Date.now();
  holder.proc.kill('SIGKILL');
  const report = JSON.parse(await waiter.line(/"got"/, 5000));
  t.ok(report.got - killed < 1000, `waiter got the mutex ${report.got - killed} ms after the kill`);
  t.equal(report.check, '', 'the zone is consistent for the waiter');
  t.equal(report.recoveries, 1, 'one recovery was counted');
  t.equal(await waiter.exit(), 0);
  const after = zone.slabStats() as { slots: Record<string, { used: number; reqs: number }> };
  const was = before.stats as typeof after;
  t.equal(after.slots['64'].reqs, was.slots['64'].reqs, "the dead holder's alloc left no trace");
  t.equal(after.slots['8'].used, was.slots['8'].used + 1, "the waiter's alloc is there");
  zone.remove();
});

// For each operation, kill it after 1, 2, 3 ... logged writes until it completes: every
// kill must leave the zone exactly as before, and the completed run as after.
interface Case {
  name: string;
  setup(zone: Zone): { op: string; arg: string; record?: { read(): Buffer } };
}

const cases: Case[] = [
  { name: 'slot alloc on a fresh page', setup: () => ({ op: 'alloc', arg: '64' }) },
  {
    name: 'slot alloc on a partial page',
    setup: (z) => (z.alloc(64), { op: 'alloc', arg: '64' }),
  },
  {
    name: 'page run alloc splitting a free run',
    setup: (z) => (z.alloc(3 * z.pageSize), { op: 'alloc', arg: String(3 * z.pageSize) }),
  },
  {
    name: 'slot free that empties a page between two free runs',
    setup: (z) => {
      const a = z.alloc(2 * z.pageSize);
      const slot = z.alloc(128);
      const b = z.alloc(2 * z.pageSize);
      z.alloc(5 * z.pageSize); // keep the runs off the end of the zone
      z.free(a);
      z.free(b);
      return { op: 'free', arg: String(slot) };
    },
  },
  {
    name: 'record write replacing its content',
    setup: (z) => {
      const r = z.record('r');
      r.write(Buffer.alloc(100, 1));
      return { op: 'record', arg: String(r.offset), record: r };
    },
  },
  { name: 'directory insert', setup: (z) => (z.counters('x', 3), { op: 'ensure', arg: 'new-key' }) },
  {
    name: 'directory removal',
    setup: (z) => (z.counters('gone', 64), z.counters('stays', 3), { op: 'drop', arg: 'gone' }),
  },
];

for (const c of cases) {
  t.test(`SIGKILL at every write of: ${c.name}`, async (t) => {
    const name = uniqueName('sweep');
    const zone = Zone.create(name, { size: 64 * 4096, workers: 2 });
    const { op, arg, record } = c.setup(zone);
    const before = snapshot(zone, record);
    let completedAt = 0;
    for (let writes = 1; writes <= 100 && !completedAt; writes++) {
      const child = start('stall.mjs', [zone.instance, name, op, String(writes), arg]);
      const outcome = await Promise.race([
        child.stderrLine(/stalled/).then(() => 'stalled'),
        child.line(/completed/).then(() => 'completed'),
      ]);
      if (outcome === 'completed') {
        completedAt = writes;
        await child.exit();
        break;
      }
      child.proc.kill('SIGKILL');
      await child.exit();
      const problem = zone.check(); // takes the mutex: recovers
      const now = snapshot(zone, record);
      if (problem !== '' || JSON.stringify(now) !== JSON.stringify(before)) {
        t.fail(`killed after ${writes} writes: ${problem || 'state differs from before'}`);
        t.same(now, before);
        break;
      }
    }
    t.ok(completedAt > 1, `every kill before the op completed (${completedAt - 1} write points) was rolled back`);
    t.equal(zone.recoveries, completedAt - 1, 'each kill was recovered once');
    t.equal(zone.check(), '', 'consistent after the completed operation');
    t.not(JSON.stringify(snapshot(zone, record)), JSON.stringify(before), 'the completed operation took effect');
    zone.remove();
  });
}
