// Issue 32, item 5: `server A; server A;` in one upstream is two peers, as nginx keeps
// them (nginx-tests proxy.t and stream_upstream.t, `u2`): each with its own weight,
// state and counters, picked as two by the balancer, tried twice by proxy_next_upstream.
// The first is keyed by its address in /status and /config, each further one by the
// address, `~` and its ordinal (`127.0.0.1:8081~2`).
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkConfig, eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { EchoBackend, exchange } from '../stream/peers.js';
import { CountingBackend, get, many } from './backends.js';

const [admin, front, sfront1, sfront2, p1, p2, s1, s2, s3, dead] = await freePorts(10);
const A = `127.0.0.1:${p1}`;
const B = `127.0.0.1:${p2}`;
const SA = `127.0.0.1:${s1}`;
const D = `127.0.0.1:${dead}`;
const http = [new CountingBackend(p1), new CountingBackend(p2)];
const echo = [new EchoBackend(s1), new EchoBackend(s2), new EchoBackend(s3)];
for (const b of [...http, ...echo]) await b.start();
t.teardown(() => Promise.all([...http, ...echo].map((b) => b.stop())));

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 2;
http {
    upstream rr { zone rr 64k; server ${A}; server ${A}; server ${B}; }
    upstream weighted { zone weighted 64k; server ${A} weight=2; server ${A}; }
    upstream downed { zone downed 64k; server ${A} down; server ${A}; }
    upstream u2 { zone u2 64k; server ${A}; server ${A}; }
    upstream cfg { zone cfg 512k; server ${A}; server localhost:${p1}; }
    server {
        listen 127.0.0.1:${front};
        location /rr { proxy_pass http://rr; }
        location /weighted { proxy_pass http://weighted; }
        location /downed { proxy_pass http://downed; }
        location /pnu { proxy_pass http://u2/bad; }
        location /cfg { proxy_pass http://cfg; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
stream {
    proxy_connect_timeout 2s;
    upstream srr { zone srr 64k; server ${SA}; server ${SA}; }
    upstream su2 { zone su2 64k; server ${D} down; server ${D}; server 127.0.0.1:${s2}; server 127.0.0.1:${s3}; }
    server { listen 127.0.0.1:${sfront1}; proxy_pass srr; }
    server { listen 127.0.0.1:${sfront2}; proxy_pass su2; }
}
`,
});
t.teardown(() => zonal.stop());

const api = async (path: string) => (await getJson(`http://127.0.0.1:${admin}${path}`)).body;
const write = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`http://127.0.0.1:${admin}${path}`, {
    method,
    ...(body !== undefined ? { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as any };
};
const total = (peer: any): number => peer?.selected?.total ?? -1;
/** The peers of an upstream once their selections add up to `n`: workers count a
 * request as it ends, which the client may see first. */
async function peersAfter(path: string, n: number): Promise<any> {
  let peers: any;
  await eventually(async () => {
    peers = await api(path);
    return Object.values(peers).reduce((sum: number, p: any) => sum + total(p), 0) === n;
  });
  return peers;
}
// Each of the 2 workers keeps its own smooth round robin: a peer's share of the requests
// a worker took is exact to within one, so the sum over both is within two.
const near = (got: number, expected: number) => Math.abs(got - expected) <= 2;

t.test('http: two servers of one address are two peers, both picked', async (t) => {
  t.same(await many(front, '/rr', 30), new Map([[200, 30]]));
  const peers = await peersAfter('/status/http/upstreams/rr/peers', 30);
  t.same(Object.keys(peers), [A, `${A}~2`, B], 'keyed by address, the second with ~2');
  t.equal(peers[`${A}~2`].server, A, 'the second shows its address as server');
  t.equal(await api(`/status/http/upstreams/rr/peers/${A}~2/server`), A, 'its key is a path segment as it is');
  t.equal(http[0].paths.get('/rr'), total(peers[A]) + total(peers[`${A}~2`]), "A's backend served what both peers were given");
  t.equal(http[1].paths.get('/rr'), total(peers[B]), "B's backend");
  t.equal(http[0].paths.get('/rr')! + http[1].paths.get('/rr')!, 30);
  for (const key of [A, `${A}~2`, B]) t.ok(near(total(peers[key]), 10), `${key}: ${total(peers[key])} of 30, a third`);
  t.equal(peers[`${A}~2`].responses['200'], total(peers[`${A}~2`]), 'its own responses');
});

t.test('http: each server of the address has its own weight', async (t) => {
  t.same(await many(front, '/weighted', 30), new Map([[200, 30]]));
  const peers = await peersAfter('/status/http/upstreams/weighted/peers', 30);
  t.equal(http[0].paths.get('/weighted'), 30);
  t.equal(peers[A].weight, 2);
  t.equal(peers[`${A}~2`].weight, 1);
  t.ok(near(total(peers[A]), 20), `weight 2: ${total(peers[A])} of 30`);
  t.ok(near(total(peers[`${A}~2`]), 10), `weight 1: ${total(peers[`${A}~2`])} of 30`);
});

t.test('http: server A down; server A; sends everything to the second', async (t) => {
  t.same(await many(front, '/downed', 10), new Map([[200, 10]]));
  const peers = await peersAfter('/status/http/upstreams/downed/peers', 10);
  t.equal(peers[A].state, 'down');
  t.equal(total(peers[A]), 0, 'the down one is never picked');
  t.equal(peers[`${A}~2`].state, 'up');
  t.equal(total(peers[`${A}~2`]), 10);
  t.equal(http[0].paths.get('/downed'), 10);
});

t.test('http: proxy_next_upstream tries the same address twice', async (t) => {
  const r = await get(front, '/pnu');
  t.equal(r.status, 502, 'both attempts failed');
  t.equal(http[0].paths.get('/bad'), 2, 'the backend saw the request twice');
  const peers = await peersAfter('/status/http/upstreams/u2/peers', 2);
  for (const key of [A, `${A}~2`]) {
    t.equal(total(peers[key]), 1, `${key} tried once`);
    t.equal(peers[key].health.fails, 1, `${key} failed once`);
  }
});

t.test('/config: a further server of an address by its key', async (t) => {
  const servers = '/config/http/upstreams/cfg/servers';
  t.same(await api(servers), { [A]: {}, [`${A}~2`]: {} }, 'localhost is the same address: keyed ~2');
  t.equal((await api('/status/http/upstreams/cfg/peers'))[`${A}~2`].server, `localhost:${p1}`, 'its server as configured');
  t.equal((await write('PATCH', `${servers}/${A}~2`, { weight: 3 })).status, 200, 'PATCH the second');
  t.same(await api(servers), { [A]: {}, [`${A}~2`]: { weight: 3 } }, 'only the second changed');
  t.same(await api(`${servers}/${A}~2`), { weight: 3 }, 'GET the second');
  t.equal(await api(`${servers}/${A}~2/weight`), 3, 'GET its parameter');
  t.equal((await write('PUT', `${servers}/${A}`, { max_fails: 2 })).status, 200, 'PUT of an address there replaces that server');
  t.same(await api(servers), { [A]: { max_fails: 2 }, [`${A}~2`]: { weight: 3 } });

  // Traffic: both peers taken, each counted on its own.
  t.same(await many(front, '/cfg', 8), new Map([[200, 8]]));
  let peers = await peersAfter('/status/http/upstreams/cfg/peers', 8);
  t.ok(total(peers[A]) > 0 && total(peers[`${A}~2`]) > 0, 'both picked');

  t.equal((await write('DELETE', `${servers}/${A}~2`)).status, 200, 'DELETE the second');
  t.same(await api(servers), { [A]: { max_fails: 2 } }, 'the first stays');
  t.equal((await write('DELETE', `${servers}/${A}~2`)).status, 404, 'gone');
  const created = await write('PUT', `${servers}/${A}~2`, {});
  t.equal(created.status, 201, 'PUT of a further key creates a server of that address');
  t.equal((await write('PUT', `${servers}/localhost:${p1}~3`, { weight: 2 })).status, 201, 'written with the name as the file writes it');
  t.same(await api(servers), { [A]: { max_fails: 2 }, [`${A}~2`]: {}, [`${A}~3`]: { weight: 2 } });
  peers = await api('/status/http/upstreams/cfg/peers');
  t.equal(total(peers[`${A}~2`]), 0, 'a server made again starts from zero');
  t.equal(peers[`${A}~3`].server, `localhost:${p1}`);

  for (const bad of [`${A}~1`, `${A}~0`, `${A}~x`, `${A}~`]) {
    const r = await write('PUT', `${servers}/${bad}`, {});
    t.equal(r.status, 400, `${bad} refused`);
    t.equal(r.body.error, 'FormatError');
    t.match(r.body.description, /keyed "<address>~<n>", n a whole number from 2/);
  }
  // The first deleted: the others keep their keys, and the address alone names a new one.
  t.equal((await write('DELETE', `${servers}/${A}`)).status, 200);
  t.same(Object.keys(await api(servers)), [`${A}~2`, `${A}~3`]);
  t.equal((await write('PATCH', servers, { [A]: {}, [`${A}~4`]: { weight: 4 } })).status, 200, 'PATCH of the collection');
  t.same(await api(servers), { [`${A}~2`]: {}, [`${A}~3`]: { weight: 2 }, [A]: {}, [`${A}~4`]: { weight: 4 } });
  const twice = await write('PATCH', servers, { [`${A}~4`]: {}, [`localhost:${p1}~4`]: {} });
  t.equal(twice.status, 400, 'two names of one key in a body');
  t.match(twice.body.description, /are the same server/);
});

t.test('stream: two servers of one address are two peers, both picked', async (t) => {
  for (let i = 0; i < 20; i++) t.equal((await exchange(sfront1, 'ping')).received.toString(), 'ping');
  t.equal(echo[0].connections, 20);
  const peers = await peersAfter('/status/stream/upstreams/srr/peers', 20);
  t.same(Object.keys(peers), [SA, `${SA}~2`]);
  for (const key of [SA, `${SA}~2`]) t.ok(near(total(peers[key]), 10), `${key}: ${total(peers[key])} of 20`);
  t.same(await api('/config/stream/upstreams/srr/servers'), { [SA]: {}, [`${SA}~2`]: {} });
});

t.test('stream: server X down; server X; with X dead (stream_upstream.t u2)', async (t) => {
  for (let i = 0; i < 30; i++) t.equal((await exchange(sfront2, 'ping')).received.toString(), 'ping', `session ${i}`);
  t.equal(echo[1].connections + echo[2].connections, 30, 'every session reached a live backend');
  let peers: any;
  await eventually(async () => {
    peers = await api('/status/stream/upstreams/su2/peers');
    return total(peers[`127.0.0.1:${s2}`]) + total(peers[`127.0.0.1:${s3}`]) === 30;
  });
  t.same(Object.keys(peers), [D, `${D}~2`, `127.0.0.1:${s2}`, `127.0.0.1:${s3}`]);
  t.equal(peers[D].state, 'down');
  t.equal(total(peers[D]), 0, 'the down one is never tried');
  t.ok(peers[`${D}~2`].health.fails >= 1, 'the other one of the address was tried, and failed');
  t.equal(peers[`${D}~2`].state, 'unavailable');
  t.ok(echo[1].connections > 0 && echo[2].connections > 0, 'both live backends took sessions');
});

t.test('a reload keeps both peers of the address, with their counters', async (t) => {
  const before = await api('/status/http/upstreams/rr/peers');
  t.ok(await zonal.reload(), 'reloaded');
  const after = await api('/status/http/upstreams/rr/peers');
  t.same(Object.keys(after), [A, `${A}~2`, B]);
  for (const key of [A, `${A}~2`, B]) t.equal(total(after[key]), total(before[key]), `${key} counts on`);
});

t.test('state file: the same address twice is two peers; a reload keeps their keys', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-dup-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'u.state');
  writeFileSync(file, `server ${A};\nserver ${A} weight=2;\n`);
  const [admin2] = await freePorts(1);
  const conf = `
worker_processes 2;
http {
    upstream u { zone u 64k; state ${file}; server ${B}; }
    server { listen 127.0.0.1:${admin2} admin; location / { api /; } }
}
`;
  const checked = await checkConfig(conf);
  t.equal(checked.code, 0, `-t takes it: ${checked.err}`);
  const z = await Zonal.start({ 'zonal.conf': conf });
  t.teardown(() => z.stop());
  const servers = `http://127.0.0.1:${admin2}/config/http/upstreams/u/servers`;
  t.same((await getJson(servers)).body, { [A]: {}, [`${A}~2`]: { weight: 2 } }, 'both lines, in order');
  t.equal((await fetch(`${servers}/${A}`, { method: 'DELETE' })).status, 200);
  t.equal(readFileSync(file, 'utf8'), `server ${A} weight=2;\n`, 'the file keeps the address');
  t.ok(await z.reload(), 'reloaded');
  t.same((await getJson(servers)).body, { [`${A}~2`]: { weight: 2 } }, 'a reload keeps the key the server had');
  const put = await fetch(`${servers}/${A}`, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.equal(put.status, 201);
  t.equal(readFileSync(file, 'utf8'), `server ${A} weight=2;\nserver ${A};\n`, 'both in the file');
});
