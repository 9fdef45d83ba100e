// Issue 33, item 7: Angie's `sticky cookie` and `sticky route`, keyed by each peer's `sid`
// (else the MD5 of its address), with `sticky_secret` and `sticky_strict`, across 2
// workers, against real backends whose counts are checked: the cookie is set and
// followed, a down peer's clients go elsewhere, and a /config write of `sid` changes
// where a cookie value leads, in every worker. Also what -t refuses.
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import t, { type Test } from 'tap';
import { checkConfig, eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { CountingBackend } from './backends.js';

const [admin, fCookie, fRoute, fStrict, fSecret, p1, p2, p3] = await freePorts(8);
const addr = (p: number) => `127.0.0.1:${p}`;
const A = addr(p1);
const B = addr(p2);
const C = addr(p3);
const backends = [new CountingBackend(p1), new CountingBackend(p2), new CountingBackend(p3)];
for (const b of backends) await b.start();
t.teardown(() => Promise.all(backends.map((b) => b.stop())));
const md5 = (s: string) => createHash('md5').update(s).digest('hex');

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 2;
http {
    upstream cookie {
        zone st 512k;
        server ${A} sid=a;
        server ${B} sid=b;
        server ${C};
        sticky cookie srv_id expires=1h domain=.example.com httponly samesite=lax secure;
    }
    upstream route {
        zone st;
        server ${A} sid=a;
        server ${B} sid=b;
        server ${C} sid=c;
        sticky route $arg_route $cookie_route;
    }
    upstream strict {
        zone st;
        server ${A} sid=a;
        server ${B} sid=b;
        sticky cookie s path=/app domain=$arg_d;
        sticky_strict on;
    }
    upstream secret {
        zone st;
        server ${A} sid=a;
        server ${B} sid=b;
        sticky cookie s expires=max;
        sticky_secret "salt$arg_v";
    }
    server { listen 127.0.0.1:${fCookie}; location / { proxy_pass http://cookie; } }
    server { listen 127.0.0.1:${fRoute}; location / { proxy_pass http://route; } }
    server { listen 127.0.0.1:${fStrict}; location / { proxy_pass http://strict; } }
    server { listen 127.0.0.1:${fSecret}; location / { proxy_pass http://secret; } }
    server { listen 127.0.0.1:${admin} admin; location / { api /; } }
}
`,
}, 60_000);
t.teardown(() => zonal.stop());

const api = async (path: string) => (await getJson(`http://127.0.0.1:${admin}${path}`)).body;
const write = async (method: string, path: string, body: unknown) => {
  const res = await fetch(`http://127.0.0.1:${admin}${path}`, { method, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};

interface Answer {
  status: number;
  body: string;
  setCookie: string[];
}
/** One GET on a connection of its own (so both workers take them), with a Cookie. */
function get(port: number, path: string, cookie?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: 10_000, headers: cookie ? { Cookie: cookie } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, setCookie: res.headers['set-cookie'] ?? [] }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
    req.end();
  });
}
/** Which backend answered: `ok <port>`. */
const servedBy = (a: Answer) => Number(a.body.split(' ')[1]);
const served = () => backends.map((b) => b.requests);
const delta = (before: number[]) => backends.map((b, i) => b.requests - before[i]);
/** Round robin in each of two workers: `n` requests (n > 2 × peers) reach every peer of
 * `peers` (indexes), as at least one worker takes more than one round. */
function spread(t: Test, d: number[], n: number, peers: number[], what: string): void {
  t.equal(d.reduce((a, b) => a + b, 0), n, `${what}: every request served`);
  t.ok(peers.every((i) => d[i] > 0), `${what}: round robin reached every peer (${d.join(', ')})`);
}

t.test('sticky cookie: a new client gets the cookie of the peer that answered, and follows it', async (t) => {
  const first = await get(fCookie, '/');
  t.equal(first.status, 200);
  t.equal(first.setCookie.length, 1, 'one Set-Cookie');
  const m = /^srv_id=([^;]+); expires=(\w{3}, \d\d-\w{3}-\d\d \d\d:\d\d:\d\d GMT); max-age=3600; domain=\.example\.com; httponly; samesite=lax; secure; path=\/$/.exec(first.setCookie[0]);
  t.ok(m, `the cookie and its attributes, path=/ added: ${first.setCookie[0]}`);
  const sidOf: Record<number, string> = { [p1]: 'a', [p2]: 'b', [p3]: md5(C) };
  t.equal(m?.[1], sidOf[servedBy(first)], 'its value is the sid of the peer that answered (C: the MD5 of its address)');
  const expires = Date.parse(m![2].replace(/-(\d\d) /, (_s, y) => ` 20${y} `).replace(/-/g, ' '));
  t.ok(Math.abs(expires - (Date.now() + 3600_000)) < 5_000, 'expires in an hour');

  for (const [sid, i] of [['a', 0], ['b', 1], [md5(C), 2]] as const) {
    const before = served();
    for (let k = 0; k < 12; k++) {
      const r = await get(fCookie, '/', `other=1; srv_id=${sid}`);
      t.equal(servedBy(r), backends[i].port, `srv_id=${sid.slice(0, 6)}: request ${k}`);
      t.match(r.setCookie[0], new RegExp(`^srv_id=${sid};`), 'the cookie is set again');
    }
    const d = delta(before);
    t.same(d, [0, 1, 2].map((j) => (j === i ? 12 : 0)), `the backends served it all on peer ${i}`);
  }
  const peers = await api('/status/http/upstreams/cookie/peers');
  t.equal(peers[A].sid, 'a', '/status shows the sid');
  t.equal(peers[C].sid, undefined, 'a peer without sid= shows none');
  t.ok(
    await eventually(async () => {
      const p = await api('/status/http/upstreams/cookie/peers');
      return p[A].selected.total + p[B].selected.total + p[C].selected.total === backends.reduce((n, b) => n + b.requests, 0);
    }),
    'both workers counted every request',
  );
});

t.test('sticky cookie: an unknown id, or a down peer, goes by the balancing method, and the cookie names the new peer', async (t) => {
  let before = served();
  const ids = new Set<string>();
  for (let k = 0; k < 9; k++) {
    const r = await get(fCookie, '/', 'srv_id=nobody');
    t.equal(r.status, 200);
    const sid = /^srv_id=([^;]+)/.exec(r.setCookie[0])![1];
    t.equal(sid, { [p1]: 'a', [p2]: 'b', [p3]: md5(C) }[servedBy(r)], 'the cookie names the peer that answered');
    ids.add(sid);
  }
  spread(t, delta(before), 9, [0, 1, 2], 'an unknown id');
  t.equal(ids.size, 3, 'each answer binds to its peer');

  t.equal((await write('PATCH', `/config/http/upstreams/cookie/servers/${B}`, { down: true })).status, 200, 'B down');
  before = served();
  for (let k = 0; k < 10; k++) {
    const r = await get(fCookie, '/', 'srv_id=b');
    t.equal(r.status, 200);
    t.not(servedBy(r), p2, 'not the down peer');
    t.match(r.setCookie[0], servedBy(r) === p1 ? /^srv_id=a;/ : new RegExp(`^srv_id=${md5(C)};`), 'rebound');
  }
  t.equal(delta(before)[1], 0, 'B served none');
  t.equal(delta(before)[0] + delta(before)[2], 10);
  t.equal((await write('PATCH', `/config/http/upstreams/cookie/servers/${B}`, { down: null })).status, 200, 'B up');
  before = served();
  for (let k = 0; k < 6; k++) t.equal(servedBy(await get(fCookie, '/', 'srv_id=b')), p2);
  t.same(delta(before), [0, 6, 0], 'back on B');
});

t.test('a /config write of sid changes where a cookie leads, in both workers', async (t) => {
  t.equal((await write('PATCH', `/config/http/upstreams/cookie/servers/${A}`, { sid: 'zed' })).status, 200);
  t.same(await api(`/config/http/upstreams/cookie/servers/${A}`), { sid: 'zed' });
  t.equal((await api('/status/http/upstreams/cookie/peers'))[A].sid, 'zed');
  let before = served();
  for (let k = 0; k < 12; k++) {
    const r = await get(fCookie, '/', 'srv_id=zed');
    t.equal(servedBy(r), p1);
    t.match(r.setCookie[0], /^srv_id=zed;/);
  }
  t.same(delta(before), [12, 0, 0], 'zed is A now');
  before = served();
  for (let k = 0; k < 9; k++) await get(fCookie, '/', 'srv_id=a');
  spread(t, delta(before), 9, [0, 1, 2], 'a names no peer any more');
  t.equal((await write('PATCH', `/config/http/upstreams/cookie/servers/${A}`, { sid: null })).status, 200, 'sid reset');
  before = served();
  for (let k = 0; k < 4; k++) await get(fCookie, '/', `srv_id=${md5(A)}`);
  t.same(delta(before), [4, 0, 0], 'without sid, the MD5 of the address');
});

t.test('sticky route: the first non-empty variable names the sid; no cookie is set', async (t) => {
  let before = served();
  for (let k = 0; k < 8; k++) {
    const r = await get(fRoute, '/?route=c', 'route=a');
    t.equal(servedBy(r), p3);
    t.same(r.setCookie, [], 'no Set-Cookie');
  }
  t.same(delta(before), [0, 0, 8], '$arg_route first');
  before = served();
  for (let k = 0; k < 8; k++) await get(fRoute, '/?route=', 'route=b');
  t.same(delta(before), [0, 8, 0], 'then $cookie_route');
  before = served();
  for (let k = 0; k < 9; k++) await get(fRoute, '/');
  spread(t, delta(before), 9, [0, 1, 2], 'no route');
});

t.test('sticky_strict on: a request bound to a peer that cannot take it fails', async (t) => {
  let r = await get(fStrict, '/app', 's=b');
  t.equal(servedBy(r), p2);
  t.match(r.setCookie[0], /^s=b; path=\/app$/, 'path as configured; an attribute whose variable is empty is left out');
  r = await get(fStrict, '/app?d=x.test', 's=b');
  t.match(r.setCookie[0], /^s=b; path=\/app; domain=x\.test$/, "the attribute's variable evaluated");
  t.equal((await write('PATCH', `/config/http/upstreams/strict/servers/${B}`, { down: true })).status, 200);
  const before = served();
  for (let k = 0; k < 4; k++) t.equal((await get(fStrict, '/', 's=b')).status, 502, 'bound to a down peer: 502');
  t.equal((await get(fStrict, '/', 's=unknown')).status, 502, 'an unknown id too');
  r = await get(fStrict, '/');
  t.equal(servedBy(r), p1, 'no cookie: the method');
  t.same(delta(before), [1, 0, 0]);
  t.equal((await write('PATCH', `/config/http/upstreams/strict/servers/${B}`, { down: null })).status, 200);
});

t.test('sticky_secret: ids are the MD5 of the sid and the secret', async (t) => {
  const r = await get(fSecret, '/?v=1');
  const id = /^s=([0-9a-f]{32}); expires=Thu, 31-Dec-37 23:55:55 GMT; max-age=315360000; path=\/$/.exec(r.setCookie[0])?.[1];
  t.equal(id, md5((servedBy(r) === p1 ? 'a' : 'b') + 'salt1'), `hashed with the secret's value: ${r.setCookie[0]}`);
  let before = served();
  for (let k = 0; k < 6; k++) t.equal(servedBy(await get(fSecret, '/?v=1', `s=${md5('bsalt1')}`)), p2);
  t.same(delta(before), [0, 6, 0], 'the salted id leads to B');
  before = served();
  for (let k = 0; k < 5; k++) await get(fSecret, '/?v=2', `s=${md5('bsalt1')}`);
  spread(t, delta(before), 5, [0, 1], 'another value of the secret');
  before = served();
  for (let k = 0; k < 5; k++) await get(fSecret, '/?v=1', 's=b');
  spread(t, delta(before), 5, [0, 1], 'the bare sid names nothing');
});

t.test('-t: sticky modes, attributes, and where it is allowed', async (t) => {
  const http = (body: string) => `http { upstream u { server 127.0.0.1:1; ${body} } server { listen 127.0.0.1:1; location / { proxy_pass http://u; } } }`;
  t.equal((await checkConfig(http('sticky cookie x expires=max domain=$host httponly samesite=None secure path=/p; sticky_secret s; sticky_strict off;'))).code, 0, 'every attribute');
  t.equal((await checkConfig(http('least_time header; sticky route $http_x_route $cookie_r;'))).code, 0, 'route, with least_time');
  for (const [conf, message] of [
    [http('sticky learn create=$upstream_cookie_x lookup=$cookie_x zone=s:1m;'), /"sticky learn" is not supported/],
    [http('sticky header x;'), /unknown sticky mode "header"/],
    [http('sticky cookie;'), /invalid number of arguments in "sticky" directive/],
    [http('sticky cookie x; sticky route $arg_r;'), /"sticky" directive is duplicate/],
    [http('sticky cookie x samesite=sometimes;'), /invalid parameter "samesite=sometimes"/],
    [http('sticky cookie x expires=soon;'), /invalid parameter "expires=soon"/],
    [http('sticky cookie x expires=1h expires=2h;'), /parameter "expires" is duplicate/],
    [http('sticky cookie x colour=blue;'), /invalid parameter "colour=blue"/],
    [http('sticky route $nosuchvariable;'), /unknown "nosuchvariable" variable/],
    [http('sticky_strict maybe;'), /it must be "on" or "off"/],
    [`stream { upstream u { server 127.0.0.1:1; sticky cookie x; } server { listen 127.0.0.1:1; proxy_pass u; } }`, /"sticky" directive is not allowed here/],
    [`stream { upstream u { server 127.0.0.1:1 sid=a; } server { listen 127.0.0.1:1; proxy_pass u; } }`, /invalid parameter "sid=a"/],
  ] as const) {
    const r = await checkConfig(conf);
    t.not(r.code, 0, conf);
    t.match(r.err, message, conf);
  }
});
