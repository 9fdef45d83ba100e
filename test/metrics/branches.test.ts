// The tree's member order with every family configured: the spec's order at the root,
// in /status/http and in /status/stream.
import t from 'tap';
import { Status } from '../../src/metrics/status.js';
import { uniqueName } from '../helpers.js';
import { serverZones } from '../../src/metrics/http-zones.js';
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
  t.same(Object.keys(root), ['server', 'connections', 'slabs', 'http', 'stream', 'resolvers']);
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
