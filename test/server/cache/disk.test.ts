// The cache on disk through bin/zonal: a restart's loader finds it again, max_size holds
// under a fill of ten times its size, shards report their own sizes, and a broken file
// is a miss, never a crash.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync, truncateSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CacheBackend } from './backend.js';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';

const [site, admin, bport] = await freePorts(3);
const backend = new CacheBackend(bport);
await backend.start();
const dir = mkdtempSync(join(tmpdir(), 'zonal-cache-disk-'));
t.teardown(async () => {
  await backend.stop();
  rmSync(dir, { recursive: true, force: true });
});

const config = (paths: string) => `
worker_processes 2;
http {
    ${paths}
    upstream b { server 127.0.0.1:${bport}; }
    server {
        listen 127.0.0.1:${site};
        add_header X-Cache-Status $upstream_cache_status;
        location / {
            proxy_pass http://b;
            proxy_cache pcache;
            proxy_cache_valid 200 10m;
        }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`;

const cache = () => getJson(`http://127.0.0.1:${admin}/status/http/caches/pcache`).then((r) => r.body);

async function get(path: string): Promise<{ status: number; body: string; cache: string | null }> {
  const res = await fetch(`http://127.0.0.1:${site}${path}`);
  return { status: res.status, body: await res.text(), cache: res.headers.get('x-cache-status') };
}

/** nginx's file of a key with levels=1:2. */
function fileOf(root: string, key: string): string {
  const hex = createHash('md5').update(key).digest('hex');
  return join(root, hex.slice(-1), hex.slice(-3, -1), hex);
}

/** Bytes of the cache files under `root` (not the temporary ones). */
function onDisk(root: string): number {
  let total = 0;
  const walk = (d: string) => {
    if (!existsSync(d)) return;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === '.temp') continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else total += statSync(p).size;
    }
  };
  walk(root);
  return total;
}

t.test('a restart finds the cache on disk: cold, then the same size, and hits', async (t) => {
  const root = join(dir, 'restart');
  const line = (loader: string) => `proxy_cache_path ${root} levels=1:2 keys_zone=pcache:1m ${loader};`;
  let zonal = await Zonal.start({ 'zonal.conf': config(line('')) });
  for (let i = 0; i < 8; i++) t.equal((await get(`/r${i}`)).cache, 'MISS');
  const before = await cache();
  t.ok(before.size > 0);
  const reached = backend.total;
  await zonal.stop();

  // One file a batch, 400 ms apart: the loader takes about 3 s, longer than a start and a
  // request take on a loaded machine.
  zonal = await Zonal.start({ 'zonal.conf': config(line('loader_files=1 loader_sleep=400ms')) });
  t.teardown(() => zonal.stop());
  const first = await cache();
  t.equal(first.cold, true, 'cold while the loader runs');
  t.ok(await eventually(async () => (await cache()).cold === false, 10_000), 'warm once it has finished');
  const after = await cache();
  t.equal(after.size, before.size, 'the same size');
  for (let i = 0; i < 8; i++) t.equal((await get(`/r${i}`)).cache, 'HIT', `/r${i} from the disk`);
  t.equal(backend.total, reached, 'the backend was not reached');
});

t.test('a corrupted or truncated file is a miss, never a crash', async (t) => {
  const root = join(dir, 'broken');
  const zonal = await Zonal.start({ 'zonal.conf': config(`proxy_cache_path ${root} levels=1:2 keys_zone=pcache:1m;`) });
  t.teardown(() => zonal.stop());
  const pids = zonal.workers();
  for (const p of ['/c1', '/c2', '/c3']) t.equal((await get(p)).cache, 'MISS');
  for (const p of ['/c1', '/c2', '/c3']) t.equal((await get(p)).cache, 'HIT');
  writeFileSync(fileOf(root, 'httpb/c1'), 'not a cache file at all');
  truncateSync(fileOf(root, 'httpb/c2'), 30);
  const f3 = fileOf(root, 'httpb/c3');
  writeFileSync(f3, Buffer.alloc(statSync(f3).size, 0xff));
  // Each worker looks at a file again at most a second after it last did (its copy of the
  // body serves meanwhile): ask until every key was found broken once.
  const before = backend.total;
  for (const p of ['/c1', '/c2', '/c3']) {
    let wrong = 0;
    const missed = await eventually(async () => {
      const r = await get(p);
      if (r.status !== 200 || r.body !== `body of ${p}`) wrong++;
      return r.cache === 'MISS';
    }, 5000);
    t.ok(missed, `${p} was a miss once its file broke`);
    t.equal(wrong, 0, 'and every answer was whole');
  }
  t.ok(backend.total >= before + 3);
  t.same(zonal.workers(), pids, 'no worker died');
  for (const p of ['/c1', '/c2', '/c3']) t.equal((await get(p)).cache, 'HIT', `${p} written again`);
});

t.test('max_size holds under a fill of ten times its size', async (t) => {
  const root = join(dir, 'full');
  const zonal = await Zonal.start({ 'zonal.conf': config(`proxy_cache_path ${root} levels=1:2 keys_zone=pcache:1m max_size=64k;`) });
  t.teardown(() => zonal.stop());
  const body = 'x'.repeat(4000);
  backend.answers.set('/fill', { body });
  for (let i = 0; i < 160; i++) backend.answers.set(`/fill/${i}`, { body });
  for (let i = 0; i < 160; i += 8) await Promise.all(Array.from({ length: 8 }, (_, j) => get(`/fill/${i + j}`)));
  const c = await cache();
  t.equal(c.max_size, 65536);
  t.equal(c.miss.bytes_written, 160 * 4000, 'ten times max_size written');
  t.ok(c.size <= 65536, `size ${c.size} <= max_size`);
  // An evicted entry's file is unlinked off the event loop (fs.rm), so the last answers
  // may come before the last unlinks: the files are down to max_size right after.
  let disk = onDisk(root);
  t.ok(await eventually(async () => (disk = onDisk(root)) <= 65536, 2000), `files on disk come down to ${disk} <= max_size`);
  t.ok(c.size > 65536 / 2, 'and the cache is not emptied');
  t.equal((await get('/fill/159')).cache, 'HIT', 'the most recent stays');
  t.equal((await get('/fill/0')).cache, 'MISS', 'the least recent went');
});

t.test('shards each report size, max_size and cold', async (t) => {
  const a = join(dir, 'shard-a');
  const b = join(dir, 'shard-b');
  mkdirSync(a);
  const zonal = await Zonal.start({
    'zonal.conf': config(`proxy_cache_path ${a} levels=1:2 keys_zone=pcache:1m max_size=1m;\n    proxy_cache_path ${b} levels=1:2 keys_zone=pcache max_size=2m;`),
  });
  t.teardown(() => zonal.stop());
  for (let i = 0; i < 40; i++) await get(`/s${i}`);
  t.ok(await eventually(async () => (await cache()).cold === false));
  const c = await cache();
  t.same(Object.keys(c.shards), [a, b], 'keyed by path');
  t.same([c.shards[a].max_size, c.shards[b].max_size], [1 << 20, 2 << 20]);
  t.same([c.shards[a].cold, c.shards[b].cold], [false, false]);
  t.ok(c.shards[a].size > 0 && c.shards[b].size > 0, 'both shards hold entries');
  t.equal(c.shards[a].size + c.shards[b].size, c.size, 'the cache is the sum of its shards');
  t.equal(onDisk(a) + onDisk(b), c.size, 'and of the files on their paths');
  t.equal(c.max_size, 3 << 20);
});

t.test('the manager removes entries unused for inactive, files and size', async (t) => {
  const root = join(dir, 'inactive');
  const zonal = await Zonal.start({ 'zonal.conf': config(`proxy_cache_path ${root} levels=1:2 keys_zone=pcache:1m inactive=1s;`) });
  t.teardown(() => zonal.stop());
  t.equal((await get('/idle')).cache, 'MISS');
  t.equal((await get('/idle')).cache, 'HIT');
  t.ok(existsSync(fileOf(root, 'httpb/idle')));
  t.ok((await cache()).size > 0);
  t.ok(await eventually(async () => (await cache()).size === 0, 5000), 'the size went back to 0');
  t.ok(await eventually(async () => !existsSync(fileOf(root, 'httpb/idle')), 2000), 'the file is gone');
  t.equal((await get('/idle')).cache, 'MISS', 'fetched again');
});
