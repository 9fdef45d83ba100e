// The README's status example: two workers record their own HTTP traffic, the primary
// serves /status/ on uWebSockets.js, and the counts are exactly the traffic it sent.
import t from 'tap';
import { runExample } from './run.js';

t.test('examples/cluster-status: workers record, the primary serves /status/', async (t) => {
  const { code, out } = await runExample('cluster-status.ts', []);
  t.equal(code, 0, 'the example exits cleanly');
  const [httpPart, connsPart] = out.split('GET /status/connections');
  const http = JSON.parse(httpPart.replace('GET /status/http/', ''));
  t.same(http.server_zones.site.requests, { total: 28, processing: 0, discarded: 0 }, 'every request, none left open');
  t.same(http.server_zones.site.responses, { 200: 25, 404: 3 });
  t.same(http.location_zones.api.responses, { 200: 5 }, 'the /api/ location zone');
  t.ok(http.server_zones.site.data.received > 28 * 40, 'request bytes counted');
  const conns = JSON.parse(connsPart);
  t.ok(conns.accepted >= 1 && conns.accepted <= 28, `connections accepted: ${conns.accepted}`);
  t.equal(conns.active, 0, 'no connection carries a request any more');
  t.ok(conns.idle >= 1 && conns.idle <= conns.accepted, 'the open ones wait for their next request');
});
