// Issue 34, items 1-3 and 5, with a real 3-member etcd cluster and 3 real instances: the
// keys are seeded once from the file, a write on any instance is committed to etcd and
// seen on all, If-Match holds across the fleet (one 200, one 412, no lost update), and
// /status/config_store says what the store is doing.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { EtcdCluster } from '../../helpers/etcd.js';
import { backend, Fleet, percentile, servers, storeStatus, until, write } from './fleet.js';

const etcd = await EtcdCluster.start(3);
const b = await backend();
const fleet = await Fleet.start(etcd, '/zonal-writes', b.port);
const [A, B, C] = fleet.instances;
t.teardown(async () => {
  await fleet.stop();
  await etcd.close();
  b.server.close();
});

t.test('the key is seeded once from the file, in the /config shape', async (t) => {
  const stored = await etcd.get('/zonal-writes/http/upstreams/u');
  t.same(stored?.value, { servers: { [`127.0.0.1:${b.port}`]: {} } }, 'etcdctl get shows what GET /config shows');
  for (const i of fleet.instances) {
    const s = await storeStatus(i);
    t.equal(s.connected, true, 'connected');
    t.equal(s.revision, stored!.revision, 'the revision applied is the key\'s');
    t.match(s.endpoint, /^127\.0\.0\.1:\d+$/, 'the endpoint in use');
  }
});

t.test('a write on each instance is seen on all', async (t) => {
  const delays: number[] = [];
  for (const [k, i] of fleet.instances.entries()) {
    for (let n = 0; n < 10; n++) {
      const peer = `127.0.0.${10 + k}:${1000 + n}`;
      const w = await write(i, 'PATCH', 'servers', { [peer]: { weight: 1 + n } }, {}, n % 2 ? 'admin' : 'plane');
      t.equal(w.status, 200, `PATCH on instance ${k}`, { body: w.body, log: i.zonal.log.slice(-3000) });
      t.match(w.etag, /^"r\d+"$/, 'the ETag is the revision');
      const seen = await Promise.all(fleet.instances.map((other) => until(async () => (await servers(other))[peer] !== undefined, 3000)));
      t.ok(seen.every((ms) => ms >= 0), 'seen on every instance');
      delays.push(...seen.filter((_, j) => j !== k));
    }
  }
  t.comment(`propagation to the other instances (${delays.length} samples): p50 ${percentile(delays, 0.5).toFixed(1)} ms, p99 ${percentile(delays, 0.99).toFixed(1)} ms`);
  const stored = await etcd.get('/zonal-writes/http/upstreams/u');
  t.same(await servers(C), stored!.value.servers, 'every instance shows what etcd holds');
  const tags = await Promise.all(fleet.instances.map(async (i) => (await fetch(`http://127.0.0.1:${i.data}/api/config/http/upstreams/u/servers`)).headers.get('etag')));
  t.same(tags, tags.map(() => `"r${stored!.revision}"`), 'every instance gives the same ETag');
});

t.test('If-Match across instances: one 200 and one 412, no lost update', async (t) => {
  let lost = 0;
  const rounds = 20;
  for (let n = 0; n < rounds; n++) {
    const read = await fetch(`http://127.0.0.1:${A.data}/api/config/http/upstreams/u/servers`);
    const etag = read.headers.get('etag')!;
    await read.text();
    await until(async () => (await fetch(`http://127.0.0.1:${B.admin}/config/http/upstreams/u/servers`)).headers.get('etag') === etag, 3000);
    const [wa, wb] = await Promise.all([
      write(A, 'PATCH', 'servers', { [`127.0.1.1:${n + 1}`]: {} }, { 'If-Match': etag }),
      write(B, 'PATCH', 'servers', { [`127.0.1.2:${n + 1}`]: {} }, { 'If-Match': etag }, 'admin'),
    ]);
    t.same([wa.status, wb.status].sort(), [200, 412], `round ${n}: one 200, one 412`);
    const won = wa.status === 200 ? `127.0.1.1:${n + 1}` : `127.0.1.2:${n + 1}`;
    const refused = wa.status === 200 ? `127.0.1.2:${n + 1}` : `127.0.1.1:${n + 1}`;
    const stored = (await etcd.get('/zonal-writes/http/upstreams/u'))!.value.servers;
    if (!(won in stored) || refused in stored) lost++;
  }
  t.equal(lost, 0, 'the success is in etcd and the refusal is not, every round');
  t.comment(`If-Match writers on two instances: ${rounds} rounds, ${rounds} successes, ${rounds} refusals (412), ${lost} lost updates`);
});

t.test('unconditional writers on all instances at once: every acknowledged write is kept', async (t) => {
  const writes = await Promise.all(
    fleet.instances.flatMap((i, k) => Array.from({ length: 10 }, (_, n) => write(i, 'PATCH', 'servers', { [`127.0.2.${k + 1}:${n + 1}`]: {} }, {}, n % 2 ? 'admin' : 'plane'))),
  );
  t.ok(writes.every((w) => w.status === 200), 'each write was committed (a conflict is computed again)');
  const stored = (await etcd.get('/zonal-writes/http/upstreams/u'))!.value.servers;
  const missing = fleet.instances.flatMap((_, k) => Array.from({ length: 10 }, (_, n) => `127.0.2.${k + 1}:${n + 1}`)).filter((p) => !(p in stored));
  t.same(missing, [], 'none lost');
  for (const i of fleet.instances) t.ok((await until(async () => JSON.stringify(await servers(i)) === JSON.stringify(stored))) >= 0, 'every instance converges');
});

t.test('an operator\'s etcdctl put reaches every instance', async (t) => {
  const revision = await etcd.put('/zonal-writes/http/upstreams/u', { servers: { [`127.0.0.1:${b.port}`]: { weight: 5 } } });
  for (const i of fleet.instances) {
    t.ok((await until(async () => JSON.stringify(await servers(i)) === JSON.stringify({ [`127.0.0.1:${b.port}`]: { weight: 5 } }))) >= 0, 'applied');
    t.ok((await until(async () => (await storeStatus(i)).revision === revision, 3000)) >= 0, 'at the put\'s revision');
  }
  const bad = await etcd.put('/zonal-writes/http/upstreams/u', { servers: { 'not an address': {} } });
  await until(async () => (await storeStatus(A)).last_error?.message?.includes(`revision ${bad}`) === true, 3000);
  t.match((await storeStatus(A)).last_error, { message: /is refused/, time: /^\d{4}-\d\d-\d\dT/ }, 'a value that is no configuration is refused, and said');
  t.same(await servers(A), { [`127.0.0.1:${b.port}`]: { weight: 5 } }, 'the last good one stays');
  // Back to a good value, for the next cases.
  await etcd.put('/zonal-writes/http/upstreams/u', { servers: { [`127.0.0.1:${b.port}`]: {} } });
});

t.test('a format error is refused before anything is sent', async (t) => {
  const before = (await etcd.get('/zonal-writes/http/upstreams/u'))!.revision;
  const w = await write(A, 'PATCH', 'servers', { '127.0.0.1:1': { weight: 0 } });
  t.equal(w.status, 400);
  t.equal((await etcd.get('/zonal-writes/http/upstreams/u'))!.revision, before, 'etcd unchanged');
});

t.test('a reload that adds an upstream seeds its key, and writes reach it', async (t) => {
  const text = readFileSync(A.zonal.file, 'utf8').replace('    upstream u {', `    upstream v {\n        zone v 64k;\n        server 127.0.0.1:${b.port} weight=3;\n    }\n    upstream u {`);
  t.ok(await A.zonal.reload(text), 'reloaded');
  t.ok((await until(async () => (await etcd.get('/zonal-writes/http/upstreams/v'))?.value !== undefined, 5000)) >= 0, 'seeded');
  t.same((await etcd.get('/zonal-writes/http/upstreams/v'))?.value, { servers: { [`127.0.0.1:${b.port}`]: { weight: 3 } } }, 'from the file');
  const w = await fetch(`http://127.0.0.1:${A.admin}/config/http/upstreams/v/servers/127.0.0.1:9`, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.equal(w.status, 201, 'a write to it is committed');
  t.ok('127.0.0.1:9' in (await etcd.get('/zonal-writes/http/upstreams/v'))!.value.servers, 'in etcd');
  const s = await storeStatus(A);
  t.equal(s.connected, true, 'connected after the reload');
  const u = await write(A, 'PATCH', 'servers', { '127.0.0.99:1': {} });
  t.equal(u.status, 200, 'the other upstream is still written');
  for (const i of [B, C]) t.ok((await until(async () => '127.0.0.99:1' in (await servers(i)), 3000)) >= 0, 'and seen by the others (their watch goes on)');
});

t.test('a reload that changes the URL is refused, and the store goes on', async (t) => {
  const text = readFileSync(A.zonal.file, 'utf8');
  const from = A.zonal.log.length;
  t.notOk(await A.zonal.reload(text.replace('/zonal-writes ', '/elsewhere ')), 'refused');
  t.match(A.zonal.log.slice(from), /"config_store" cannot change its endpoints or prefix on a reload/, 'and said why');
  await A.zonal.reload(text);
  t.equal((await write(A, 'PATCH', 'servers', { '127.0.0.98:1': {} })).status, 200, 'writes go on');
});
