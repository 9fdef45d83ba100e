// /status/slabs/<zone>: each figure where the zone's own statistics (Zone.slabStats())
// put it, at every depth the tree writes a zone at, in both layouts; the figures read
// anew for each answer.
import t from 'tap';
import { bodyText, createApi } from '../../src/api/index.js';
import { Status } from '../../src/metrics/status.js';
import { uniqueName } from '../helpers.js';

t.test("a zone's slab figures are its statistics, each in its place", async (t) => {
  const status = Status.create(
    { http: { upstreams: [{ name: 'u', peers: [{ server: '127.0.0.1:1' }] }, { name: 'v', zoneSize: 128 * 1024, peers: [{ server: '127.0.0.1:2' }] }] } },
    { workers: 2, writer: true, instance: uniqueName('slabs') },
  );
  t.teardown(() => status.remove());
  const api = createApi({ status, mounts: [{ location: '/status/', api: '/status/' }] });
  const get = (path: string, query = '') => JSON.parse(bodyText(api({ method: 'GET', path, query, address: '127.0.0.1' })!));
  const zone = status.zoneNamed('u');
  const check = (what: string) => {
    const want = zone.slabStats();
    for (const query of ['', 'pretty=off']) {
      t.same(get('/status/slabs/u', query), want, `${what}: /status/slabs/u ${query}`);
      t.same(get('/status/slabs/', query).u, want, `${what}: /status/slabs/ ${query}`);
      t.same(get('/status/', query).slabs.u, want, `${what}: /status/ ${query}`);
      t.same(get('/status/slabs/u/slots/64', query), want.slots['64'], `${what}: one slot size ${query}`);
    }
  };
  check('as created');
  // Figures different from one another: slots of several sizes taken, some given back.
  const taken: number[] = [];
  for (const size of [8, 8, 8, 16, 100, 100, 700, 1500, 3000]) taken.push(zone.alloc(size));
  zone.free(taken[1]);
  zone.free(taken[4]);
  const stats = zone.slabStats();
  const figures = [stats.pages.used, stats.pages.free, ...Object.values(stats.slots).flatMap((s) => [s.used, s.free, s.reqs, s.fails])];
  t.ok(new Set(figures.filter((f) => f > 0)).size >= 6, `the figures differ (${figures.join(' ')})`);
  check('after allocations');
  // The other zone filled up: its failed allocations show as `fails`.
  const small = status.zoneNamed('v');
  let tries = 0;
  while (small.alloc(700) !== 0 && ++tries < 10_000);
  small.alloc(700);
  t.ok(small.slabStats().slots['1024'].fails >= 2, 'a full zone counts its failures');
  t.same(Object.keys(get('/status/slabs/')), ['u', 'v'], 'each zone has its own');
  for (const query of ['', 'pretty=off']) {
    t.same(get('/status/slabs/v', query), small.slabStats(), `and its own figures ${query}`);
    t.same(get('/status/', query).slabs, { u: zone.slabStats(), v: small.slabStats() }, `both in the whole tree ${query}`);
  }
});
