// The conformance table: every branch of the spec's tree, every field of every resource
// (presence, type, conditional presence, value), the errors, HEAD, the methods and the
// query arguments, through each transport. Two worker processes record the same traffic
// script (test/fixtures/record.ts): every count must be exactly twice one worker's.
import t, { type Test } from 'tap';
import { createApi, type ApiHandler } from '../../src/api/index.js';
import type { StatusConfig } from '../../src/metrics/catalog.js';
import { Status } from '../../src/metrics/status.js';
import { start, uniqueName } from '../helpers.js';
import { check, type Schema } from './schema.js';
import { checkExposition, promtool } from './exposition.js';
import { transports, type Fetch } from './transports.js';

const config: StatusConfig = {
  http: {
    // zonal's histograms extension is asked for, zone by zone.
    serverZones: [{ name: 'site', histogram: true }, { name: 'secure', ssl: true, histogram: true }],
    locationZones: ['api'],
    locationHistograms: { api: true },
    upstreams: [
      {
        name: 'backend',
        peers: [
          { server: '127.0.0.1:18081', sid: 'ok1', maxConns: 100, weight: 2 },
          { server: '127.0.0.1:18083', backup: true },
        ],
        queue: true,
        histogram: true,
      },
      { name: 'plain', zone: 'plain_zone', peers: [{ server: 'localhost:18084', name: '127.0.0.1:18084', down: true }], probes: true, histogram: true },
    ],
  },
  stream: { upstreams: [{ name: 'tcp_back', peers: [{ server: '127.0.0.1:19001', service: 'svc' }], histogram: true }] },
};
const configFiles = { '/etc/zonal/zonal.conf': 'http {\n}\n' };

const N = 'number' as const;
const slot: Schema = { used: N, free: N, reqs: N, fails: N };
const slabZone: Schema = { pages: { used: N, free: N }, slots: Object.fromEntries([8, 16, 32, 64, 128, 256, 512, 1024, 2048].map((s) => [s, slot])) };
const data: Schema = { received: N, sent: N };
// zonal's documented extension to the spec (README: Histograms): one more member, exactly this.
const histogram: Schema = { bounds: 'numbers', buckets: 'numbers', count: N, sum: N, p50: 'estimate', p90: 'estimate', p99: 'estimate' };
const httpHistograms: Schema = { response_time: histogram };
const streamHistograms: Schema = { connect_time: histogram, session_time: histogram };
const ssl: Schema = { handshaked: N, reuses: N, timedout: N, failed: N };
const serverZone: Schema = { requests: { total: N, processing: N, discarded: N }, responses: 'codes', data, histograms: httpHistograms };
const peerBase = { server: 'string', slow_start: N, backup: 'boolean', weight: N, state: 'string', data } as const;
const httpHealth = { fails: N, unavailable: N, downtime: N, header_time: N, response_time: N } as const;
const streamHealth = { fails: N, unavailable: N, downtime: N, connect_time: N, first_byte_time: N, last_byte_time: N } as const;
const queue: Schema = { queued: N, waiting: N, dropped: N, timedout: N, overflows: N };

/** Each branch of the spec that this configuration has, with its exact schema. */
const table: Array<[string, Schema]> = [
  ['/status/server', { version: 'string', address: 'string', generation: N, load_time: 'time' }],
  ['/status/connections', { accepted: N, dropped: N, active: N, idle: N }],
  ['/status/slabs', { backend: slabZone, plain_zone: slabZone, tcp_back: slabZone }],
  ['/status/slabs/backend', slabZone],
  ['/status/slabs/backend/slots', slabZone.slots as Schema],
  ['/status/slabs/backend/slots/64', slot],
  ['/status/http/server_zones/site', serverZone],
  ['/status/http/server_zones/secure', { ssl, ...serverZone }],
  ['/status/http/server_zones/secure/ssl', ssl],
  ['/status/http/location_zones/api', { requests: { total: N, discarded: N }, responses: 'codes', data, histograms: httpHistograms }],
  [
    '/status/http/upstreams/backend',
    {
      peers: {
        '127.0.0.1:18081': {
          ...peerBase,
          selected: { current: N, total: N, last: 'time' },
          max_conns: N,
          responses: 'codes',
          health: httpHealth,
          sid: 'string',
          histograms: httpHistograms,
        },
        '127.0.0.1:18083': { ...peerBase, selected: { current: N, total: N }, responses: 'codes', health: httpHealth, histograms: httpHistograms },
      },
      keepalive: N,
      queue,
    },
  ],
  [
    '/status/http/upstreams/plain',
    {
      peers: {
        '127.0.0.1:18084': {
          ...peerBase,
          selected: { current: N, total: N },
          responses: 'codes',
          health: { ...httpHealth, probes: { count: N, fails: N } },
          histograms: httpHistograms,
        },
      },
      keepalive: N,
    },
  ],
  [
    '/status/stream/upstreams/tcp_back',
    {
      peers: {
        '127.0.0.1:19001': { ...peerBase, service: 'string', selected: { current: N, total: N, last: 'time' }, health: streamHealth, histograms: streamHistograms },
      },
    },
  ],
];

const BOUNDS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

/** Values after two workers ran the script once each. */
const values: Array<[string, unknown]> = [
  ['/status/connections', { accepted: 202, dropped: 0, active: 0, idle: 2 }],
  ['/status/http/server_zones/site/requests', { total: 204, processing: 2, discarded: 2 }],
  ['/status/http/server_zones/site/responses', { 200: 176, 404: 20, 599: 4 }],
  ['/status/http/server_zones/site/data', { received: 20020, sent: 200000 }],
  ['/status/http/server_zones/secure/ssl', { handshaked: 2, reuses: 2, timedout: 0, failed: 2 }],
  [
    '/status/http/location_zones/api',
    {
      requests: { total: 200, discarded: 0 },
      responses: { 200: 176, 404: 20, 599: 4 },
      data: { received: 20000, sent: 200000 },
      // Both workers' 100 responses of 3 ms each, in the (2, 5] bucket.
      histograms: { response_time: { bounds: BOUNDS, buckets: [0, 0, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], count: 200, sum: 600, p50: 3.5, p90: 4.7, p99: 4.97 } },
    },
  ],
  ['/status/http/upstreams/backend/peers/127.0.0.1:18081/selected', { current: 0, total: 200, last: new Date(1_800_000_000_099).toISOString() }],
  ['/status/http/upstreams/backend/peers/127.0.0.1:18081/responses', { 200: 180, 502: 20 }],
  ['/status/http/upstreams/backend/peers/127.0.0.1:18081/data', { received: 60000, sent: 20000 }],
  ['/status/http/upstreams/backend/peers/127.0.0.1:18081/health', { fails: 0, unavailable: 0, downtime: 0, header_time: 4, response_time: 8 }],
  ['/status/http/upstreams/backend/peers/127.0.0.1:18081/weight', 2],
  ['/status/http/upstreams/backend/peers/127.0.0.1:18081/sid', 'ok1'],
  ['/status/http/upstreams/backend/peers/127.0.0.1:18083/backup', true],
  ['/status/http/upstreams/backend/peers/127.0.0.1:18083/health/fails', 2],
  ['/status/http/upstreams/backend/keepalive', 2],
  ['/status/http/upstreams/backend/queue', { queued: 2, waiting: 0, dropped: 0, timedout: 0, overflows: 0 }],
  ['/status/http/upstreams/plain/peers/127.0.0.1:18084/state', 'down'],
  ['/status/http/upstreams/plain/peers/127.0.0.1:18084/server', 'localhost:18084'],
  ['/status/stream/upstreams/tcp_back/peers/127.0.0.1:19001/data', { received: 20, sent: 40 }],
  ['/status/stream/upstreams/tcp_back/peers/127.0.0.1:19001/health', { fails: 0, unavailable: 0, downtime: 0, connect_time: 1, first_byte_time: 2, last_byte_time: 3 }],
  // Both workers' 100 responses of 8 ms each, in the (5, 10] bucket; none of 18083.
  [
    '/status/http/upstreams/backend/peers/127.0.0.1:18081/histograms/response_time',
    { bounds: BOUNDS, buckets: [0, 0, 0, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], count: 200, sum: 1600, p50: 7.5, p90: 9.5, p99: 9.95 },
  ],
  ['/status/http/upstreams/backend/peers/127.0.0.1:18083/histograms/response_time/p50', null],
  ['/status/stream/upstreams/tcp_back/peers/127.0.0.1:19001/histograms/session_time/buckets', [0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]],
  ['/status/server/generation', 0],
  ['/status/server/address', '127.0.0.1'],
];

async function setUp(t: Test): Promise<{ status: Status; handler: ApiHandler }> {
  const instance = uniqueName('conf');
  const status = Status.create(config, { workers: 2, instance, configFiles });
  t.teardown(() => status.remove());
  const workers = [0, 1].map((slot) => start('record.ts', [], { ZONAL_INSTANCE: instance, ZONAL_WORKER_SLOT: String(slot) }));
  for (const w of workers) t.equal(await w.exit(), 0, 'a worker recorded its script');
  const handler = createApi({
    status,
    mounts: [
      { location: '/status/', api: '/status/' },
      { location: '/files/', api: '/status/', configFiles: true },
      { location: '/stats/', api: '/status/http/server_zones/' },
      { location: /^\/api\/([^/]+)\/(.*)$/, api: '/status/http/$1_zones/$2' },
      { location: '/', exact: true, api: '/' },
    ],
  });
  return { status, handler };
}

t.test('conformance', async (t) => {
  const { handler } = await setUp(t);
  for (const transport of transports) {
    await t.test(transport.name, async (t) => {
      const get: Fetch = await transport.start(handler);
      t.teardown(() => get.close());

      await t.test('every branch has exactly its spec fields, with their types', async (t) => {
        for (const [path, schema] of table) {
          const r = await get(path);
          t.equal(r.status, 200, `${path} answers 200`);
          t.same(check(JSON.parse(r.body), schema), [], `${path} matches the spec`);
          const slash = await get(path + '/');
          t.equal(slash.body, r.body, `${path}/ (trailing slash) is the same`);
        }
      });

      await t.test('values recorded by two workers appear summed', async (t) => {
        for (const [path, want] of values) t.same(JSON.parse((await get(path)).body), want, path);
      });

      await t.test('the root and the branches above zones list what is configured', async (t) => {
        t.same(Object.keys(JSON.parse((await get('/status/')).body)), ['server', 'connections', 'slabs', 'http', 'stream']);
        t.same(Object.keys(JSON.parse((await get('/status')).body)), ['server', 'connections', 'slabs', 'http', 'stream'], 'no trailing slash');
        t.same(Object.keys(JSON.parse((await get('/status/http/')).body)), ['server_zones', 'location_zones', 'upstreams']);
        t.same(Object.keys(JSON.parse((await get('/status/http/server_zones')).body)), ['site', 'secure']);
        t.same(Object.keys(JSON.parse((await get('/status/stream')).body)), ['upstreams']);
        t.same(Object.keys(JSON.parse((await get('/')).body)), ['status', 'config'], 'the API root lists both trees');
        t.equal((await get('//status//connections//')).status, 200, 'repeated slashes are one');
      });

      await t.test('config_files only where the location says api_config_files on', async (t) => {
        t.notOk('config_files' in JSON.parse((await get('/status/server')).body), 'off by default');
        t.same(JSON.parse((await get('/files/server/config_files')).body), configFiles, 'on: absolute path -> content');
        t.equal((await get('/status/server/config_files')).status, 404);
      });

      await t.test('errors: unknown paths and methods other than GET and HEAD', async (t) => {
        for (const path of ['/status/nope', '/status/http/server_zones/nope', '/status/connections/accepted/x', '/status/server/version/x', '/status/slabs/backend/slots/3']) {
          const r = await get(path);
          t.equal(r.status, 404, `${path}: 404`);
          t.same(JSON.parse(r.body), { error: 'PathNotFound', description: `Requested API entity "${path}" doesn't exist.` });
          t.equal(r.headers['content-type'], 'application/json');
        }
        for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
          const r = await get('/status/connections', '', method);
          t.equal(r.status, 405, `${method}: 405`);
          t.equal(r.headers.allow, 'GET, HEAD');
          t.same(JSON.parse(r.body), {
            error: 'MethodNotAllowed',
            description: `The ${method} method is not allowed for the requested API element "/status/connections".`,
          });
        }
      });

      await t.test('HEAD: the same status and headers as GET, no body', async (t) => {
        for (const path of ['/status/', '/status/connections', '/status/nope']) {
          const g = await get(path);
          const h = await get(path, '', 'HEAD');
          t.equal(h.status, g.status, `${path}: status`);
          t.equal(h.body, '', `${path}: no body`);
          t.equal(h.headers['content-length'], String(Buffer.byteLength(g.body)), `${path}: the GET length`);
          t.equal(h.headers['content-type'], g.headers['content-type']);
        }
      });

      await t.test('headers: JSON, no caching', async (t) => {
        const r = await get('/status/connections');
        t.equal(r.headers['content-type'], 'application/json');
        t.equal(r.headers['cache-control'], 'no-cache');
        t.ok(Date.parse(r.headers.expires ?? '') < Date.now(), 'Expires is in the past');
      });

      await t.test('query: pretty, date', async (t) => {
        const pretty = (await get('/status/connections')).body;
        const compact = (await get('/status/connections', 'pretty=off')).body;
        t.match(pretty, /\n\t"accepted"/, 'pretty by default');
        t.notMatch(compact.trimEnd(), /\n/, 'pretty=off is one line');
        t.same(JSON.parse(compact), JSON.parse(pretty));
        t.equal((await get('/status/connections', 'pretty=on')).body, pretty);
        const epoch = JSON.parse((await get('/status/server', 'date=epoch')).body);
        t.type(epoch.load_time, 'number', 'date=epoch: times are epoch milliseconds');
        t.ok(Math.abs(epoch.load_time - Date.now()) < 600_000);
        const last = JSON.parse((await get('/status/http/upstreams/backend/peers/127.0.0.1:18081/selected/last', 'date=epoch')).body);
        t.equal(last, 1_800_000_000_099);
      });

      await t.test('the api directive maps mounts: prefix, regex with captures', async (t) => {
        t.same(JSON.parse((await get('/stats/site/data')).body), { received: 20020, sent: 200000 }, '/stats/ -> server zones');
        t.same(Object.keys(JSON.parse((await get('/stats/')).body)), ['site', 'secure']);
        t.same(JSON.parse((await get('/api/location/api/data')).body), { received: 20000, sent: 200000 }, 'regex: $1_zones/$2');
        const nope = await get('/stats/nope');
        t.same(JSON.parse(nope.body).description, 'Requested API entity "/status/http/server_zones/nope" doesn\'t exist.', 'errors name the API path');
        for (const path of ['/stats/../connections', '/stats/%2e%2e/connections', '/stats/%2E%2E/connections', '/api/server/..%2f..%2fconnections'])
          t.equal((await get(path)).status, 400, `${path}: refused`);
      });

      await t.test('text: flat below a zone, labelled Prometheus above', async (t) => {
        const zone = await get('/status/http/server_zones/site', 'format=prometheus');
        t.equal(zone.headers['content-type'], 'text/plain; version=0.0.4');
        t.same(zone.body.trim().split('\n'), [
          'requests_total 204',
          'requests_processing 2',
          'requests_discarded 2',
          'responses_200 176',
          'responses_404 20',
          'responses_599 4',
          'data_received 20020',
          'data_sent 200000',
          // The histograms extension: seconds, cumulative; the secure zone's response had no time.
          ...[0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, '+Inf'].map((le, i) => `histograms_response_time_seconds_bucket{le="${le}"} ${i < 2 ? 0 : 200}`),
          'histograms_response_time_seconds_sum 0.6',
          'histograms_response_time_seconds_count 200',
        ]);
        t.equal((await get('/status/server', 'format=prometheus')).body, 'generation 0\n', 'the server branch: generation only');
        t.equal((await get('/status/connections/idle', 'format=prometheus')).body, 'idle 2\n');
        for (const path of ['/status/', '/status/http/upstreams', '/status/http', '/status/slabs', '/status/http/upstreams/backend',
          '/status/http/upstreams/backend/peers/127.0.0.1:18081']) {
          const text = (await get(path, 'format=prometheus')).body;
          t.same(checkExposition(text), [], `${path}: valid exposition`);
          const tool = promtool(text);
          if (tool !== 'absent') t.equal(tool, '', `${path}: promtool check metrics is clean`);
        }
        const root = (await get('/status/', 'format=prometheus')).body;
        t.match(root, /^zonal_http_server_zones_requests_total\{zone="site"\} 204$/m);
        t.match(root, /^zonal_http_server_zones_responses_total\{zone="site",code="404"\} 20$/m);
        t.match(root, /^zonal_http_upstreams_peers_selected_total\{upstream="backend",peer="127.0.0.1:18081"\} 200$/m);
        t.match(root, /^zonal_http_upstreams_peers_state\{upstream="plain",peer="127.0.0.1:18084"\} 2$/m, 'state as a gauge: 2 down');
        t.match(root, /^zonal_connections_accepted_total 202$/m);
        const peerText = (await get('/status/http/upstreams/backend/peers/127.0.0.1:18081/selected', 'format=prometheus')).body;
        t.match(peerText, /^zonal_http_upstreams_peers_selected_total\{upstream="backend",peer="127.0.0.1:18081"\} 200$/m, 'a branch: the names and labels of the whole tree');
        t.equal((await get('/status/', 'format=xml')).status, 400, 'an unknown format is refused');
      });
    });
  }
});
