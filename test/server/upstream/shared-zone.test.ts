// Issue 32, item 5: several upstreams in one zone, as nginx documents it ("several groups
// may share the same zone; in this case, it is enough to specify the size only once").
// Each keeps its own peers, counters and /config entries in the one zone, which
// /status/slabs lists once; two different sizes for one zone fail `-t` in nginx's words.
import t from 'tap';
import { checkConfig, eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { EchoBackend, exchange } from '../stream/peers.js';
import { CountingBackend, many } from './backends.js';

const [admin, front1, front2, sfront1, sfront2, p1, p2, s1, s2] = await freePorts(9);
const A = `127.0.0.1:${p1}`;
const B = `127.0.0.1:${p2}`;
const SA = `127.0.0.1:${s1}`;
const SB = `127.0.0.1:${s2}`;
const http = [new CountingBackend(p1), new CountingBackend(p2)];
const echo = [new EchoBackend(s1), new EchoBackend(s2)];
for (const b of [...http, ...echo]) await b.start();
t.teardown(() => Promise.all([...http, ...echo].map((b) => b.stop())));

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 2;
http {
    upstream one { zone shared 256k; server ${A}; }
    upstream two { zone shared; server ${B} weight=2; }
    server { listen 127.0.0.1:${front1}; location / { proxy_pass http://one; } }
    server { listen 127.0.0.1:${front2}; location / { proxy_pass http://two; } }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
stream {
    upstream sone { zone streams; server ${SA}; }
    upstream stwo { zone streams; server ${SB}; }
    server { listen 127.0.0.1:${sfront1}; proxy_pass sone; }
    server { listen 127.0.0.1:${sfront2}; proxy_pass stwo; }
}
`,
});
t.teardown(() => zonal.stop());

const api = async (path: string) => (await getJson(`http://127.0.0.1:${admin}${path}`)).body;
const write = async (method: string, path: string, body: unknown) => {
  const res = await fetch(`http://127.0.0.1:${admin}${path}`, { method, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};
const total = (peer: any): number => peer?.selected?.total ?? -1;

t.test('http: two upstreams in one zone, each with its own peers and counts', async (t) => {
  t.same(await many(front1, '/', 12), new Map([[200, 12]]), 'one answers');
  t.same(await many(front2, '/', 7), new Map([[200, 7]]), 'two answers');
  t.equal(http[0].requests, 12, "one's backend");
  t.equal(http[1].requests, 7, "two's backend");
  let one: any;
  let two: any;
  t.ok(
    await eventually(async () => {
      one = await api('/status/http/upstreams/one/peers');
      two = await api('/status/http/upstreams/two/peers');
      return total(one[A]) === 12 && total(two[B]) === 7;
    }),
    'each upstream counts its own traffic',
  );
  t.same(Object.keys(one), [A], "one's peers only");
  t.same(Object.keys(two), [B], "two's peers only");
  t.equal(two[B].weight, 2, "two's parameters");
  t.equal(one[A].responses['200'], 12);
  t.equal(two[B].responses['200'], 7);
});

t.test('http: /config changes one upstream of the zone and leaves the other as it was', async (t) => {
  const before = await api('/config/http/upstreams/two/servers');
  t.same(before, { [B]: { weight: 2 } });
  t.equal((await write('PATCH', `/config/http/upstreams/one/servers/${A}`, { weight: 5 })).status, 200, 'PATCH one');
  t.equal((await write('PUT', `/config/http/upstreams/one/servers/${B}`, { max_fails: 3 })).status, 201, 'PUT a peer into one');
  t.same(await api('/config/http/upstreams/one/servers'), { [A]: { weight: 5 }, [B]: { max_fails: 3 } }, 'one changed');
  t.same(await api('/config/http/upstreams/two/servers'), before, 'two untouched');
  const two = await api('/status/http/upstreams/two/peers');
  t.equal(total(two[B]), 7, "two's counters go on");
  // The new peer of `one` at two's address has counters of its own.
  const one = await api('/status/http/upstreams/one/peers');
  t.equal(total(one[B]), 0, "one's new peer starts from zero");
  t.equal((await write('DELETE', `/config/http/upstreams/one/servers/${B}`, undefined)).status, 200, 'DELETE from one');
  t.same(Object.keys(await api('/status/http/upstreams/two/peers')), [B], 'two keeps its peer');
});

t.test('stream: two upstreams in one zone', async (t) => {
  for (let i = 0; i < 5; i++) t.equal((await exchange(sfront1, 'ping')).received.toString(), 'ping');
  for (let i = 0; i < 3; i++) t.equal((await exchange(sfront2, 'ping')).received.toString(), 'ping');
  t.equal(echo[0].connections, 5);
  t.equal(echo[1].connections, 3);
  let one: any;
  let two: any;
  t.ok(
    await eventually(async () => {
      one = await api('/status/stream/upstreams/sone/peers');
      two = await api('/status/stream/upstreams/stwo/peers');
      return total(one[SA]) === 5 && total(two[SB]) === 3;
    }),
    'each counts its own sessions',
  );
  t.same(Object.keys(one), [SA]);
  t.same(Object.keys(two), [SB]);
  t.equal((await write('PATCH', `/config/stream/upstreams/stwo/servers/${SB}`, { weight: 4 })).status, 200);
  t.same(await api('/config/stream/upstreams/sone/servers'), { [SA]: {} }, 'sone untouched');
  t.same(await api('/config/stream/upstreams/stwo/servers'), { [SB]: { weight: 4 } });
});

t.test('/status/slabs lists a shared zone once', async (t) => {
  const slabs = await api('/status/slabs');
  const names = Object.keys(slabs);
  t.equal(names.filter((n) => n === 'shared').length, 1, 'shared');
  t.equal(names.filter((n) => n === 'streams').length, 1, 'streams');
  for (const name of ['one', 'two', 'sone', 'stwo']) t.notOk(names.includes(name), `no zone of its own for ${name}`);
  t.ok(slabs.shared.pages.used > 0, 'the zone holds both upstreams');
  t.ok((slabs.shared.pages.used + slabs.shared.pages.free) * 4096 <= 256 * 1024, 'the size given once (256k) is the zone size');
  t.ok((slabs.shared.pages.used + slabs.shared.pages.free) * 4096 > 128 * 1024, 'not a smaller default');
});

t.test('a reload keeps the shared zone and each upstream\'s counters', async (t) => {
  const one = await api('/status/http/upstreams/one/peers');
  const two = await api('/status/http/upstreams/two/peers');
  t.ok(await zonal.reload(), 'reloaded');
  t.equal(total((await api('/status/http/upstreams/one/peers'))[A]), total(one[A]));
  t.equal(total((await api('/status/http/upstreams/two/peers'))[B]), total(two[B]));
  t.same(await api('/config/http/upstreams/two/servers'), { [B]: { weight: 2 } }, "the configuration's servers again");
});

t.test('-t: two sizes for one zone conflict (http and stream), one size given once passes', async (t) => {
  const up = (a: string, b: string) => `upstream a { zone z ${a}; server 127.0.0.1:1; } upstream b { zone z ${b}; server 127.0.0.1:2; }`;
  let r = await checkConfig(`http { ${up('1m', '2m')} }`);
  t.not(r.code, 0);
  t.match(r.err, /\[emerg\] the size 2097152 of shared memory zone "z" conflicts with already declared size 1048576 in .*:1/);
  r = await checkConfig(`stream {\n ${up('64k', '128k')} }`);
  t.not(r.code, 0);
  t.match(r.err, /\[emerg\] the size 131072 of shared memory zone "z" conflicts with already declared size 65536 in .*:2/);
  for (const text of [`http { ${up('1m', '1m')} }`, `http { ${up('1m', '')} }`, `http { ${up('', '1m')} }`, `stream { ${up('', '')} }`]) {
    r = await checkConfig(text);
    t.equal(r.code, 0, `${text}: ${r.err}`);
  }
  // A zone is still of one kind: an http upstream's is no stream upstream's nor a limit's.
  r = await checkConfig(`http { upstream a { zone z 1m; server 127.0.0.1:1; } } stream { upstream b { zone z; server 127.0.0.1:2; } }`);
  t.match(r.err, /shared memory zone "z" is already used by http upstream "a"/);
  r = await checkConfig(`http { upstream a { zone z 1m; server 127.0.0.1:1; } upstream b { zone z; server 127.0.0.1:2; } limit_req_zone $uri zone=z:1m rate=1r/s; }`);
  t.match(r.err, /shared memory zone "z" is already used by upstream/);
});
