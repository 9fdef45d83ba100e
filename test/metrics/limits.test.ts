// /status/http/limit_conns, /status/http/limit_reqs, /status/stream/limit_conns: what each
// limit decided, counted in the limit's own zone, from two processes.
import t from 'tap';
import {
  httpLimitConns,
  httpLimitReqs,
  LIMIT_CONN_KEY_MAX,
  LIMIT_REQ_KEY_MAX,
  limitKeySkipped,
  LimitConn,
  LimitReq,
} from '../../src/metrics/limits.js';
import { STATUS_ZONE, Status } from '../../src/metrics/status.js';
import { start, uniqueName } from '../helpers.js';
import { apiOf, samples, shape } from './api.js';
import { traffic } from './traffic.js';

const CONN_SHAPE = ['passed: number', 'skipped: number', 'rejected: number', 'exhausted: number'];
const REQ_SHAPE = ['passed: number', 'skipped: number', 'delayed: number', 'rejected: number', 'exhausted: number'];

t.test('key limits from the spec: empty or too long keys are skipped', async (t) => {
  t.equal(LIMIT_CONN_KEY_MAX, 255);
  t.equal(LIMIT_REQ_KEY_MAX, 65535);
  t.equal(limitKeySkipped('', LIMIT_CONN_KEY_MAX), true, 'an empty key');
  t.equal(limitKeySkipped(Buffer.alloc(0), LIMIT_CONN_KEY_MAX), true);
  t.equal(limitKeySkipped('a', LIMIT_CONN_KEY_MAX), false);
  t.equal(limitKeySkipped('a'.repeat(255), LIMIT_CONN_KEY_MAX), false, '255 bytes is within the limit');
  t.equal(limitKeySkipped('a'.repeat(256), LIMIT_CONN_KEY_MAX), true, '256 bytes is over');
  t.equal(limitKeySkipped(Buffer.alloc(255), LIMIT_CONN_KEY_MAX), false, 'a binary key counts its bytes');
  t.equal(limitKeySkipped(Buffer.alloc(256), LIMIT_CONN_KEY_MAX), true);
  t.equal(limitKeySkipped('é'.repeat(127), LIMIT_CONN_KEY_MAX), false, 'a string counts its UTF-8 bytes: 254');
  t.equal(limitKeySkipped('é'.repeat(128), LIMIT_CONN_KEY_MAX), true, '256 bytes in 128 characters');
  t.equal(limitKeySkipped('😀'.repeat(63), LIMIT_CONN_KEY_MAX), false, '252 bytes in 126 UTF-16 units');
  t.equal(limitKeySkipped('😀'.repeat(64), LIMIT_CONN_KEY_MAX), true, '256 bytes');
  t.equal(limitKeySkipped('a'.repeat(65535), LIMIT_REQ_KEY_MAX), false);
  t.equal(limitKeySkipped('a'.repeat(65536), LIMIT_REQ_KEY_MAX), true);
  t.equal(limitKeySkipped('€'.repeat(21845), LIMIT_REQ_KEY_MAX), false, '65535 bytes');
  t.equal(limitKeySkipped('€'.repeat(21846), LIMIT_REQ_KEY_MAX), true, '65538 bytes');
});

t.test('limit zones: every field, exact sums over two workers, own zones, paths and text', async (t) => {
  const instance = uniqueName('limits');
  const status = Status.create(
    {
      http: { limitConns: [{ name: 'perip_conn' }], limitReqs: [{ name: 'perip_req', zoneSize: 128 * 1024 }] },
      stream: { limitConns: [{ name: 's_perip' }, { name: 'perip_conn' }] },
    },
    { workers: 2, writer: true, instance },
  );
  t.teardown(() => status.remove());
  const api = apiOf(status);

  const empty = api.get('/status/http/limit_conns');
  t.equal(empty.status, 200);
  t.same(Object.keys(empty.body), ['perip_conn']);
  t.same(shape(empty.body.perip_conn), CONN_SHAPE, 'the spec fields in order, all numbers');
  t.same(shape(api.get('/status/http/limit_reqs/perip_req').body), REQ_SHAPE);
  t.same(Object.keys(api.get('/status/stream/limit_conns').body), ['s_perip', 'perip_conn']);
  t.same(shape(api.get('/status/stream/limit_conns/s_perip').body), CONN_SHAPE);

  t.type(httpLimitConns.recorder(status, 'perip_conn'), LimitConn);
  traffic.limits(status);
  const worker = start('families.ts', [instance, 'limits']);
  await worker.line(/recorded/);
  t.equal(await worker.exit(), 0);

  t.same(api.get('/status/http/limit_conns/perip_conn').body, { passed: 2, skipped: 2, rejected: 4, exhausted: 2 });
  t.same(api.get('/status/http/limit_reqs/perip_req').body, { passed: 4, skipped: 2, delayed: 2, rejected: 6, exhausted: 0 });
  t.same(api.get('/status/stream/limit_conns').body, {
    s_perip: { passed: 10, skipped: 0, rejected: 0, exhausted: 0 },
    perip_conn: { passed: 0, skipped: 0, rejected: 0, exhausted: 2 },
  }, "a stream limit named like an HTTP one keeps its own counts");

  t.equal(api.get('/status/http/limit_reqs/perip_req/rejected').body, 3 * 2, 'a single field');
  t.equal(api.get('/status/stream/limit_conns/s_perip/passed').body, 10);
  t.equal(api.get('/status/http/limit_conns/perip_conn/delayed').status, 404, 'connection limits have no delayed');
  t.equal(api.get('/status/http/limit_reqs/nope').status, 404, 'an unknown zone is not found');
  t.equal(api.get('/status/http/limit_reqs/nope').body.error, 'PathNotFound');
  t.equal(api.get('/status/http/limit_conns/perip_req').status, 404, 'a request limit is not a connection limit');
  t.equal(api.get('/status/http/limit_reqs/perip_req/rejected/x').status, 404);

  // Counters live in each limit's own zone, which /status/slabs shows.
  t.same(status.zoneNamed('perip_conn').keys().sort(), ['http/limit_conns', 'stream/limit_conns'], 'HTTP and stream blocks share the zone of one name');
  t.same(status.zoneNamed('perip_req').keys(), ['http/limit_reqs']);
  t.notOk(status.zoneNamed(STATUS_ZONE).keys().some((k) => k.includes('limit')), 'none in the status zone');
  const slabs = api.get('/status/slabs').body;
  t.same(Object.keys(slabs), ['perip_conn', 'perip_req', 's_perip']);
  t.ok(slabs.perip_req.pages.used > 0);

  t.same(Object.keys(api.get('/status/http').body), ['limit_conns', 'limit_reqs']);
  t.same(Object.keys(api.get('/status/stream').body), ['limit_conns']);
  t.same(Object.keys(api.get('/status/').body), ['server', 'connections', 'slabs', 'http', 'stream']);

  const reqs = api.text('/status/http/limit_reqs');
  t.equal(
    reqs,
    '# HELP zonal_http_limit_reqs_passed_total Requests passed.\n# TYPE zonal_http_limit_reqs_passed_total counter\nzonal_http_limit_reqs_passed_total{zone="perip_req"} 4\n' +
      '# HELP zonal_http_limit_reqs_skipped_total Requests passed because the key was empty or longer than 65535 bytes.\n# TYPE zonal_http_limit_reqs_skipped_total counter\nzonal_http_limit_reqs_skipped_total{zone="perip_req"} 2\n' +
      '# HELP zonal_http_limit_reqs_delayed_total Requests delayed.\n# TYPE zonal_http_limit_reqs_delayed_total counter\nzonal_http_limit_reqs_delayed_total{zone="perip_req"} 2\n' +
      '# HELP zonal_http_limit_reqs_rejected_total Requests rejected.\n# TYPE zonal_http_limit_reqs_rejected_total counter\nzonal_http_limit_reqs_rejected_total{zone="perip_req"} 6\n' +
      '# HELP zonal_http_limit_reqs_exhausted_total Requests rejected because the zone storage ran out.\n# TYPE zonal_http_limit_reqs_exhausted_total counter\nzonal_http_limit_reqs_exhausted_total{zone="perip_req"} 0\n',
    'labelled text: HELP, TYPE and one sample per zone',
  );
  const conns = api.text('/status/http/limit_conns');
  t.match(conns, /# TYPE zonal_http_limit_conns_rejected_total counter\nzonal_http_limit_conns_rejected_total\{zone="perip_conn"\} 4\n/);
  const stream = api.text('/status/stream/limit_conns');
  t.match(stream, /\nzonal_stream_limit_conns_passed_total\{zone="s_perip"\} 10\nzonal_stream_limit_conns_passed_total\{zone="perip_conn"\} 0\n/);
  t.equal(samples(stream).length, 8);
  const http = api.text('/status/http');
  t.match(http, /zonal_http_limit_conns_passed_total\{zone="perip_conn"\} 2\n[^]*zonal_http_limit_reqs_rejected_total\{zone="perip_req"\} 6\n/, 'both kinds below /status/http');

  t.equal(api.text('/status/http/limit_reqs/perip_req'), 'passed 4\nskipped 2\ndelayed 2\nrejected 6\nexhausted 0\n', 'flat text below a zone');
  t.equal(api.text('/status/http/limit_reqs/perip_req/rejected'), 'rejected 6\n', 'flat text of one field');
  t.equal(api.text('/status/stream/limit_conns/s_perip'), 'passed 10\nskipped 0\nrejected 0\nexhausted 0\n');
});

t.test('a request limit recorder has delayed, a connection limit recorder does not', async (t) => {
  const status = Status.create({ http: { limitReqs: [{ name: 'r' }] } }, { workers: 1, writer: true, instance: uniqueName('lreq') });
  t.teardown(() => status.remove());
  const r = httpLimitReqs.recorder(status, 'r');
  t.type(r, LimitReq);
  r.delayed();
  r.exhausted();
  t.same(apiOf(status).get('/status/http/limit_reqs/r').body, { passed: 0, skipped: 0, delayed: 1, rejected: 0, exhausted: 1 });
  t.notOk('delayed' in httpLimitConns.recorder(status, 'r'), 'no delayed() on a connection limit');
});
