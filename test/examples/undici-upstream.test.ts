// docs/undici.md's example: two cluster workers call a service through zonal's balancer,
// the primary marks an instance down through /config between two rounds, and /status shows
// exactly the calls each instance took. The page's copy of the program is checked to be
// the example's, but for the imports (the page imports from 'zonal', the example from the
// source tree).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { runExample } from './run.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** A program without its import lines. */
const body = (source: string) =>
  source
    .split('\n')
    .filter((line) => !line.startsWith('import '))
    .join('\n')
    .trim();

t.test('examples/undici-upstream: fetch balanced by weight, /config followed at once', async (t) => {
  const { code, out } = await runExample('undici-upstream.ts', []);
  t.equal(code, 0, 'the example exits cleanly');
  t.match(out, /^PATCH 200 /m, 'the PATCH was applied');
  const peers = out
    .split('\n')
    .filter((line) => /^127\.0\.0\.\d+:\d+ \{/.test(line))
    .map((line) => {
      const at = line.indexOf(' ');
      return { name: line.slice(0, at), ...JSON.parse(line.slice(at + 1)) };
    });
  t.equal(peers.length, 2, 'two peers');
  const [a, b] = peers;
  t.match(a.name, /^127\.0\.0\.2:/);
  // Round one: 8 calls a worker, 3:1 in each (6 + 2); round two: 4 a worker, all to b.
  t.same({ state: a.state, selected: a.selected, responses: a.responses }, { state: 'down', selected: 12, responses: { 200: 12 } });
  t.same({ state: b.state, selected: b.selected, responses: b.responses }, { state: 'up', selected: 12, responses: { 200: 12 } });
  t.same(a.data, b.data, 'twelve alike calls each: the same bytes both ways');
  t.ok(a.data.sent > 12 * 40 && a.data.received > 12 * 40, 'request and response bytes counted');
});

t.test("docs/undici.md's program is the example's", async (t) => {
  const page = readFileSync(`${root}docs/undici.md`, 'utf8');
  const blocks = [...page.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  const program = blocks.find((b) => b.includes('cluster.isPrimary'));
  t.ok(program, 'the page has the program');
  t.equal(body(program!), body(readFileSync(`${root}examples/undici-upstream.ts`, 'utf8')));
  t.match(program!, /^import \{ apiListener, createApi, Status, upstreamDispatcher, WORKER_SLOT_ENV \} from 'zonal';$/m, "the page's program imports from the front door");
});
