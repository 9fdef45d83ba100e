// docs/runtime-zones.md's example: two cluster workers make route zones at run time, 3 at
// most, the rest counted in "routes"; the counts are exactly the traffic it sent.
import t from 'tap';
import { runExample } from './run.js';

t.test('examples/route-zones: route zones made on first use, capped, the rest in the group’s zone', async (t) => {
  const { code, out } = await runExample('route-zones.ts');
  t.equal(code, 0, 'the example exits cleanly');
  const zones = JSON.parse(out);
  t.same(Object.keys(zones), ['routes', '/users/:id', '/orders/:id', '/items'], "the group's zone, then the first 3 routes in the order met");
  const totals = Object.fromEntries(Object.entries(zones).map(([name, z]) => [name, (z as { requests: { total: number } }).requests.total]));
  t.same(totals, { routes: 2, '/users/:id': 2, '/orders/:id': 1, '/items': 3 }, "/cart's two requests in \"routes\"; the 404 in none");
  t.same(zones['/items'].responses, { 200: 3 });
});
