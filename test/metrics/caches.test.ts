// /status/http/caches/<cache>: size, max_size when configured, cold (a shared cell),
// the seven cache statuses, and shards when sharding is configured; two processes.
import t from 'tap';
import { resolve } from '../../src/api/index.js';
import { cache } from '../../src/metrics/caches.js';
import { statusRoot } from '../../src/metrics/root.js';
import { STATUS_ZONE, Status } from '../../src/metrics/status.js';
import { start, uniqueName } from '../helpers.js';
import { apiOf, samples, shape } from './api.js';
import { traffic } from './traffic.js';

const COUNTERS_SHAPE = [
  ...['hit', 'stale', 'updating', 'revalidated'].flatMap((s) => [`${s}/responses: number`, `${s}/bytes: number`]),
  ...['miss', 'expired', 'bypass'].flatMap((s) => [
    `${s}/responses: number`,
    `${s}/bytes: number`,
    `${s}/responses_written: number`,
    `${s}/bytes_written: number`,
  ]),
];
const WITH_MAX = ['size: number', 'max_size: number', 'cold: boolean', ...COUNTERS_SHAPE];
const WITHOUT_MAX = ['size: number', 'cold: boolean', ...COUNTERS_SHAPE];
const SHARDS = ['/var/cache/a', '/var/cache/b'];

const zero = (written: boolean) => (written ? { responses: 0, bytes: 0, responses_written: 0, bytes_written: 0 } : { responses: 0, bytes: 0 });
const ctx = { dateEpoch: false, address: '127.0.0.1', configFiles: false, now: 0 };

t.test('caches: every field, conditional members, exact sums over two workers', async (t) => {
  const instance = uniqueName('cache');
  const status = Status.create(
    {
      http: {
        caches: [
          { name: 'pcache', maxSize: 10485760, zoneSize: 256 * 1024 },
          { name: 'plain' },
          { name: 'sharded', maxSize: 2_000_000, shards: [{ path: SHARDS[0], maxSize: 1_000_000 }, { path: SHARDS[1] }] },
        ],
      },
    },
    { workers: 2, writer: true, instance },
  );
  t.teardown(() => status.remove());
  const api = apiOf(status);

  const empty = api.get('/status/http/caches');
  t.equal(empty.status, 200);
  t.same(Object.keys(empty.body), ['pcache', 'plain', 'sharded'], 'one member per cache, in order');
  t.same(shape(empty.body.pcache), WITH_MAX, 'max_size where configured; the spec fields in order, with their types');
  t.same(shape(empty.body.plain), WITHOUT_MAX, 'no max_size where not configured, no shards without sharding');
  t.same(shape(empty.body.sharded), [
    ...WITH_MAX,
    `shards/${SHARDS[0]}/size: number`,
    `shards/${SHARDS[0]}/max_size: number`,
    `shards/${SHARDS[0]}/cold: boolean`,
    `shards/${SHARDS[1]}/size: number`,
    `shards/${SHARDS[1]}/cold: boolean`,
  ], 'shards keyed by path, max_size only where the shard configures it');
  t.same(empty.body.plain, {
    size: 0,
    cold: false,
    hit: zero(false),
    stale: zero(false),
    updating: zero(false),
    revalidated: zero(false),
    miss: zero(true),
    expired: zero(true),
    bypass: zero(true),
  }, 'all zero and warm before any traffic');

  traffic.caches(status);
  const worker = start('families.ts', [instance, 'caches']);
  await worker.line(/recorded/);
  t.equal(await worker.exit(), 0);

  const p = api.get('/status/http/caches/pcache');
  t.equal(p.status, 200);
  t.same(shape(p.body), WITH_MAX);
  t.same(p.body, {
    size: 16384,
    max_size: 10485760,
    cold: false,
    hit: { responses: 6, bytes: 48 },
    stale: { responses: 2, bytes: 6 },
    updating: { responses: 2, bytes: 8 },
    revalidated: { responses: 2, bytes: 10 },
    miss: { responses: 4, bytes: 36, responses_written: 2, bytes_written: 22 },
    expired: { responses: 2, bytes: 40, responses_written: 2, bytes_written: 0 },
    bypass: { responses: 2, bytes: 60, responses_written: 0, bytes_written: 0 },
  }, 'every status counted; written only when given, and only for miss, expired, bypass');

  const s = api.get('/status/http/caches/sharded').body;
  t.equal(s.size, 280, 'the cache size is the total, shards included');
  t.same(s.miss, { responses: 2, bytes: 2000, responses_written: 2, bytes_written: 2000 });
  t.same(s.shards, {
    [SHARDS[0]]: { size: 200, max_size: 1_000_000, cold: false },
    [SHARDS[1]]: { size: 80, cold: false },
  });
  t.same(api.get('/status/http/caches/sharded/shards').body, s.shards, 'the shards object alone');

  t.equal(api.get('/status/http/caches/pcache/max_size').body, 10485760, 'a single field');
  t.equal(api.get('/status/http/caches/pcache/cold').body, false);
  t.equal(api.get('/status/http/caches/pcache/miss/bytes_written').body, 22);
  t.equal(api.get('/status/http/caches/plain/max_size').status, 404, 'no max_size path where not configured');
  t.equal(api.get('/status/http/caches/plain/shards').status, 404, 'no shards path without sharding');
  t.equal(api.get('/status/http/caches/pcache/hit/responses_written').status, 404, 'hit has no written counters');
  t.equal(api.get('/status/http/caches/nope').status, 404, 'an unknown cache is not found');
  t.equal(api.get('/status/http/caches/nope').body.error, 'PathNotFound');
  // A shard's key is a path: '/' in a URI always separates segments (%2F is decoded
  // first), so a single shard is reached through the tree, not a URI.
  const trail = resolve(statusRoot(status), ['http', 'caches', 'sharded', 'shards', SHARDS[0], 'size'], ctx);
  t.equal(trail?.at(-1)?.node.json(ctx), 200, 'a shard field through the walker');
  t.equal(resolve(statusRoot(status), ['http', 'caches', 'sharded', 'shards', '/nope'], ctx), undefined);

  // cold: shared cells, set by another process's cache loader, seen by all.
  const loader = start('families.ts', [instance, 'cacheLoader']);
  await loader.line(/recorded/);
  t.equal(await loader.exit(), 0);
  t.equal(api.get('/status/http/caches/plain/cold').body, true, 'cold while another process loads the cache');
  const cold = api.get('/status/http/caches/sharded').body;
  t.equal(cold.cold, true, 'a cache is cold while one of its shards is');
  t.equal(cold.shards[SHARDS[0]].cold, true);
  t.equal(cold.shards[SHARDS[1]].cold, false);
  cache(status, 'sharded').setCold(false, SHARDS[0]);
  cache(status, 'plain').setCold(false);
  t.equal(api.get('/status/http/caches/sharded/cold').body, false, 'warm again once the shard is loaded');
  t.equal(api.get('/status/http/caches/plain/cold').body, false);
  cache(status, 'plain').setCold(true);

  // The counters live in each cache's own zone, which /status/slabs shows.
  t.ok(status.zoneNamed('pcache').keys().includes('cache'), "the counters are in the cache's zone");
  t.ok(status.zoneNamed('sharded').keys().includes(`cache/shards/${SHARDS[0]}`), "a shard's size too");
  t.notOk(status.zoneNamed(STATUS_ZONE).keys().some((k) => k.startsWith('cache')), 'none in the status zone');
  const slabs = api.get('/status/slabs').body;
  t.same(Object.keys(slabs), ['pcache', 'plain', 'sharded']);
  t.ok(slabs.pcache.pages.used > 0, 'the cache zone has pages in use');
  t.ok(Object.values(slabs.sharded.slots as Record<string, { reqs: number }>).some((slot) => slot.reqs > 0), 'and slot allocations');

  t.same(Object.keys(api.get('/status/http').body), ['caches']);
  t.same(Object.keys(api.get('/status/').body), ['server', 'connections', 'slabs', 'http']);

  const text = api.text('/status/http/caches');
  t.match(text, /^# HELP zonal_http_caches_size Current size of the cache in bytes\.\n# TYPE zonal_http_caches_size gauge\nzonal_http_caches_size\{zone="pcache"\} 16384\nzonal_http_caches_size\{zone="plain"\} 0\nzonal_http_caches_size\{zone="sharded"\} 280\n/);
  t.match(text, /# TYPE zonal_http_caches_max_size gauge\nzonal_http_caches_max_size\{zone="pcache"\} 10485760\nzonal_http_caches_max_size\{zone="sharded"\} 2000000\n#/, 'max_size only where configured');
  t.match(text, /# TYPE zonal_http_caches_cold gauge\nzonal_http_caches_cold\{zone="pcache"\} 0\nzonal_http_caches_cold\{zone="plain"\} 1\n/, 'cold as 1 or 0');
  t.match(text, /# TYPE zonal_http_caches_hit_responses_total counter\nzonal_http_caches_hit_responses_total\{zone="pcache"\} 6\n/);
  t.match(text, /\nzonal_http_caches_miss_bytes_written_total\{zone="pcache"\} 22\n/);
  t.match(text, /# TYPE zonal_http_caches_shards_size gauge\nzonal_http_caches_shards_size\{zone="sharded",shard="\/var\/cache\/a"\} 200\nzonal_http_caches_shards_size\{zone="sharded",shard="\/var\/cache\/b"\} 80\n/);
  t.match(text, /# TYPE zonal_http_caches_shards_max_size gauge\nzonal_http_caches_shards_max_size\{zone="sharded",shard="\/var\/cache\/a"\} 1000000\n#/);
  t.match(text, /\nzonal_http_caches_shards_cold\{zone="sharded",shard="\/var\/cache\/b"\} 0\n/);
  const families = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]);
  t.equal(families.length, 3 + 8 + 12 + 3, 'one family per field: size, max_size, cold, 8 read and 12 fetched counters, 3 shard fields');
  t.ok(families.every((name) => text.includes(`# HELP ${name} `)), 'every family has HELP');
  t.equal(samples(text).length, 3 * 23 - 1 + 5);

  t.equal(
    api.text('/status/http/caches/pcache'),
    'size 16384\nmax_size 10485760\ncold 0\n' +
      'hit_responses 6\nhit_bytes 48\nstale_responses 2\nstale_bytes 6\nupdating_responses 2\nupdating_bytes 8\nrevalidated_responses 2\nrevalidated_bytes 10\n' +
      'miss_responses 4\nmiss_bytes 36\nmiss_responses_written 2\nmiss_bytes_written 22\n' +
      'expired_responses 2\nexpired_bytes 40\nexpired_responses_written 2\nexpired_bytes_written 0\n' +
      'bypass_responses 2\nbypass_bytes 60\nbypass_responses_written 0\nbypass_bytes_written 0\n',
    'flat text below a cache',
  );
  // A sharded cache holds instances: its branch has the whole tree's families, its
  // shards as labels rather than paths inside names (issue 19).
  const sharded = api.text('/status/http/caches/sharded');
  t.same(sharded.split('\n').filter((l) => l && !text.split('\n').includes(l)), [], 'a sharded cache: the lines of the whole tree, only fewer');
  t.match(sharded, /# TYPE zonal_http_caches_shards_size gauge\nzonal_http_caches_shards_size\{zone="sharded",shard="\/var\/cache\/a"\} 200\nzonal_http_caches_shards_size\{zone="sharded",shard="\/var\/cache\/b"\} 80\n/, 'shards as labels');
  t.match(sharded, /^zonal_http_caches_size\{zone="sharded"\} 280$/m);
  t.notMatch(sharded, /zone="pcache"/, 'only its own series');
});
