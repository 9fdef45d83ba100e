import t from 'tap';
import { Histogram, histogramLength, quantile, Zone } from '../../src/engine/index.js';
import { start, uniqueName } from '../helpers.js';

const BOUNDS = [1, 2, 5, 10, 20, 50, 100];

/** What observe.ts adds for n observations: buckets and the sum in whole microseconds. */
function expected(n: number): { buckets: number[]; sumUs: number } {
  const buckets = new Array<number>(BOUNDS.length + 1).fill(0);
  let sumUs = 0;
  for (let i = 0; i < n; i++) {
    const ms = (i % 1001) / 4;
    let b = 0;
    while (b < BOUNDS.length && ms > BOUNDS[b]) b++;
    buckets[b]++;
    if (ms > 0) sumUs += Math.round(ms * 1000);
  }
  return { buckets, sumUs };
}

t.test('observations land in the bucket whose bound is the first not below them (le)', (t) => {
  const zone = Zone.create(uniqueName('hist-edges'), { size: 1 << 16, workers: 1 });
  const h = new Histogram(zone.counters('h', histogramLength(BOUNDS)), BOUNDS);
  for (const ms of [0, 1, 1.0001, 2, 4.9, 5, 100, 100.5, 1e9, -3]) h.observe(ms);
  const s = h.snapshot();
  t.same(s.buckets, [3, 2, 2, 0, 0, 0, 1, 2]);
  t.equal(s.count, 10);
  // Kept in whole microseconds: 1.0001 ms counts as 1 ms; a negative time adds nothing.
  t.equal(s.sum, 1e9 + 1 + 1 + 2 + 4.9 + 5 + 100 + 100.5, 'sum in ms, to the microsecond');
  t.throws(() => new Histogram(zone.counters('wrong', 3), BOUNDS), RangeError, 'a block of the wrong length is refused');
  zone.remove();
  zone.detach();
  t.end();
});

t.test('whole-millisecond bounds (looked up) and others (searched) place times alike', (t) => {
  const zone = Zone.create(uniqueName('hist-table'), { size: 1 << 16, workers: 1 });
  // The same bounds, the second set with a last bound that is not a whole millisecond,
  // which makes it search: every time up to 100 ms must land in the same bucket.
  const looked = new Histogram(zone.counters('a', histogramLength([1, 2, 5, 10, 100])), [1, 2, 5, 10, 100]);
  const searched = new Histogram(zone.counters('b', histogramLength([1, 2, 5, 10, 100.5])), [1, 2, 5, 10, 100.5]);
  const times = [0, 0.001, 0.999, 1, 1.0001, 1.5, 2, 2.0000001, 4.99, 5, 5.5, 9.9999, 10, 10.001, 57.3, 99.99, 100, -1, Number.NaN];
  for (let i = 0; i < 2000; i++) times.push((i * 7919) % 10_000 / 100);
  for (const ms of times) {
    looked.observe(ms);
    searched.observe(ms);
  }
  t.same(Array.from(looked.snapshot().buckets).slice(0, 5), Array.from(searched.snapshot().buckets).slice(0, 5));
  t.equal(looked.snapshot().buckets[5], 0, 'nothing above 100 ms');
  t.equal(looked.snapshot().sum, searched.snapshot().sum);
  looked.observe(Number.POSITIVE_INFINITY);
  t.equal(looked.snapshot().buckets[5], 1, 'an infinite time is counted in +Inf');
  t.ok(Number.isFinite(looked.snapshot().sum), 'and leaves the sum finite');
  zone.remove();
  zone.detach();
  t.end();
});

t.test('quantiles interpolate within the bucket, as histogram_quantile() does', (t) => {
  const snap = (buckets: number[]) => ({ bounds: [10, 20, 50], buckets, count: buckets.reduce((a, b) => a + b, 0), sum: 0 });
  t.equal(quantile(snap([0, 0, 0, 0]), 0.5), undefined, 'no observations: no estimate');
  t.equal(quantile(snap([10, 0, 0, 0]), 0.5), 5, 'half way through the first bucket, which starts at 0');
  t.equal(quantile(snap([0, 10, 0, 0]), 0.9), 19, '90% of the way from 10 to 20');
  t.equal(quantile(snap([5, 0, 5, 0]), 0.5), 10, 'the rank at a bucket edge is its bound');
  t.equal(quantile(snap([0, 0, 0, 4]), 0.99), 50, 'in the +Inf bucket: the last bound');
  t.end();
});

t.test('two processes observing into one histogram: exact sums; a killed writer\'s counts stay', async (t) => {
  const name = uniqueName('hist');
  const zone = Zone.create(name, { size: 1 << 20, workers: 2, writer: false });
  const h = new Histogram(zone.counters('h', histogramLength(BOUNDS)), BOUNDS);
  const N = 1_000_000;
  const a = start('observe.ts', [name, '0', String(N)]);
  const b = start('observe.ts', [name, '1', String(N), 'die']);
  await Promise.all([a, b].map((c) => new Promise((resolve) => c.proc.once('message', resolve))));
  const killed = new Promise((resolve) => b.proc.once('message', resolve));
  a.proc.send('go');
  b.proc.send('go');
  t.equal(await a.exit(), 0, 'the first writer finished');
  await killed;
  b.proc.kill('SIGKILL');
  t.equal(await b.exit(), 'SIGKILL', 'the second writer was killed after its observations');

  const want = expected(N);
  const s = h.snapshot();
  t.same(s.buckets, want.buckets.map((n) => 2 * n), 'every bucket holds both writers\' counts exactly');
  t.equal(s.count, 2 * N, 'count is every observation');
  t.equal(Math.round(s.sum * 1000), 2 * want.sumUs, 'the sum is exact to the microsecond');
  // The dead writer's shard is still read: its half is there after it is gone.
  t.equal(h.block.shardValue(1, 0), want.buckets[0], 'the killed writer\'s own shard keeps its counts');
  zone.remove();
  zone.detach();
});
