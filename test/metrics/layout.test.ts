// The bytes of an answer, not only its values: the writer lays JSON out as
// JSON.stringify(value, null, '\t') does (pretty=off: as JSON.stringify(value)), keys,
// commas, indentation and number texts alike, through every kind of member the tree has:
// zones with and without histograms, histograms empty and not, peers with response
// codes and times, the slab statistics and the server's config_files.
import t from 'tap';
import { bodyText, createApi } from '../../src/api/index.js';
import { Status } from '../../src/metrics/status.js';
import { locationZones, serverZones } from '../../src/metrics/http-zones.js';
import { peer } from '../../src/metrics/upstreams.js';
import { uniqueName } from '../helpers.js';

t.test('every answer is JSON.stringify\'s layout of its own value, pretty and not', async (t) => {
  const status = Status.create(
    {
      http: {
        serverZones: [{ name: 'site', histogram: true }, { name: 'quiet', histogram: true }],
        locationZones: ['loc', 'plain'],
        locationHistograms: { loc: [0.5, 10, 100] },
        upstreams: [
          { name: 'u', peers: [{ server: '127.0.0.1:1', weight: 3 }, { server: '127.0.0.1:2', backup: true }], histogram: [1, 2.5, 1000] },
          { name: 'v', peers: [{ server: 'localhost:3' }] },
        ],
      },
    },
    { workers: 2, writer: true, instance: uniqueName('layout'), configFiles: { '/etc/zonal/zonal.conf': 'http {\n\t"quoted" \\ \u00e9\n}\n' } },
  );
  t.teardown(() => status.remove());
  const site = serverZones.recorder(status, 'site');
  for (const [code, ms] of [[200, 0.25], [200, 7], [404, 12.5], [599, 3000], [102, 1]] as const) {
    site.requestStarted();
    site.responseSent(code, 100, 1234567, ms);
  }
  const loc = locationZones.recorder(status, 'loc');
  for (const ms of [0.1, 5, 50, 2e6]) loc.responseSent(200, 1, 2 ** 33, ms);
  const p = peer(status, 'http', 'u', '127.0.0.1:1');
  p.selected();
  p.responded(200, 10, 20, 1.5, 2.25);
  p.responded(503, 1, 2, 900, 1000.001);

  const api = createApi({ status, mounts: [{ location: '/status/', api: '/status/', configFiles: true }] });
  const paths = ['/status/', '/status/http/upstreams/u/peers/', '/status/http/server_zones/site/histograms/response_time', '/status/slabs/', '/status/server'];
  let answers = 0;
  for (const path of paths)
    for (const query of ['', 'pretty=off', 'date=epoch', 'date=epoch&pretty=off']) {
      const body = bodyText(api({ method: 'GET', path, query, address: '127.0.0.1' })!);
      const value = JSON.parse(body);
      const want = (query.includes('pretty=off') ? JSON.stringify(value) : JSON.stringify(value, null, '\t')) + '\n';
      t.equal(body, want, `${path}?${query}`);
      answers++;
    }
  t.equal(answers, paths.length * 4);
  const whole = JSON.parse(bodyText(api({ method: 'GET', path: '/status/', query: '', address: '127.0.0.1' })!));
  t.same(Object.keys(whole.http.upstreams.u.peers['127.0.0.1:1'].histograms), ['response_time'], 'the checks covered a peer histogram');
  t.ok(whole.http.upstreams.u.peers['127.0.0.1:1'].histograms.response_time.p50 > 0, 'with percentiles');
  t.equal(whole.http.server_zones.quiet.histograms.response_time.p50, null, 'and an empty one');
});
