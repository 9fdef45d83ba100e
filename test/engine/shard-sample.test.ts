// GaugeBlock.publish() and published(): a sample of figures that belong together (a
// worker's runtime, metrics/runtime.ts), published by one process while another reads
// it, is never read half old and half new, and a writer stopped half way through does
// not hold readers up.
import t from 'tap';
import { Zone } from '../../src/engine/index.js';
import { start, uniqueName } from '../helpers.js';

t.test('one process reads another\'s samples whole, never torn', async (t) => {
  const name = uniqueName('sample');
  const zone = Zone.create(name, { size: 1 << 20, workers: 4, writer: false });
  t.teardown(() => zone.remove());
  const block = zone.gauges('s', 32);
  const writer = start('sample-writer.ts', [name, '2', '1500']);
  t.teardown(() => writer.proc.kill('SIGKILL'));
  await writer.line(/^writing$/);
  const out = new Float64Array(16);
  let reads = 0;
  let torn = 0;
  let distinct = 0;
  let last = 0;
  const until = Date.now() + 20_000;
  // The writer ends with -1 everywhere; bounded by count and time besides.
  for (let i = 0; i < 1e8 && Date.now() < until; i++) {
    block.published(2, out);
    reads++;
    if (out.some((v) => v !== out[0])) torn++;
    if (out[0] !== last) distinct++;
    last = out[0];
    if (last === -1) break;
  }
  t.equal(last, -1, 'read until the writer\'s last sample');
  t.equal(torn, 0, `${reads} reads of ${distinct} distinct samples, none torn`);
  t.ok(distinct > 100, 'read while the writer wrote');
  t.ok(Array.from(block.writtenSlots()).includes(2), 'the writer\'s slot is among those written');
  t.equal(await writer.exit(), 0);
});

t.test('publish() needs a shard of this process\'s, and room', async (t) => {
  const name = uniqueName('sample1');
  const zone = Zone.create(name, { size: 1 << 20, workers: 2, writer: false });
  t.teardown(() => zone.remove());
  t.throws(() => zone.gauges('s', 4).publish([1, 2]), /writer: false/);
  const own = Zone.attach(name);
  const block = own.gauges('s', 4);
  t.throws(() => block.publish([1, 2, 3]), RangeError, 'two copies of two numbers');
  const reader = zone.gauges('s', 4);
  t.same(Array.from(reader.published(block.slot)), [0, 0], 'nothing published: zeros');
  block.publish([5, -7]);
  t.same(Array.from(reader.published(block.slot)), [5, -7]);
  block.publish([6, 8]);
  block.publish([9, 10]);
  t.same(Array.from(reader.published(block.slot)), [9, 10], 'the last one');
  t.throws(() => block.publish([1]), RangeError, 'a whole sample');
  own.detach();
});
