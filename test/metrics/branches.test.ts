// The tree's member order with every family configured: the spec's order at the root,
// in /status/http and in /status/stream.
import t from 'tap';
import { Status } from '../../src/metrics/status.js';
import { uniqueName } from '../helpers.js';
import { serverZones } from '../../src/metrics/http-zones.js';
import { peer } from '../../src/metrics/upstreams.js';
import { checkExposition } from '../api/exposition.js';
import { apiOf } from './api.js';

t.test('every branch, in the order of the spec', async (t) => {
  const peers = [{ server: '127.0.0.1:18081' }];
  const status = Status.create(
    {
      http: {
        serverZones: [{ name: 'site' }],
        locationZones: ['loc'],
        caches: [{ name: 'pcache' }],
        limitConns: [{ name: 'perip_conn' }],
        limitReqs: [{ name: 'perip_req' }],
        upstreams: [{ name: 'backend', peers }],
      },
      stream: { serverZones: [{ name: 's_front' }], limitConns: [{ name: 's_perip' }], upstreams: [{ name: 's_back', peers }] },
      resolvers: ['res_local'],
    },
    { workers: 1, instance: uniqueName('order') },
  );
  t.teardown(() => status.remove());
  const api = apiOf(status);
  const root = api.get('/status/').body;
  t.same(Object.keys(root), ['server', 'connections', 'slabs', 'resolvers', 'http', 'stream'], "Angie's order");
  t.same(Object.keys(root.http), ['server_zones', 'location_zones', 'caches', 'limit_conns', 'limit_reqs', 'upstreams']);
  t.same(Object.keys(root.stream), ['server_zones', 'limit_conns', 'upstreams']);
  t.same(Object.keys(root.resolvers), ['res_local']);
  t.same(Object.keys(root.slabs), ['pcache', 'perip_conn', 'perip_req', 'backend', 's_perip', 's_back']);
  for (const path of ['/status/http/caches/pcache', '/status/http/limit_conns/perip_conn', '/status/http/limit_reqs/perip_req',
    '/status/stream/server_zones/s_front', '/status/stream/limit_conns/s_perip', '/status/resolvers/res_local'])
    t.equal(api.get(path).status, 200, path);
  // The whole tree as text: every family passes through the labelled format.
  const text = api.text('/status/');
  for (const name of ['zonal_http_caches_hit_responses_total', 'zonal_http_limit_conns_passed_total', 'zonal_http_limit_reqs_delayed_total',
    'zonal_stream_server_zones_sessions_success_total', 'zonal_stream_limit_conns_rejected_total', 'zonal_resolvers_responses_timedout_total'])
    t.match(text, new RegExp(`# TYPE ${name} counter\\n${name}\\{zone="[a-z_]+"\\} 0\\n`), name);
});

// format=prometheus of any branch: flat `group_field value` lines in a zone (the spec's
// form), and everywhere else the whole tree's families and labels, only fewer series:
// no instance's name (a peer's address, a shard's path) ever becomes part of a name.
t.test('text of every branch: flat in a zone, else the whole tree\'s names and labels', async (t) => {
  const peers = [{ server: '127.0.0.1:19211' }, { server: '127.0.0.1:19212', weight: 2 }];
  const status = Status.create(
    {
      http: {
        serverZones: [{ name: 'site' }],
        locationZones: ['loc'],
        caches: [{ name: 'pcache' }, { name: 'sharded', shards: [{ path: '/var/cache/a' }, { path: '/var/cache/b' }] }],
        limitConns: [{ name: 'perip_conn' }],
        limitReqs: [{ name: 'perip_req' }],
        upstreams: [{ name: 'backend', peers, queue: true }],
      },
      stream: { serverZones: [{ name: 's_front' }], limitConns: [{ name: 's_perip' }], upstreams: [{ name: 's_back', peers }] },
      resolvers: ['res_local'],
    },
    { workers: 1, writer: true, instance: uniqueName('branchtext') },
  );
  t.teardown(() => status.remove());
  serverZones.recorder(status, 'site').responseSent(200, 10, 20);
  const p1 = peer(status, 'http', 'backend', '127.0.0.1:19211');
  p1.selected();
  p1.responded(200, 5, 50, 1, 2);
  p1.released();
  const api = apiOf(status);
  const root = api.text('/status/');
  const rootLines = new Set(root.split('\n'));
  // Every path of the JSON tree, objects and leaves.
  const paths: string[] = [];
  const walk = (value: unknown, path: string) => {
    paths.push(path);
    // A shard's path has slashes, which no API path can name as one segment.
    if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) if (!k.includes('/')) walk(v, `${path}/${encodeURIComponent(k)}`);
  };
  walk(api.get('/status/').body, '/status');
  const zones = /^\/status\/(server|connections|slabs\/[^/]+|http\/(server_zones|location_zones|limit_conns|limit_reqs)\/[^/]+|http\/caches\/pcache|stream\/(server_zones|limit_conns)\/[^/]+|resolvers\/[^/]+)(\/|$)/;
  let labelled = 0;
  let flat = 0;
  for (const path of paths) {
    const text = api.text(path);
    if (zones.test(path)) {
      flat++;
      t.notOk(text.includes('#') || text.includes('zonal_'), `${path}: flat, below a zone`, { text });
      continue;
    }
    labelled++;
    const problems = checkExposition(text).concat(text.split('\n').filter((line) => line && !rootLines.has(line)).map((line) => `not in the whole tree: ${line}`));
    if (problems.length) t.fail(`${path}: the whole tree's names and labels`, { problems });
  }
  t.ok(labelled > 100 && flat > 100, `${labelled} labelled branches checked line by line against the whole tree, ${flat} flat ones`);
  t.equal(
    api.text('/status/http/upstreams/backend/peers/127.0.0.1:19211/selected/total'),
    '# HELP zonal_http_upstreams_peers_selected_total Requests forwarded to the peer.\n# TYPE zonal_http_upstreams_peers_selected_total counter\n' +
      'zonal_http_upstreams_peers_selected_total{upstream="backend",peer="127.0.0.1:19211"} 1\n',
    'a peer\'s field: the labelled family of the whole tree',
  );
  const backend = api.text('/status/http/upstreams/backend');
  t.match(backend, /^zonal_http_upstreams_peers_selected_total\{upstream="backend",peer="127\.0\.0\.1:19212"\} 0$/m);
  t.match(backend, /^zonal_http_upstreams_peers_weight\{upstream="backend",peer="127\.0\.0\.1:19212"\} 2$/m);
  t.notMatch(backend, /^[^#{]*127/m, 'no address in a metric name');
  t.match(api.text('/status/http/caches/sharded'), /^zonal_http_caches_shards_size\{zone="sharded",shard="\/var\/cache\/a"\} 0$/m, 'a sharded cache: shards as labels');
});

// A large response's memory serves the next one once the transport released it, and
// only then; released or not, every render is whole and the same.
t.test('a released JSON body is reused by the next render, an unreleased one is not', async (t) => {
  const upstreams = Array.from({ length: 100 }, (_, u) => ({
    name: `u${u}`,
    peers: Array.from({ length: 10 }, (_, p) => ({ server: `127.0.0.${p + 1}:${8000 + u}` })),
  }));
  const status = Status.create({ http: { upstreams } }, { workers: 1, instance: uniqueName('reuse') });
  t.teardown(() => status.remove());
  const { call } = apiOf(status);
  const first = call('/status/');
  const firstText = Buffer.from(first.body as Uint8Array).toString();
  t.ok(first.body.length > 64 * 1024, `the tree is large (${first.body.length} bytes)`);
  const kept = call('/status/');
  t.not((kept.body as Uint8Array).buffer, (first.body as Uint8Array).buffer, 'nothing released: fresh memory');
  t.equal(Buffer.from(first.body as Uint8Array).toString(), firstText, 'the first body is intact');
  first.release!();
  first.release!(); // a second call changes nothing
  const reused = call('/status/');
  t.equal((reused.body as Uint8Array).buffer, (first.body as Uint8Array).buffer, 'released: the same memory');
  const again = call('/status/');
  t.not((again.body as Uint8Array).buffer, (reused.body as Uint8Array).buffer, 'a buffer in use is not handed out twice');
  t.same(JSON.parse(Buffer.from(reused.body as Uint8Array).toString()), JSON.parse(firstText), 'the reused render is whole');
  t.same(JSON.parse(Buffer.from(kept.body as Uint8Array).toString()), JSON.parse(firstText));
});

// Uncommon codes take claimed counters; the JSON lists every code in ascending order
// whichever kind of counter holds it, `xxx` last; the 17th uncommon code goes to `xxx`.
t.test('responses: claimed codes merge into the common ones in order, overflow in xxx', async (t) => {
  const status = Status.create({ http: { serverZones: [{ name: 'site' }, { name: 'many' }] } }, { workers: 1, writer: true, instance: uniqueName('codes') });
  t.teardown(() => status.remove());
  const site = serverZones.recorder(status, 'site');
  for (const code of [599, 250, 200, 418, 102, 700, 404, 250]) site.responseSent(code, 1, 1);
  const api = apiOf(status);
  const responses = api.get('/status/http/server_zones/site/responses').body;
  t.same(Object.entries(responses), [['102', 1], ['200', 1], ['250', 2], ['404', 1], ['418', 1], ['599', 1], ['xxx', 1]]);
  t.match(api.text('/status/http/server_zones/site/'), /responses_250 2\nresponses_404 1\n/, 'the text format in the same order');

  const many = serverZones.recorder(status, 'many');
  const uncommon = Array.from({ length: 17 }, (_, i) => 521 + i); // 521-537: none is common
  for (const code of [...uncommon].reverse()) many.responseSent(code, 1, 1); // 521 comes last
  const counts = api.get('/status/http/server_zones/many/responses').body;
  t.same(Object.keys(counts), [...uncommon.slice(1).map(String).sort(), 'xxx'], 'sixteen claimed codes, ascending, then xxx');
  t.equal(counts.xxx, 1, 'the first code recorded after all sixteen were claimed is counted in xxx');
});
