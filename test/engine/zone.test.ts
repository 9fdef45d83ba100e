// Zone life cycle: creation, attachment by name, bad input, clean-up, worker slots.
import t from 'tap';
import { existsSync, openSync, writeSync, closeSync, writeFileSync, rmSync } from 'node:fs';
import { Zone, removeZone } from '../../src/engine/index.js';
import { addon } from '../../src/engine/native.js';
import { start, uniqueName } from '../helpers.js';

const shmPath = (instance: string, name: string) => `/dev/shm/zonal.${instance}.${name}`;

t.test('bad input gets a clear error and creates nothing', async (t) => {
  const ok = { size: 4096, workers: 1 };
  t.throws(() => Zone.create('a/b', ok), /zone name "a\/b" must not contain "\/"/);
  t.throws(() => Zone.create('a..b', ok), /must not contain "\.\."/);
  t.throws(() => Zone.create('a\0b', ok), /must not contain a NUL byte/);
  t.throws(() => Zone.create('', ok), /zone name must not be empty/);
  t.throws(() => Zone.create('x'.repeat(101), ok), /longer than 100 bytes/);
  t.throws(() => Zone.create('ok', { ...ok, instance: '../up' }), /instance name "..\/up" must not contain/);
  t.throws(() => Zone.create('small', { size: 4095, workers: 1 }), /size 4095 is below one page \(4096 bytes\)/);
  t.throws(() => Zone.create('huge', { size: 2 ** 50, workers: 1 }), /exceeds the machine's limit of \d+ bytes/);
  t.throws(() => Zone.create('w0', { size: 4096, workers: 0 }), /needs 1 to 256 worker slots, not 0/);
  t.throws(() => Zone.create('w', { size: 4096, workers: 300 }), /needs 1 to 256 worker slots/);
  t.throws(() => Zone.create('neg', { size: -1, workers: 1 }), /zone size must be a whole number/);
  t.throws(() => Zone.create('frac', { size: 4096.5, workers: 1 }), /zone size must be a whole number/);
  t.throws(() => Zone.attach('missing', { instance: 'nobody' }), /zone "missing" of instance "nobody" does not exist/);
  t.throws(() => Zone.attach('a/b', { instance: 'nobody' }), /must not contain "\/"/);
  for (const name of ['small', 'huge', 'w0', 'w', 'neg', 'frac'])
    t.notOk(existsSync(shmPath(process.env.ZONAL_INSTANCE!, name)), `nothing left for "${name}"`);
});

t.test('attaching checks what it attaches to', async (t) => {
  const name = uniqueName('ver');
  const zone = Zone.create(name, { size: 4096, workers: 1 });
  t.throws(() => Zone.create(name, { size: 8192, workers: 1 }), /already exists \(created by live process \d+\)/);
  const path = shmPath(zone.instance, name);
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.from([9, 0, 0, 0]), 0, 4, 4); // layout version 9
  t.throws(() => Zone.attach(name), new RegExp(`has layout version 9, this build reads version ${addon.layoutVersion}$`));
  writeSync(fd, Buffer.from([addon.layoutVersion, 0, 0, 0]), 0, 4, 4);
  closeSync(fd);
  t.ok(Zone.attach(name), 'attaches again with the right version');
  const junk = uniqueName('junk');
  writeFileSync(shmPath(zone.instance, junk), Buffer.alloc(65536, 0x41));
  t.throws(() => Zone.attach(junk), /is not a zonal zone \(bad magic\)/);
  rmSync(shmPath(zone.instance, junk));
  zone.remove();
});

t.test('an unrelated process attaches by name and sees the same memory', async (t) => {
  const name = uniqueName('share');
  const zone = Zone.create(name, { size: 4 * 4096, workers: 2 });
  zone.counters('c', 1).add(0, 41);
  const child = start('claim.ts', [name], { ZONAL_WORKER_SLOT: '1' });
  t.equal(await child.line(/^(slot|error)/), 'slot 1');
  t.equal(zone.counters('c', 1).value(0), 42, "the other process's write is seen here");
  child.proc.send('exit');
  t.equal(await child.exit(), 0);
  zone.remove();
});

t.test('worker slots: one live writer per shard; dead writers free theirs', async (t) => {
  const name = uniqueName('slots');
  const zone = Zone.create(name, { size: 4 * 4096, workers: 2 });
  zone.counters('c', 1).add(0);
  t.equal(zone.workerSlot(), 0, 'this process claimed the first free slot');
  const taken = start('claim.ts', [name], { ZONAL_WORKER_SLOT: '0' });
  t.match(await taken.line(/^(slot|error)/), /^error worker slot 0 is held by live process \d+/);
  const second = start('claim.ts', [name], { ZONAL_WORKER_SLOT: '' });
  t.equal(await second.line(/^(slot|error)/), 'slot 1', 'a free slot is claimed');
  const third = start('claim.ts', [name], { ZONAL_WORKER_SLOT: '' });
  t.equal(await third.line(/^(slot|error)/), 'error all 2 worker slots of the zone are held by live processes');
  second.proc.kill('SIGKILL');
  await second.exit();
  const fourth = start('claim.ts', [name], { ZONAL_WORKER_SLOT: '' });
  t.equal(await fourth.line(/^(slot|error)/), 'slot 1', "a dead process's slot is claimed again");
  t.equal(zone.counters('c', 1).value(0), 3, 'and its shard kept its count');
  const outOfRange = start('claim.ts', [name], { ZONAL_WORKER_SLOT: '5' });
  t.match(await outOfRange.line(/^(slot|error)/), /error worker slot 5 is out of range: the zone has 2 slots/);
  for (const c of [taken, third, fourth, outOfRange]) c.proc.send('exit');
  await Promise.all([taken, third, fourth, outOfRange].map((c) => c.exit()));
  zone.remove();
});

t.test('the creator removes its zones on exit, SIGTERM and SIGINT; stale ones go at the next start', async (t) => {
  const instance = uniqueName('inst');
  for (const [mode, signal] of [['exit', undefined], ['wait', 'SIGTERM'], ['wait', 'SIGINT'], ['handler', 'SIGTERM']] as const) {
    const name = `z-${mode}-${signal ?? 'none'}`;
    const c = start('creator.ts', [name, mode], { ZONAL_INSTANCE: instance });
    await c.line(/created/);
    if (signal) c.proc.kill(signal);
    const code = await c.exit();
    t.notOk(existsSync(shmPath(instance, name)), `removed after ${signal ?? 'exit'} (${mode}, ended with ${code})`);
    if (mode === 'handler') t.match(c.stdout(), /own handler ran/, "the application's own handler still ran");
    if (mode === 'wait') t.equal(code, signal, 'the process still died of the signal');
  }
  const killed = start('creator.ts', ['z-killed', 'wait'], { ZONAL_INSTANCE: instance });
  await killed.line(/created/);
  killed.proc.kill('SIGKILL');
  await killed.exit();
  t.ok(existsSync(shmPath(instance, 'z-killed')), 'a SIGKILLed creator leaves its zone');
  const next = start('creator.ts', ['z-next', 'exit'], { ZONAL_INSTANCE: uniqueName('inst') });
  await next.exit();
  t.notOk(existsSync(shmPath(instance, 'z-killed')), 'the next creator removed it');
});

t.test('detach and remove', async (t) => {
  const name = uniqueName('detach');
  const zone = Zone.create(name, { size: 4 * 4096, workers: 1 });
  const block = zone.counters('c', 1);
  block.add(0, 5);
  const other = Zone.attach(name);
  const seen = other.counters('c', 1);
  const unwritten = other.counters('c', 1);
  seen.add(0);
  other.detach();
  t.throws(() => other.counters('c', 1), /zone is detached/);
  seen.add(0);
  unwritten.add(0);
  t.equal(block.value(0), 6, 'writes through a detached zone go nowhere: only the one before counted');
  t.throws(() => seen.value(0), /detached/, 'reads through a detached zone throw');
  t.ok(zone.remove(), 'the name is removed');
  t.equal(block.value(0), 6, 'a process that has it mapped keeps using it');
  t.throws(() => Zone.attach(name), /does not exist/);
  t.notOk(removeZone(name), 'removing twice says false');
});

t.test('cells: the limit holds for all processes at once', async (t) => {
  const name = uniqueName('cells');
  const zone = Zone.create(name, { size: 4 * 4096, workers: 2 });
  const cells = zone.cells('conns', 1);
  const children = [0, 1].map(() => start('cells.ts', [name, '500000', '1']));
  await Promise.all(children.map((c) => new Promise((r) => c.proc.once('message', r))));
  children.forEach((c) => c.proc.send('go'));
  const reports = await Promise.all(children.map(async (c) => JSON.parse(await c.line(/acquired/, 120_000))));
  t.same(reports.map((r) => r.over), [0, 0], 'never two holders of a limit-1 cell');
  t.ok(reports.every((r) => r.acquired > 0), `both acquired (${reports.map((r) => r.acquired).join(', ')})`);
  t.equal(cells.load(0), 0, 'every acquire was released');
  t.equal(cells.add(0, 5), 0);
  t.equal(cells.sub(0, 2), 5);
  t.equal(cells.compareExchange(0, 3, 10), 3);
  t.notOk(cells.acquire(0, 10), 'full at the limit');
  t.ok(cells.acquire(0, 0), 'limit 0 means none');
  t.equal(cells.load(0), 11);
  zone.remove();
});
