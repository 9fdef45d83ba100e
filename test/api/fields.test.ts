// ?fields= through the handler and each transport (uWS and node:http): only the named
// members of the object the path reaches, in its own order, in JSON and in the text
// format; unknown names absent; bad lists a clear JSON 400.
import t from 'tap';
import { createApi } from '../../src/api/index.js';
import { Status } from '../../src/metrics/status.js';
import { peer, upstream } from '../../src/metrics/upstreams.js';
import { serverZones } from '../../src/metrics/http-zones.js';
import { uniqueName } from '../helpers.js';
import { checkExposition } from './exposition.js';
import { transports } from './transports.js';

const status = Status.create(
  {
    http: {
      serverZones: [{ name: 'site' }, { name: 'other' }],
      upstreams: [{ name: 'u', peers: [{ server: '127.0.0.1:8080', weight: 3 }, { server: '127.0.0.1:8081' }], histogram: true }],
    },
  },
  { workers: 1, writer: true, instance: uniqueName('fields') },
);
t.teardown(() => status.remove());
const p = peer(status, 'http', 'u', '127.0.0.1:8080');
p.selected();
p.responded(200, 10, 20, 1, 12);
p.released();
upstream(status, 'http', 'u').keepaliveCached();
serverZones.recorder(status, 'site').responseSent(200, 1, 2, 4);
const handler = createApi({ status });

for (const transport of transports) {
  t.test(transport.name, async (t) => {
    const get = await transport.start(handler);
    t.teardown(() => get.close());
    const json = async (path: string, query: string) => {
      const r = await get(path, query);
      t.equal(r.status, 200, `${path}?${query}: 200`);
      return JSON.parse(r.body);
    };

    const peerPath = '/status/http/upstreams/u/peers/127.0.0.1:8080';
    t.same(await json(peerPath, 'fields=state,selected'), { state: 'up', selected: { current: 0, total: 1, last: (await json(peerPath, '')).selected.last } }, 'the issue\'s example: two members');
    t.same(Object.keys(await json(peerPath, 'fields=selected,state,weight')), ['weight', 'state', 'selected'], 'in the object\'s own order, not the list\'s');
    t.same(await json(peerPath, 'fields=weight,nonesuch'), { weight: 3 }, 'an unknown name is simply absent');
    t.same(await json(peerPath, 'fields=nonesuch'), {}, 'only unknown names: an empty object');
    t.same(await json(peerPath, 'fields=histograms'), { histograms: (await json(peerPath, '')).histograms }, 'the histograms extension is a member like any');
    t.same(await json(peerPath, 'fields=max_conns'), {}, 'a member absent for this peer stays absent');
    t.same(await json(peerPath, 'fields=weight,,'), { weight: 3 }, 'empty names between commas are ignored');
    t.same(Object.keys(await json('/status/http/upstreams/u/peers', 'fields=127.0.0.1:8081')), ['127.0.0.1:8081'], 'a collection: members are its instances');
    t.same(Object.keys(await json('/status/http/upstreams/u', 'fields=keepalive')), ['keepalive']);
    t.same(Object.keys(await json('/status/', 'fields=connections,server')), ['server', 'connections'], 'the root');
    t.same(await json('/status/http/server_zones/site', 'fields=data&pretty=off'), { data: { received: 1, sent: 2 } }, 'with other arguments');

    const text = async (path: string, fields: string) => {
      const r = await get(path, `format=prometheus&fields=${fields}`);
      t.equal(r.status, 200);
      return r.body;
    };
    const labelled = await text('/status/http/upstreams/u/peers/127.0.0.1:8080', 'state,selected');
    t.same(checkExposition(labelled), [], 'the text format: still a valid exposition');
    t.same(
      labelled.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.replace(/\{.*\}/, '')).sort(),
      ['zonal_http_upstreams_peers_selected_current 0', 'zonal_http_upstreams_peers_selected_total 1', 'zonal_http_upstreams_peers_state 1'],
      'only those members\' metrics',
    );
    const histogram = await text('/status/http/upstreams/u/peers/127.0.0.1:8080', 'histograms');
    t.same(checkExposition(histogram), []);
    t.match(histogram, /^zonal_http_upstreams_peers_histograms_response_time_seconds_count\{upstream="u",peer="127.0.0.1:8080"\} 1$/m);
    t.notMatch(histogram, /selected/);
    t.same((await text('/status/http/server_zones/site', 'data')).trim().split('\n'), ['data_received 1', 'data_sent 2'], 'below a zone: the flat form, only those members');
    t.same(
      (await text('/status/http/server_zones', 'other')).split('\n').filter((l) => l && !l.startsWith('#')).every((l) => l.includes('zone="other"')),
      true,
      'a collection in text: only the named instances',
    );

    const bad = async (query: string, why: RegExp) => {
      const r = await get(peerPath, query);
      t.equal(r.status, 400, `${query}: 400`);
      t.equal(r.headers['content-type'], 'application/json');
      const body = JSON.parse(r.body);
      t.equal(body.error, 'BadRequest');
      t.match(body.description, why, `${query}: says why`);
    };
    await bad('fields=', /names no member/);
    await bad('fields=,,,', /names no member/);
    await bad(`fields=${'a'.repeat(5000)}`, /5000 characters long: at most 4096/);
    await bad(`fields=${Array.from({ length: 300 }, (_, i) => `f${i}`).join(',')}`, /names 300 members: at most 256/);
    const leaf = await get(`${peerPath}/weight`, 'fields=weight');
    t.equal(leaf.status, 400, 'a single value has no members to keep');
    t.match(JSON.parse(leaf.body).description, /is a single value/);
  });
}
