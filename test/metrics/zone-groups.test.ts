// Zones made at run time, bounded (metrics/zone-groups.ts): a group's zones appear on
// first use in any worker, without a declaration in the primary; no more than `count`
// are made, even when workers make different ones at once; what falls past them counts
// in the group's own zone, exactly; making a zone does not move the reload count.
import t from 'tap';
import { Status } from '../../src/metrics/status.js';
import { locationZones, serverZones } from '../../src/metrics/http-zones.js';
import { STATUS_ZONE } from '../../src/metrics/store.js';
import { groupZoneNames } from '../../src/metrics/zone-groups.js';
import { start, uniqueName } from '../helpers.js';
import { checkExposition } from '../api/exposition.js';
import { apiOf } from './api.js';

interface Zone {
  requests: { total: number; discarded: number };
  responses: Record<string, number>;
  data: { received: number; sent: number };
}

/** Runs one group-writer per key list at once (each waits for the word), and returns what
 * each counted nowhere. */
async function record(status: Status, family: 'server' | 'location', group: string, lists: string[][], repeat: number): Promise<number[]> {
  const run = uniqueName('run');
  const children = lists.map((keys) => start('group-writer.ts', [status.instance, family, group, JSON.stringify(keys), String(repeat), String(lists.length), run]));
  await Promise.all(children.map((c) => c.line(/^ready$/)));
  for (const c of children) c.proc.send('go');
  const done = await Promise.all(children.map((c) => c.line(/^done \d+$/)));
  await Promise.all(children.map((c) => c.exit()));
  return done.map((l) => Number(l.split(' ')[1]));
}

t.test('location zones made in two workers on first use, with exact counts', async (t) => {
  const status = Status.create({ http: { locationZones: ['api'], locationZoneGroups: [{ name: 'routes', count: 10 }] } }, { workers: 2, instance: uniqueName('groups') });
  t.teardown(() => status.remove());
  const api = apiOf(status);
  const before = api.get('/status/').body;
  t.same(Object.keys(before.http.location_zones), ['api', 'routes'], "the group's own zone is there from the start, after the configured ones");
  const generation = status.generation;

  // Both workers record /users and /orders; one /items, the other /cart and a key with
  // characters a configuration never writes.
  const odd = '/a "quoted"/b\\c';
  const uncounted = await record(status, 'location', 'routes', [['/users', '/orders', '/items'], ['/orders', '/users', '/cart', odd, '', 'x'.repeat(257)]], 5);
  t.same(uncounted, [0, 10], 'an empty key and one over 256 bytes are counted nowhere, as in Angie');

  const zones = api.get('/status/http/location_zones/').body as Record<string, Zone>;
  t.same(Object.keys(zones).slice(0, 2), ['api', 'routes']);
  t.same(Object.keys(zones).slice(2).sort(), ['/cart', '/items', '/orders', '/users', odd].sort(), 'each key its zone, after the group’s own');
  for (const [name, n] of [['/users', 10], ['/orders', 10], ['/items', 5], ['/cart', 5], [odd, 5]] as const) {
    t.same(zones[name].requests, { total: n, discarded: 0 }, `${name}: requests`);
    t.same(zones[name].responses, { '200': n }, `${name}: responses`);
    t.same(zones[name].data, { received: 10 * n, sent: 20 * n }, `${name}: bytes`);
  }
  t.equal(zones.routes.requests.total, 0, 'nothing overflowed');
  t.equal(status.generation, generation, 'the catalog was not written');
  t.equal(api.get('/status/server/').body.generation, 0, 'the reload count did not move');
  t.same(groupZoneNames(status, 'location_zones', 'routes').length, 5);
  // The made zones render in text as any other, their names escaped.
  const text = api.text('/status/http/location_zones/');
  t.match(text, 'zonal_http_location_zones_requests_total{zone="/a \\"quoted\\"/b\\\\c"} 5');
  t.same(checkExposition(api.text('/status/')), [], 'the whole tree passes the exposition checks');
});

t.test('the count holds when workers make different zones at once; the rest counts in the group’s own zone, exactly', async (t) => {
  const max = 8;
  const status = Status.create({ http: { serverZoneGroups: [{ name: 'hosts', count: max }] } }, { workers: 4, instance: uniqueName('race') });
  t.teardown(() => status.remove());
  const api = apiOf(status);
  // Two workers (as many as this machine has cores, so both run at once), started
  // together, 30 keys each, 10 of them shared: far more than `max`. Which worker makes
  // which zones is the scheduler's doing; the test after this one makes the lost race
  // certain.
  const lists = [0, 1].map((w) => [...Array.from({ length: 20 }, (_, i) => `w${w}-${i}.example`), ...Array.from({ length: 10 }, (_, i) => `shared-${i}.example`)]);
  const repeat = 4;
  await record(status, 'server', 'hosts', lists, repeat);
  const zones = api.get('/status/http/server_zones/').body as Record<string, Zone>;
  const made = Object.keys(zones).filter((n) => n !== 'hosts');
  t.equal(made.length, max, `exactly ${max} zones made`);
  t.same(Object.keys(zones)[0], 'hosts');
  // Each key counts whole in one zone: its own if made, else the group's.
  const sent = new Map<string, number>();
  for (const list of lists) for (const key of list) sent.set(key, (sent.get(key) ?? 0) + repeat);
  let overflow = 0;
  for (const [key, n] of sent) {
    if (made.includes(key)) t.equal(zones[key].requests.total, n, `${key} counted in its zone`);
    else overflow += n;
  }
  t.equal(zones.hosts.requests.total, overflow, `the ${overflow} requests of keys past the count are in "hosts"`);
  const total = Object.values(zones).reduce((s, z) => s + z.requests.total, 0);
  t.equal(total, 2 * 30 * repeat, 'not one request lost');
  t.comment(`made: ${made.join(', ')}`);
  t.equal(zones.hosts.responses['200'], overflow);
});

t.test('a write that loses the race for the last place reads the list again: the key counts in the group’s own zone', async (t) => {
  // The race made certain: writer A has read the list with one place left and made its
  // zone's memory when writer B (another attachment, as another worker would be) takes
  // the place; A's compare-and-swap must fail, and A must find the group full.
  const a = Status.create({ http: { locationZoneGroups: [{ name: 'g', count: 2 }] } }, { workers: 2, instance: uniqueName('cas'), writer: true });
  t.teardown(() => a.remove());
  const b = Status.attach({ instance: a.instance });
  locationZones.group(a, 'g').recorder('/first')!.requestStarted();
  const record = a.record(STATUS_ZONE, 'http/location_zones/g/zones');
  const writeIf = record.writeIf.bind(record);
  let raced = 0;
  record.writeIf = (content, generation) => {
    if (raced++ === 0) locationZones.group(b, 'g').recorder('/b')!.requestStarted();
    return writeIf(content, generation);
  };
  locationZones.group(a, 'g').recorder('/a')!.requestStarted();
  t.equal(raced, 1, "A wrote once: its one write lost, and the list it read again was full");
  t.same(groupZoneNames(a, 'location_zones', 'g'), ['/first', '/b'], 'two zones, the count');
  const zones = apiOf(a).get('/status/http/location_zones/').body;
  t.same(Object.keys(zones), ['g', '/first', '/b']);
  t.equal(zones.g.requests.total, 1, "A's request counted in the group's own zone");
  t.equal(zones['/b'].requests.total, 1);
});

t.test('a key another worker made is its zone, even in a worker that found the group full first', async (t) => {
  const status = Status.create({ http: { serverZoneGroups: [{ name: 'hosts', count: 2 }] } }, { workers: 2, instance: uniqueName('full') });
  t.teardown(() => status.remove());
  // One worker makes the two zones; a later one meets a third key first (the group is
  // full: it counts in "hosts"), then one of the two.
  await record(status, 'server', 'hosts', [['a.example', 'b.example']], 1);
  await record(status, 'server', 'hosts', [['c.example', 'a.example']], 1);
  const zones = apiOf(status).get('/status/http/server_zones/').body as Record<string, Zone>;
  t.same(Object.keys(zones), ['hosts', 'a.example', 'b.example']);
  t.equal(zones['a.example'].requests.total, 2, 'a.example counted in its zone by both workers');
  t.equal(zones.hosts.requests.total, 1, 'only c.example past the count');
});

t.test('in one process: a key that names a configured zone counts there; count 0 sends every key to the group’s own zone', async (t) => {
  const status = Status.create(
    {
      http: {
        serverZones: [{ name: 'main' }],
        serverZoneGroups: [{ name: 'none', count: 0 }, { name: 'hosts', count: 2, histogram: [10, 100] }],
        locationZones: ['listed', 'static'],
        locationZoneGroups: [{ name: 'listed', count: 1 }],
      },
    },
    { workers: 1, instance: uniqueName('local'), writer: true },
  );
  t.teardown(() => status.remove());
  const hosts = serverZones.group(status, 'hosts');
  t.equal(hosts, serverZones.group(status, 'hosts'), 'one group object per process');
  t.throws(() => serverZones.group(status, 'hots'), /no zone group "hots" in the catalog's http.serverZoneGroups/, 'a name the catalog lacks');
  hosts.recorder('main')!.requestStarted();
  hosts.recorder('a.example')!.requestStarted();
  t.equal(hosts.recorder('a.example'), hosts.recorder('a.example'), 'the recorder of a made zone is kept');
  hosts.recorder('b.example')!.requestStarted();
  hosts.recorder('c.example')!.requestStarted();
  hosts.recorder('c.example')!.responseSent(200, 1, 2, 50);
  serverZones.group(status, 'none').recorder('a.example')!.requestStarted();
  serverZones.group(status, 'none').recorder('d.example')!.requestStarted();
  const zones = apiOf(status).get('/status/http/server_zones/').body;
  t.same(Object.keys(zones), ['main', 'none', 'hosts', 'a.example', 'b.example']);
  t.equal(zones.main.requests.total, 1, 'a configured zone by its name');
  t.equal(zones['a.example'].requests.total, 2, "a zone another group made, by its name");
  t.equal(zones.hosts.requests.total, 1, 'the third key, past the count of 2');
  t.equal(zones.none.requests.total, 1);
  t.same(zones.hosts.histograms.response_time.buckets, [0, 1, 0], "the group's histogram bounds (10, 100): one of 50 ms");
  t.ok(zones['a.example'].histograms, 'its zones have its histogram');
  t.notOk(zones.main.histograms, 'a configured zone keeps its own setting');
  // A group the catalog lists among its zones is where it is listed, its zones after it.
  locationZones.group(status, 'listed').recorder('/x')!.requestStarted();
  t.same(Object.keys(apiOf(status).get('/status/http/location_zones/').body), ['listed', '/x', 'static']);
});

t.test('a reload keeps the zones of a group it keeps, the first `count` of one it shrinks, none of one it drops', async (t) => {
  const config = { http: { locationZoneGroups: [{ name: 'a', count: 4 }, { name: 'b', count: 4 }, { name: 'c', count: 4 }] } };
  const status = Status.create(config, { workers: 1, instance: uniqueName('reload'), writer: true });
  t.teardown(() => status.remove());
  for (const g of ['a', 'b', 'c']) for (const k of ['/1', '/2', '/3']) locationZones.group(status, g).recorder(`${g}${k}`)!.requestStarted();
  status.reload({ http: { locationZoneGroups: [{ name: 'a', count: 4 }, { name: 'b', count: 2 }] } });
  const zones = apiOf(status).get('/status/http/location_zones/').body;
  t.same(Object.keys(zones), ['a', 'a/1', 'a/2', 'a/3', 'b', 'b/1', 'b/2']);
  t.equal(zones['a/1'].requests.total, 1, 'counts kept');
  t.equal(apiOf(status).get('/status/server/').body.generation, 1, 'one reload');
  // After the reload, the group is full at 2: a new key counts in "b".
  locationZones.group(status, 'b').recorder('b/9')!.requestStarted();
  t.equal(apiOf(status).get('/status/http/location_zones/b').body.requests.total, 1);
  // A dropped group counts nowhere (a draining worker's requests)...
  t.equal(locationZones.group(status, 'c').recorder('c/4'), undefined, 'a group the reload dropped');
  // ...and its zones come back with their memory if it comes back.
  status.reload(config);
  locationZones.group(status, 'c').recorder('c/1')!.requestStarted();
  t.equal(apiOf(status).get('/status/http/location_zones/').body['c/1'].requests.total, 2);
});
