// The histograms extension in the embedded API: the member's shape, null percentiles
// while empty, peers' histograms exact across two recording processes of one instance,
// and a zone too full for a histogram losing only the histogram.
import t from 'tap';
import { Status } from '../../src/metrics/status.js';
import { locationZones, serverZones } from '../../src/metrics/http-zones.js';
import { peer } from '../../src/metrics/upstreams.js';
import { apiOf, shape } from './api.js';
import { uniqueName } from '../helpers.js';

t.test('shape, and null percentiles until the first observation', (t) => {
  const status = Status.create(
    { http: { serverZones: [{ name: 'site', histogram: true }], locationZones: ['loc'], locationHistograms: { loc: [10, 100] }, upstreams: [{ name: 'u', peers: [{ server: '127.0.0.1:1' }], histogram: false }] } },
    { workers: 1, writer: true, instance: uniqueName('hshape') },
  );
  t.teardown(() => status.remove());
  const api = apiOf(status);
  const empty = api.get('/status/http/server_zones/site/histograms').body;
  t.same(shape(empty), [
    'response_time/bounds: array',
    'response_time/buckets: array',
    'response_time/count: number',
    'response_time/sum: number',
    'response_time/p50: null',
    'response_time/p90: null',
    'response_time/p99: null',
  ]);
  t.same(empty.response_time.buckets, new Array(14).fill(0));
  const loc = locationZones.recorder(status, 'loc');
  for (const ms of [5, 50, 50, 500]) loc.responseSent(200, 1, 1, ms);
  loc.responseSent(200, 1, 1); // no time given (an embedding server that does not time): counted, not observed
  const h = api.get('/status/http/location_zones/loc/histograms/response_time').body;
  t.same(h, { bounds: [10, 100], buckets: [1, 2, 1], count: 4, sum: 605, p50: 55, p90: 100, p99: 100 });
  t.equal(api.get('/status/http/location_zones/loc/responses/200').body, 5);
  t.notOk('histograms' in api.get('/status/http/upstreams/u/peers/127.0.0.1:1').body, 'an upstream with histograms off');
  t.end();
});

t.test('a zone with no room for a histogram keeps its counters and shows none', (t) => {
  const many = Array.from({ length: 40 }, (_, i) => ({ server: `127.0.0.1:${1000 + i}` }));
  // 128 KiB: room for the peers' blocks, not for their histograms as well.
  const status = Status.create({ http: { upstreams: [{ name: 'tight', zoneSize: 128 * 1024, peers: many, histogram: true }] } }, { workers: 2, writer: true, instance: uniqueName('htight') });
  t.teardown(() => status.remove());
  const peers = apiOf(status).get('/status/http/upstreams/tight/peers').body;
  t.equal(Object.keys(peers).length, 40, 'every peer is there');
  const without = Object.values(peers).filter((p: any) => !('histograms' in p)).length;
  t.ok(without > 0, `${without} peers had no room for a histogram and show none`);
  const p = peer(status, 'http', 'tight', '127.0.0.1:1039');
  p.selected();
  p.responded(200, 1, 1, 1, 2);
  t.equal(apiOf(status).get('/status/http/upstreams/tight/peers/127.0.0.1:1039/selected/total').body, 1, 'and records as before');
  t.end();
});

t.test('zones recorded by two writers of one instance add up', (t) => {
  const instance = uniqueName('htwo');
  const status = Status.create({ http: { serverZones: [{ name: 'site', histogram: [1, 2] }] } }, { workers: 2, writer: false, instance });
  t.teardown(() => status.remove());
  // Two attachments in this process stand for two workers: each claims its own shard.
  const a = Status.attach({ instance });
  const b = Status.attach({ instance });
  serverZones.recorder(a, 'site').responseSent(200, 0, 0, 0.5);
  serverZones.recorder(b, 'site').responseSent(200, 0, 0, 1.5);
  serverZones.recorder(b, 'site').responseSent(200, 0, 0, 3);
  t.same(apiOf(status).get('/status/http/server_zones/site/histograms/response_time/buckets').body, [1, 1, 1]);
  t.end();
});
