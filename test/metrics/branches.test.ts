// The tree's member order with every family configured: the spec's order at the root,
// in /status/http and in /status/stream.
import t from 'tap';
import { Status } from '../../src/metrics/status.js';
import { uniqueName } from '../helpers.js';
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
