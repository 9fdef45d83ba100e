// /status/stream/server_zones/<zone>: connections, sessions by code, data, and ssl only
// where the server listens with SSL; from two processes.
import t from 'tap';
import { Status } from '../../src/metrics/status.js';
import { start, uniqueName } from '../helpers.js';
import { apiOf, samples, shape } from './api.js';
import { traffic } from './traffic.js';

const SSL_SHAPE = ['ssl/handshaked: number', 'ssl/reuses: number', 'ssl/timedout: number', 'ssl/failed: number'];
const ZONE_SHAPE = [
  'connections/total: number',
  'connections/processing: number',
  'connections/discarded: number',
  'sessions/success: number',
  'sessions/invalid: number',
  'sessions/forbidden: number',
  'sessions/internal_error: number',
  'sessions/bad_gateway: number',
  'sessions/service_unavailable: number',
  'data/received: number',
  'data/sent: number',
];

t.test('stream server zones: every field, ssl only with ssl, exact sums over two workers', async (t) => {
  const instance = uniqueName('stream');
  const status = Status.create(
    { stream: { serverZones: [{ name: 's_front' }, { name: 's_tls', ssl: true }] } },
    { workers: 2, writer: true, instance },
  );
  t.teardown(() => status.remove());
  const api = apiOf(status);

  const empty = api.get('/status/stream/server_zones');
  t.equal(empty.status, 200);
  t.same(Object.keys(empty.body), ['s_front', 's_tls']);
  t.same(shape(empty.body.s_front), ZONE_SHAPE, 'no ssl without ssl; the spec fields in order, all numbers');
  t.same(shape(empty.body.s_tls), [...SSL_SHAPE, ...ZONE_SHAPE], 'ssl first where the server listens with SSL');
  t.notOk(JSON.stringify(empty.body).match(/[1-9]/), 'all zero before any connection');

  traffic.stream(status);
  const worker = start('families.ts', [instance, 'stream']);
  await worker.line(/recorded/);
  t.equal(await worker.exit(), 0);

  const front = api.get('/status/stream/server_zones/s_front');
  t.equal(front.status, 200);
  t.same(shape(front.body), ZONE_SHAPE, 'ssl counted on a zone without ssl stays hidden');
  t.same(front.body, {
    connections: { total: 20, processing: 2, discarded: 2 },
    sessions: { success: 6, invalid: 2, forbidden: 2, internal_error: 2, bad_gateway: 2, service_unavailable: 2 },
    data: { received: 2 * (3 * 5 + 5 * 1 + 2), sent: 2 * 3 * 96 },
  }, 'each code under its session counter; processing is the connections still open');
  const tls = api.get('/status/stream/server_zones/s_tls').body;
  t.same(tls, {
    ssl: { handshaked: 4, reuses: 2, timedout: 2, failed: 2 },
    connections: { total: 2, processing: 0, discarded: 0 },
    sessions: { success: 2, invalid: 0, forbidden: 0, internal_error: 0, bad_gateway: 0, service_unavailable: 0 },
    data: { received: 20, sent: 40 },
  });

  t.same(api.get('/status/stream/server_zones/s_tls/ssl').body, tls.ssl, 'the ssl group alone');
  t.equal(api.get('/status/stream/server_zones/s_front/ssl').status, 404, 'no ssl path without ssl');
  t.equal(api.get('/status/stream/server_zones/s_front/sessions/bad_gateway').body, 2, 'a single field');
  t.equal(api.get('/status/stream/server_zones/s_front/connections/processing').body, 2);
  t.equal(api.get('/status/stream/server_zones/nope').status, 404, 'an unknown zone is not found');
  t.equal(api.get('/status/stream/server_zones/nope').body.error, 'PathNotFound');
  t.equal(api.get('/status/stream/limit_conns').status, 404, 'no stream limit zones configured, no branch');
  t.same(Object.keys(api.get('/status/stream').body), ['server_zones']);
  t.same(Object.keys(api.get('/status/').body), ['server', 'connections', 'stream']);

  const text = api.text('/status/stream/server_zones');
  t.match(text, /# HELP zonal_stream_server_zones_connections_processing Client connections being processed now\.\n# TYPE zonal_stream_server_zones_connections_processing gauge\nzonal_stream_server_zones_connections_processing\{zone="s_front"\} 2\nzonal_stream_server_zones_connections_processing\{zone="s_tls"\} 0\n/, 'a gauge: no _total');
  t.match(text, /# TYPE zonal_stream_server_zones_sessions_success_total counter\nzonal_stream_server_zones_sessions_success_total\{zone="s_front"\} 6\n/);
  t.match(text, /\nzonal_stream_server_zones_data_received_total\{zone="s_front"\} 44\n/);
  t.match(text, /# TYPE zonal_stream_server_zones_ssl_handshaked_total counter\nzonal_stream_server_zones_ssl_handshaked_total\{zone="s_tls"\} 4\n/, 'ssl only for the zone with ssl');
  t.notMatch(text, /ssl_[a-z]+_total\{zone="s_front"\}/);
  t.equal(samples(text).length, 11 + 15);

  t.equal(
    api.text('/status/stream/server_zones/s_front'),
    'connections_total 20\nconnections_processing 2\nconnections_discarded 2\n' +
      'sessions_success 6\nsessions_invalid 2\nsessions_forbidden 2\nsessions_internal_error 2\nsessions_bad_gateway 2\nsessions_service_unavailable 2\n' +
      'data_received 44\ndata_sent 576\n',
    'flat text below a zone',
  );
  t.match(api.text('/status/stream/server_zones/s_tls'), /^ssl_handshaked 4\nssl_reuses 2\nssl_timedout 2\nssl_failed 2\nconnections_total 2\n/);
});
