// Issue 34, items 4 and 6: what the fleet does when etcd fails, with a real 3-member
// cluster and 3 real instances. The leader SIGKILLed during a burst of writes (every
// acknowledged write is in etcd afterwards, every refused one is not); one member
// SIGSTOPped (writes go on); the whole cluster down for 10 s under proxy load (no proxied
// request fails, writes get 503 and change nothing, every instance catches up within a
// second of etcd's return); an instance restarted while changes were made.
import t from 'tap';
import { EtcdCluster } from '../../helpers/etcd.js';
import { backend, Fleet, servers, storeStatus, until, write } from './fleet.js';

const KEY = '/zonal-faults/http/upstreams/u';
const etcd = await EtcdCluster.start(3);
const b = await backend();
const fleet = await Fleet.start(etcd, '/zonal-faults', b.port);
const [A, B] = fleet.instances;
t.teardown(async () => {
  for (const i of fleet.instances) if (i.zonal.exited) t.comment(`an instance exited: ${i.zonal.log.slice(-2000)}`);
  await fleet.stop();
  await etcd.close();
  b.server.close();
});

const stored = async () => (await etcd.get(KEY))!.value.servers as Record<string, unknown>;

t.test('the leader SIGKILLed during a burst of writes', async (t) => {
  const leader = await etcd.leader();
  const results: Array<{ peer: string; status: number; description?: string }> = [];
  let n = 0;
  const writer = async (k: number) => {
    const until = Date.now() + 3000;
    while (Date.now() < until) {
      const peer = `127.0.3.${k + 1}:${++n}`;
      const w = await write(fleet.instances[k], 'PATCH', 'servers', { [peer]: {} }, {}, k === 1 ? 'admin' : 'plane');
      results.push({ peer, status: w.status, description: w.body?.description });
    }
  };
  const burst = Promise.all(fleet.instances.map((_, k) => writer(k)));
  await new Promise((r) => setTimeout(r, 700));
  const sentBefore = results.length;
  await etcd.kill(leader);
  await burst;
  await etcd.waitReady();
  const now = await stored();
  const acknowledged = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status !== 200);
  t.ok(refused.every((r) => r.status === 503), 'a write is acknowledged or refused with 503');
  t.same(refused.filter((r) => /could not be told/.test(r.description ?? '')), [], 'and every refusal is certain (no answer left unknown)');
  t.same(acknowledged.filter((r) => !(r.peer in now)).map((r) => r.peer), [], 'every acknowledged write is in etcd');
  t.same(refused.filter((r) => r.peer in now).map((r) => r.peer), [], 'no refused write is');
  for (const i of fleet.instances) t.ok((await until(async () => JSON.stringify(await servers(i)) === JSON.stringify(now), 5000)) >= 0, 'every instance shows it');
  const after = results.length - sentBefore;
  t.comment(`leader SIGKILLed during a burst of ${results.length} writes from 3 instances (${after} sent after the kill): ${acknowledged.length} acknowledged and present, ${refused.length} refused (503) and absent`);
  etcd.restart(leader);
  await etcd.waitReady();
});

t.test('one member SIGSTOPped: writes go on', async (t) => {
  // The member each instance uses is the one most likely to hurt: stop A's.
  const endpoint = (await storeStatus(A)).endpoint as string;
  const member = etcd.members.findIndex((m) => endpoint.endsWith(`:${m.client}`));
  etcd.signal(member, 'SIGSTOP');
  try {
    let ok = 0;
    const statuses: number[] = [];
    const started = Date.now();
    for (let n = 0; n < 20; n++) {
      const w = await write(fleet.instances[n % 3], 'PATCH', 'servers', { [`127.0.4.1:${n + 1}`]: {} });
      statuses.push(w.status);
      if (w.status === 200) ok++;
    }
    const elapsed = Date.now() - started;
    t.ok(statuses.every((s) => s === 200 || s === 503), 'acknowledged or refused');
    t.same(statuses.slice(5), Array(15).fill(200), 'once the instance moved on, every write succeeds');
    const now = await stored();
    for (const i of fleet.instances) t.ok((await until(async () => JSON.stringify(await servers(i)) === JSON.stringify(now), 5000)) >= 0, 'every instance converges');
    t.not((await storeStatus(A)).endpoint, endpoint, 'the instance that used it moved to another member');
    t.comment(`one member SIGSTOPped: ${ok} of 20 writes acknowledged in ${elapsed} ms, the others refused with 503; every instance converged`);
  } finally {
    etcd.signal(member, 'SIGCONT');
  }
  await etcd.waitReady();
});

t.test('the whole cluster down for 10 s under proxy load', async (t) => {
  const before = await stored();
  let proxied = 0;
  let failed = 0;
  let running = true;
  const load = async (k: number) => {
    while (running) {
      try {
        const res = await fetch(`http://127.0.0.1:${fleet.instances[k].data}/`);
        await res.text();
        if (res.status === 200) proxied++;
        else failed++;
      } catch {
        failed++;
      }
    }
  };
  const loads = fleet.instances.flatMap((_, k) => [load(k), load(k)]);
  for (let i = 0; i < etcd.members.length; i++) await etcd.kill(i);
  const down = Date.now();
  const writes: number[] = [];
  while (Date.now() - down < 10_000) {
    const i = fleet.instances[writes.length % 3];
    writes.push(await write(i, 'PATCH', 'servers', { '127.0.5.1:1': {} }).then((w) => w.status, (e) => (t.comment(`${e}: ${i.zonal.log.slice(-3000)}`), 0)));
    await new Promise((r) => setTimeout(r, 500));
  }
  t.ok(writes.every((s) => s === 503), `every write while etcd is down gets 503 (${writes.length})`);
  const s = await storeStatus(A);
  t.equal(s.connected, false, '/status/config_store says it is not connected');
  t.ok(s.failed_writes > 0, 'and counts the failed writes');
  t.ok(s.last_error, 'and the last error');
  for (let i = 0; i < etcd.members.length; i++) etcd.restart(i);
  await etcd.waitReady();
  const back = Date.now();
  // A change made as soon as etcd is back, by an operator: each instance must have it
  // within a second.
  const changed = { ...before, '127.0.5.2:1': {} };
  await etcd.put(KEY, { servers: changed });
  const caught = await Promise.all(fleet.instances.map((i) => until(async () => JSON.stringify(await servers(i)) === JSON.stringify(changed), 5000)));
  running = false;
  await Promise.all(loads);
  t.equal(failed, 0, `0 failed proxied requests (${proxied} proxied)`);
  t.notOk('127.0.5.1:1' in (await stored()), 'the refused writes changed nothing');
  t.ok(caught.every((ms) => ms >= 0 && ms < 1000), 'every instance caught up within 1 s');
  const reconnects = (await storeStatus(A)).reconnects;
  t.ok(reconnects >= 1, 'reconnects counted');
  t.comment(`etcd down for 10 s: ${proxied} proxied requests, ${failed} failed; ${writes.length} writes, all 503; caught up ${Date.now() - back} ms after etcd answered again (per instance: ${caught.map((ms) => ms.toFixed(0)).join(', ')} ms after the first change)`);
});

t.test('an instance restarted while changes were made comes back with them', async (t) => {
  await fleet.stopInstance(2);
  for (let n = 0; n < 5; n++) t.equal((await write(n % 2 ? A : B, 'PATCH', 'servers', { [`127.0.6.1:${n + 1}`]: {} })).status, 200, 'a change while it is down');
  const now = await stored();
  const started = Date.now();
  await fleet.startInstance(2);
  const ms = await until(async () => JSON.stringify(await servers(fleet.instances[2])) === JSON.stringify(now), 5000);
  t.ok(ms >= 0, 'it shows every change made while it was down');
  t.equal((await storeStatus(fleet.instances[2])).revision, (await etcd.get(KEY))!.revision, 'at the last revision');
  t.ok((await storeStatus(fleet.instances[2])).watch_events >= 5, 'the changes came through its watch, resumed from the revision in its cache file');
  t.comment(`an instance restarted after 5 changes: it showed them ${Date.now() - started} ms after its start began`);
});

t.test('an instance restarted after etcd compacted past its revision reads everything again', async (t) => {
  await fleet.stopInstance(2);
  for (let n = 0; n < 3; n++) t.equal((await write(A, 'PATCH', 'servers', { [`127.0.6.2:${n + 1}`]: {} })).status, 200, 'a change while it is down');
  const now = await etcd.get(KEY);
  t.ok(await etcd.call(0, '/v3/kv/compaction', { revision: now!.revision, physical: true }), 'etcd compacted up to the last change');
  await fleet.startInstance(2);
  const z = fleet.instances[2];
  t.ok((await until(async () => JSON.stringify(await servers(z)) === JSON.stringify(now!.value.servers), 5000)) >= 0, 'it shows every change');
  t.equal((await storeStatus(z)).revision, now!.revision, 'at the last revision');
  t.match(z.zonal.log, /the watch was cancelled .*: a full read follows/, 'through a full read, its watch from the cache\'s revision having been cancelled');
});

t.test('an instance started while etcd is down serves its cache file, and catches up', async (t) => {
  const cached = await servers(fleet.instances[2]);
  await fleet.stopInstance(2);
  for (let i = 0; i < etcd.members.length; i++) await etcd.kill(i);
  await fleet.startInstance(2);
  const z = fleet.instances[2];
  t.same(await servers(z), cached, 'the last applied configuration, from the cache file');
  t.equal((await fetch(`http://127.0.0.1:${z.data}/`)).status, 200, 'proxying');
  t.equal((await storeStatus(z)).connected, false, 'not connected');
  for (let i = 0; i < etcd.members.length; i++) etcd.restart(i);
  await etcd.waitReady();
  const changed = { ...cached, '127.0.7.1:1': {} };
  await etcd.put(KEY, { servers: changed });
  t.ok((await until(async () => JSON.stringify(await servers(z)) === JSON.stringify(changed), 5000)) >= 0, 'caught up once etcd is back');
});
