import t from 'tap';
import { Zone } from '../../src/engine/index.js';
import { start, uniqueName } from '../helpers.js';

t.test('a reader in another process never sees a torn record', async (t) => {
  const name = uniqueName('records');
  const zone = Zone.create(name, { size: 1 << 20, workers: 2 });
  const writer = start('records.ts', ['writer', name]);
  await new Promise((resolve) => writer.proc.once('message', resolve));
  const reader = start('records.ts', ['reader', name, '200000']);
  const report = JSON.parse(await reader.line(/"reads"/, 120_000));
  t.equal(await reader.exit(), 0);
  t.equal(await writer.exit(), 0);
  const writes = zone.cells('control', 2).load(1);
  t.equal(report.reads, 200000, '200,000 reads done');
  t.equal(report.torn, 0, 'no torn record among them');
  t.equal(report.backwards, 0, 'generations only move forward');
  t.ok(writes > 1000, `the writer published ${writes} records meanwhile`);
  t.ok(report.generations.every((g: number) => g > 0), 'the reader saw every record change');
  t.equal(zone.check(), '', 'the zone is consistent afterwards');
  // Replaced contents are freed: with small contents, the zone holds one slot per
  // record besides the directory's two per key (entry and value).
  for (let i = 0; i < 4; i++) zone.record(`r${i}`).write(Buffer.from('tiny'));
  const s = zone.slabStats();
  t.equal(Object.values(s.slots).reduce((n, x) => n + x.used, 0), zone.keys().length * 2 + 4, 'old contents were freed');
  zone.remove();
});

t.test('records: generation, JSON, empty record, no room', async (t) => {
  const zone = Zone.create(uniqueName('rec'), { size: 4 * 4096, workers: 1 });
  const r = zone.record('peers');
  t.equal(r.generation, 0);
  t.equal(r.read().length, 0, 'a new record is empty');
  t.equal(r.readJSON(), undefined);
  t.ok(r.writeJSON({ weight: 2 }));
  t.equal(r.generation, 1);
  t.ok(r.changedSince(0));
  t.notOk(r.changedSince(1));
  t.same(r.readJSON(), { weight: 2 });
  t.equal(r.readJSON(), r.readJSON(), 'unchanged records are not decoded again');
  const other = Zone.attach(zone.name).record('peers');
  t.same(other.readJSON(), { weight: 2 }, 'another attachment reads the same record');
  t.notOk(r.write(Buffer.alloc(5 * 4096)), 'content larger than the zone is refused');
  t.same(r.readJSON(), { weight: 2 }, 'and the old content stays');
  t.equal(r.generation, 1, 'a refused write publishes nothing');
  t.equal(zone.check(), '');
  zone.remove();
});
