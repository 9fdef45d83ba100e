// The README's embedding example must keep working and keep printing exact sums.
import t from 'tap';
import { runExample } from './run.js';

t.test('examples/cluster-counters: two workers, exact sums in the primary', async (t) => {
  const { code, out } = await runExample('cluster-counters.ts', ['200000']);
  t.equal(code, 0, 'the example exits cleanly');
  t.match(out, /requests: 400000/, 'every request of both workers is counted');
  t.match(out, /'4xx': 40000/, 'every tenth request was a 404');
  t.match(out, /received: 140000000/);
  t.match(out, /the sums are exact/);
});
