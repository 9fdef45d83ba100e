// The README's limits example: two workers take limit_req and limit_conn decisions on
// one shared bucket, and the status counts exactly what the client saw.
import t from 'tap';
import { runExample } from './run.js';

t.test('examples/cluster-limits: one bucket for both workers, counted in /status/', async (t) => {
  const { code, out } = await runExample('cluster-limits.ts', []);
  t.equal(code, 0, 'the example exits cleanly');
  const client = JSON.parse(/client: (.*)/.exec(out)![1]);
  t.same(client, { 200: 6, 503: 6 }, 'one at once and five in the burst pass, over both workers');
  const [reqs, conns] = out.split('GET /status/http/limit_conns/');
  t.same(JSON.parse(reqs.slice(reqs.indexOf('GET /status/http/limit_reqs/') + 28)), { perip: { passed: 1, skipped: 0, delayed: 5, rejected: 6, exhausted: 0 } });
  t.same(JSON.parse(conns), { inflight: { passed: 6, skipped: 0, rejected: 0, exhausted: 0 } });
});
