// /status/resolvers/<zone>: queries by type, responses by DNS code, from two processes.
import t from 'tap';
import { Status } from '../../src/metrics/status.js';
import { resolversNode } from '../../src/metrics/resolvers.js';
import { start, uniqueName } from '../helpers.js';
import { apiOf, samples, shape } from './api.js';
import { traffic } from './traffic.js';

const ZONE_SHAPE = [
  'queries/name: number',
  'queries/srv: number',
  'queries/addr: number',
  'responses/success: number',
  'responses/timedout: number',
  'responses/format_error: number',
  'responses/server_failure: number',
  'responses/not_found: number',
  'responses/unimplemented: number',
  'responses/refused: number',
  'responses/other: number',
];

t.test('resolver zones: every field, exact sums over two workers, paths and text', async (t) => {
  const instance = uniqueName('res');
  const status = Status.create({ resolvers: ['res_local', 'res_other'] }, { workers: 2, writer: true, instance });
  t.teardown(() => status.remove());
  const api = apiOf(status);

  const empty = api.get('/status/resolvers/');
  t.equal(empty.status, 200);
  t.same(Object.keys(empty.body), ['res_local', 'res_other'], 'one member per configured zone, in order');
  t.same(shape(empty.body.res_local), ZONE_SHAPE, 'exactly the spec fields, in order, all numbers');
  t.same(empty.body.res_local, {
    queries: { name: 0, srv: 0, addr: 0 },
    responses: { success: 0, timedout: 0, format_error: 0, server_failure: 0, not_found: 0, unimplemented: 0, refused: 0, other: 0 },
  }, 'all zero before any lookup');

  traffic.resolvers(status);
  const worker = start('families.ts', [instance, 'resolvers']);
  await worker.line(/recorded/);
  t.equal(await worker.exit(), 0);

  const { status: code, body } = api.get('/status/resolvers/res_local');
  t.equal(code, 200);
  t.same(shape(body), ZONE_SHAPE);
  t.same(body, {
    queries: { name: 6, srv: 2, addr: 4 },
    // rcodes 0,0 | 1 | 2 | 3,3 | 4 | 5 | 6, 15, -1 (other) | time-out; twice over
    responses: { success: 4, timedout: 2, format_error: 2, server_failure: 2, not_found: 4, unimplemented: 2, refused: 2, other: 6 },
  }, 'both workers counted, each rcode where RFC 1035 puts it');
  t.same(api.get('/status/resolvers/res_other').body.queries, { name: 0, srv: 2, addr: 0 });

  t.same(api.get('/status/resolvers/res_local/responses').body, body.responses, 'a group alone');
  t.equal(api.get('/status/resolvers/res_local/responses/timedout').body, 2, 'a single field');
  t.equal(api.get('/status/resolvers/res_local/queries/name').body, 6);

  const missing = api.get('/status/resolvers/nope');
  t.equal(missing.status, 404, 'an unknown zone is not found');
  t.equal(missing.body.error, 'PathNotFound');
  t.equal(api.get('/status/resolvers/res_local/queries/ptr').status, 404, 'an unknown field is not found');
  t.equal(api.get('/status/resolvers/res_local/queries/name/x').status, 404, 'nothing below a leaf');

  const root = api.get('/status/').body;
  t.same(Object.keys(root), ['server', 'connections', 'resolvers'], 'the root shows resolvers (no slab zones configured)');
  t.same(root.resolvers.res_local, body);

  const text = api.text('/status/resolvers');
  t.match(text, /^# HELP zonal_resolvers_queries_name_total Queries resolving names to addresses \(A and AAAA\)\.\n# TYPE zonal_resolvers_queries_name_total counter\nzonal_resolvers_queries_name_total\{zone="res_local"\} 6\nzonal_resolvers_queries_name_total\{zone="res_other"\} 0\n/);
  t.match(text, /# TYPE zonal_resolvers_responses_timedout_total counter\n/);
  t.match(text, /\nzonal_resolvers_responses_not_found_total\{zone="res_local"\} 4\n/);
  t.match(text, /\nzonal_resolvers_responses_other_total\{zone="res_local"\} 6\n/);
  t.equal(samples(text).length, 22, 'one sample per field per zone');
  t.equal((text.match(/^# HELP /gm) ?? []).length, 11, 'one HELP per field');

  t.equal(
    api.text('/status/resolvers/res_local'),
    'queries_name 6\nqueries_srv 2\nqueries_addr 4\n' +
      'responses_success 4\nresponses_timedout 2\nresponses_format_error 2\nresponses_server_failure 2\n' +
      'responses_not_found 4\nresponses_unimplemented 2\nresponses_refused 2\nresponses_other 6\n',
    'flat text below a zone',
  );
  t.equal(api.text('/status/resolvers/res_local/responses/refused'), 'responses_refused 2\n', 'flat text of a single field: named from its zone');
});

t.test('no resolver zones: no resolvers branch', async (t) => {
  const status = Status.create({}, { workers: 1, instance: uniqueName('nores') });
  t.teardown(() => status.remove());
  const api = apiOf(status);
  t.notOk('resolvers' in api.get('/status/').body);
  t.equal(api.get('/status/resolvers').status, 404);
  t.same(resolversNode(status).json({ dateEpoch: false, address: '', configFiles: false, now: 0 }), {}, 'the branch itself is empty');
});
