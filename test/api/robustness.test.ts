// No request crashes the API: whatever the method, path, query or body, the handler
// answers with a well-formed response (JSON for errors) or leaves the path to its host.
// And a reload counts in generation and load_time while the counters carry on.
import t from 'tap';
import { bodyText, createApi } from '../../src/api/index.js';
import { serverZones } from '../../src/metrics/http-zones.js';
import { Status } from '../../src/metrics/status.js';
import { uniqueName } from '../helpers.js';
import { METHODS, prng, QUERIES, randomPath } from './fuzz.js';

const config = {
  http: {
    serverZones: [{ name: 'site', ssl: true }],
    caches: [{ name: 'c', maxSize: 1024, shards: [{ path: '/var/cache/a' }] }],
    upstreams: [{ name: 'u', peers: [{ server: '127.0.0.1:1', sid: 'x' }], queue: true, probes: true }],
  },
  stream: { serverZones: [{ name: 's' }], upstreams: [{ name: 'su', peers: [{ server: '127.0.0.1:2' }] }] },
  resolvers: ['r'],
};

t.test('random requests: always a well-formed answer, never an exception', async (t) => {
  const status = Status.create(config, { workers: 1, writer: true, instance: uniqueName('fuzz') });
  t.teardown(() => status.remove());
  const api = createApi({
    status,
    mounts: [
      { location: '/status/', api: '/status/' },
      { location: /^\/re\/([^/]*)\/(.*)$/, api: '/status/$1/$2' },
      { location: '/v/', api: '/status/http/server_zones/$arg_z/' },
    ],
  });
  const g = prng(7);
  const { rnd, pick } = g;
  let problems = 0;
  let answered = 0;
  for (let i = 0; i < 5000; i++) {
    const path = randomPath(g, ['/status', '/re', '/v', '/other', '']);
    const query = pick(QUERIES);
    const method = pick(METHODS);
    try {
      const r = api({ method, path, query, address: '127.0.0.1', body: rnd(4) === 0 ? Buffer.alloc(rnd(70000)) : undefined });
      if (!r) continue;
      answered++;
      const ok =
        Number.isInteger(r.status) &&
        r.status >= 200 &&
        r.status < 600 &&
        typeof r.headers['Content-Type'] === 'string' &&
        (method === 'HEAD' ? bodyText(r) === '' : true);
      if (!ok) problems++;
      if (r.status >= 400 && method !== 'HEAD') {
        const body = JSON.parse(bodyText(r));
        if (typeof body.error !== 'string' || typeof body.description !== 'string') problems++;
      }
    } catch (e) {
      problems++;
      t.fail(`${method} ${path}?${query} threw: ${(e as Error).message}`);
      break;
    }
  }
  t.equal(problems, 0, 'every answer well-formed, every error a JSON { error, description }');
  t.ok(answered > 2000, `${answered} requests answered`);
});

t.test('a reload counts: generation + 1, a new load_time, counters carry on', async (t) => {
  const status = Status.create(config, { workers: 1, writer: true, instance: uniqueName('reload') });
  t.teardown(() => status.remove());
  const api = createApi({ status });
  const get = (path: string) => JSON.parse(bodyText(api({ method: 'GET', path, query: 'date=epoch', address: '127.0.0.1' })!));
  const site = serverZones.recorder(status, 'site');
  site.requestStarted();
  const before = get('/status/server');
  t.equal(before.generation, 0);
  await new Promise((r) => setTimeout(r, 5));
  status.reload({ ...config, http: { ...config.http, serverZones: [{ name: 'site', ssl: true }, { name: 'new' }] } });
  const after = get('/status/server');
  t.equal(after.generation, 1, 'one reload');
  t.ok(after.load_time > before.load_time, 'load_time moved');
  t.same(Object.keys(get('/status/http/server_zones')), ['site', 'new'], 'the new zone is there');
  t.equal(get('/status/http/server_zones/site/requests/total'), 1, 'the kept zone kept its counts');
  t.equal(get('/status/http/server_zones/new/requests/total'), 0, 'the new zone starts at zero');
});
