// The balancing methods end to end: bin/zonal with two workers in front of node:http
// backends this test runs, each method checked against what it must do with real
// traffic (by what the backends counted), and the status's counts against the backends'.
// Then the text format of the whole tree and of a branch through bin/zonal, with
// `api_config_files on`, and the configuration checks of peer names and slow_start as
// `-t` and /config give them.
import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkExposition, promtool } from '../api/exposition.js';
import { checkFile, eventually, freePorts, getJson, Zonal } from './zonal.js';

/** A backend: counts requests, and how many it held at once; answers after `delay` ms. */
class Backend {
  requests = 0;
  inflight = 0;
  maxInflight = 0;
  private server: Server | undefined;
  constructor(
    readonly name: string,
    readonly port: number,
    readonly delay = 0,
  ) {}

  start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.requests++;
      this.inflight++;
      this.maxInflight = Math.max(this.maxInflight, this.inflight);
      req.resume();
      req.on('end', () => {
        const answer = () => {
          this.inflight--;
          const body = JSON.stringify({ backend: this.name, url: req.url });
          res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
          res.end(body);
        };
        if (this.delay) setTimeout(answer, this.delay);
        else answer();
      });
    });
    return new Promise((resolve) => this.server!.listen(this.port, '127.0.0.1', () => resolve()));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.server) return resolve();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

const ports = await freePorts(15);
const [site, admin] = ports;
const backend = (i: number, name: string, delay = 0) => new Backend(name, ports[2 + i], delay);
// least_conn and random two: one peer 40 times slower than the others.
const lcSlow = backend(0, 'lc-slow', 200);
const lcFast = backend(1, 'lc-fast', 5);
const rnd1 = backend(2, 'rnd-w3');
const rnd2 = backend(3, 'rnd-w1');
const twoSlow = backend(4, 'two-slow', 200);
const twoFast1 = backend(5, 'two-fast1', 5);
const twoFast2 = backend(6, 'two-fast2', 5);
const ip = [backend(7, 'ip-a'), backend(8, 'ip-b'), backend(9, 'ip-c')];
const hashed = [backend(10, 'hash-a'), backend(11, 'hash-b'), backend(12, 'hash-c')];
const all = [lcSlow, lcFast, rnd1, rnd2, twoSlow, twoFast1, twoFast2, ...ip, ...hashed];
await Promise.all(all.map((b) => b.start()));

const servers = (list: Backend[], extra: (b: Backend, i: number) => string = () => '') =>
  list.map((b, i) => `        server 127.0.0.1:${b.port}${extra(b, i)};`).join('\n');
const conf = `
worker_processes 2;
http {
    upstream lc {
        least_conn;
${servers([lcSlow, lcFast])}
    }
    upstream rnd {
        random;
${servers([rnd1, rnd2], (_b, i) => (i === 0 ? ' weight=3' : ''))}
    }
    upstream two {
        random two;
${servers([twoSlow, twoFast1, twoFast2])}
    }
    upstream iph {
        ip_hash;
${servers(ip)}
    }
    upstream hsh {
        hash $arg_k;
${servers(hashed)}
    }
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        location /lc/ { proxy_pass http://lc; }
        location /rnd/ { proxy_pass http://rnd; }
        location /two/ { proxy_pass http://two; }
        location /iph/ { proxy_pass http://iph; }
        location /hsh/ { proxy_pass http://hsh; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / {
            api /;
            api_config_files on;
        }
    }
}
`;
const zonal = await Zonal.start({ 'zonal.conf': conf });
t.teardown(async () => {
  await zonal.stop();
  await Promise.all(all.map((b) => b.stop()));
});

const status = (path: string) => getJson(`http://127.0.0.1:${admin}/status/${path}`).then((r) => r.body);

/** One GET through zonal on a connection of its own (so the kernel spreads them over
 * both workers), from `from` (a loopback source address) when given. */
function get(path: string, from?: string): Promise<{ status: number; backend: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: site, path, agent: false, timeout: 10_000, ...(from ? { localAddress: from } : {}) }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, backend: (JSON.parse(text) as { backend: string }).backend }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.end();
  });
}

/** `total` GETs, `n` at a time; the answers' backends. */
async function load(path: (i: number) => string, total: number, n = 16, from?: (i: number) => string): Promise<string[]> {
  const out: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < total) {
        const i = next++;
        const r = await get(path(i), from?.(i));
        if (r.status !== 200) throw new Error(`${path(i)} answered ${r.status}`);
        out.push(r.backend);
      }
    }),
  );
  return out;
}

const count = (names: string[], name: string) => names.filter((n) => n === name).length;

/** CPU ticks each worker used so far (utime + stime of /proc/<pid>/stat). */
function workerTicks(): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of zonal.workers()) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(pid, Number(f[11]) + Number(f[12]));
  }
  return out;
}

/** The status agrees with the backends: each peer's selected.total and 200s are what its
 * backend counted, and the upstream's peers together what the clients were answered. */
async function statusMatches(t: Test, upstream: string, backends: Backend[], answered: number): Promise<void> {
  const peers = async () => (await status(`http/upstreams/${upstream}/peers`)) as Record<string, { selected: { total: number; current: number }; responses: Record<string, number> }>;
  // A worker counts a response as it goes out: the client may read the status first.
  const settled = await eventually(async () => {
    const p = await peers();
    return backends.every((b) => p[`127.0.0.1:${b.port}`]?.responses['200'] === b.requests && p[`127.0.0.1:${b.port}`].selected.current === 0);
  }, 5000);
  const p = await peers();
  t.ok(settled, `${upstream}: the status settled`);
  for (const b of backends) {
    const peer = p[`127.0.0.1:${b.port}`];
    t.equal(peer.selected.total, b.requests, `${upstream}: ${b.name}'s selected.total is what it counted (${b.requests})`);
    t.equal(peer.responses['200'], b.requests, `${upstream}: and its 200s`);
  }
  t.equal(Object.values(p).reduce((s, x) => s + x.selected.total, 0), answered, `${upstream}: the peers together, what the clients got (${answered})`);
}

t.test('both workers serve the traffic', async (t) => {
  const before = workerTicks();
  t.equal(before.size, 2, 'two workers');
  await load(() => '/hsh/x?k=warm', 1500, 16);
  const after = workerTicks();
  for (const [pid, ticks] of before) t.ok((after.get(pid) ?? 0) > ticks, `worker ${pid} used CPU: ${ticks} -> ${after.get(pid)} ticks`);
  for (const b of hashed) b.requests = 0;
  // The warm-up's counts are in the status: compare later from zero by their sum.
  const peers = (await status('http/upstreams/hsh/peers')) as Record<string, { selected: { total: number } }>;
  t.equal(Object.values(peers).reduce((s, x) => s + x.selected.total, 0), 1500);
});

t.test('least_conn: the peer with fewer requests in flight', async (t) => {
  const answers = await load(() => '/lc/x', 600, 16);
  const slow = count(answers, 'lc-slow');
  const fast = count(answers, 'lc-fast');
  t.equal(slow + fast, 600);
  // Round robin would give the slow peer half. least_conn gives it a request only when
  // it has no more in flight than the fast one, which answers in 5 ms against 200.
  t.ok(slow < 0.15 * 600, `the slow peer got ${slow} of 600, the fast one ${fast}`);
  t.ok(slow > 0, 'the slow peer still gets requests when the counts tie');
  await statusMatches(t, 'lc', [lcSlow, lcFast], 600);
});

t.test('random: weight-proportional, 3:1', async (t) => {
  const n = 4000;
  const answers = await load(() => '/rnd/x', n, 16);
  const heavy = count(answers, 'rnd-w3');
  // Binomial: p = 0.75, sd = sqrt(p(1-p)/n) = 0.0068 at n = 4000; ±0.03 is 4.4 sd, which a
  // fair random balancer misses about once in 100,000 runs, and a 1:1 or a 2:1 split
  // (0.5, 0.67) always.
  t.ok(Math.abs(heavy / n - 0.75) <= 0.03, `weight 3 got ${heavy} of ${n} (${((100 * heavy) / n).toFixed(1)}%, expected 75% ± 3)`);
  // Not a rotation: random has runs a 3:1 round robin never has (four in a row of the light peer).
  const joined = answers.map((a) => (a === 'rnd-w1' ? '1' : '3')).join('');
  t.ok(joined.includes('1111'), 'runs of the light peer, as chance makes them');
  await statusMatches(t, 'rnd', [rnd1, rnd2], n);
});

t.test('random two: of two peers drawn, the one with fewer in flight', async (t) => {
  const n = 900;
  const answers = await load(() => '/two/x', n, 16);
  const slow = count(answers, 'two-slow');
  // Plain random would give the slow peer a third. It is always drawn with a fast peer
  // (two distinct peers), and wins only when its count is no higher than that one's.
  t.ok(slow < 0.12 * n, `the slow peer got ${slow} of ${n}; fast: ${count(answers, 'two-fast1')}, ${count(answers, 'two-fast2')}`);
  t.ok(count(answers, 'two-fast1') > 0.3 * n && count(answers, 'two-fast2') > 0.3 * n, 'the two fast peers share the rest');
  await statusMatches(t, 'two', [twoSlow, twoFast1, twoFast2], n);
});

t.test('ip_hash: one client network, one peer; different networks spread', async (t) => {
  // ip_hash keys on the first three octets of an IPv4 client: 127.N.0.x are 12 networks,
  // and two hosts of one network share a key.
  const networks = Array.from({ length: 12 }, (_, i) => i + 1);
  const sources = networks.flatMap((net) => [`127.${net}.0.1`, `127.${net}.0.2`]);
  const per = 10;
  const answers = await load(() => '/iph/x', sources.length * per, 16, (i) => sources[i % sources.length]);
  const byNetwork = new Map<number, Set<string>>();
  // The i-th answer is not the i-th request: ask again, one network at a time.
  t.equal(answers.length, sources.length * per);
  for (const net of networks) {
    const seen = new Set<string>();
    for (const host of [1, 2]) for (let k = 0; k < 5; k++) seen.add((await get('/iph/x', `127.${net}.0.${host}`)).backend);
    byNetwork.set(net, seen);
    t.equal(seen.size, 1, `127.${net}.0.0/24: always ${[...seen].join(', ')}`);
  }
  const used = new Set([...byNetwork.values()].map((s) => [...s][0]));
  t.ok(used.size >= 2, `12 networks over ${used.size} of 3 peers`);
  await statusMatches(t, 'iph', ip, sources.length * per + networks.length * 10);
});

t.test('hash: a key always on one peer; different keys spread', async (t) => {
  const keys = Array.from({ length: 150 }, (_, i) => `key-${i}`);
  const where = new Map<string, Set<string>>();
  const rounds = 3;
  const paths = Array.from({ length: keys.length * rounds }, (_, i) => keys[i % keys.length]);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < paths.length) {
        const key = paths[next++];
        const r = await get(`/hsh/x?k=${key}`);
        if (!where.has(key)) where.set(key, new Set());
        where.get(key)!.add(r.backend);
      }
    }),
  );
  t.ok([...where.values()].every((s) => s.size === 1), `each of ${keys.length} keys, asked ${rounds} times over both workers, went to one peer`);
  // Binomial over 150 keys, p = 1/3: 50 ± 5.8 each; at least 25 is more than 4 sd below.
  const perPeer = hashed.map((b) => [...where.values()].filter((s) => s.has(b.name)).length);
  t.ok(perPeer.every((k) => k >= 25), `keys per peer: ${perPeer.join(', ')}`);
  const total = await status('http/upstreams/hsh/peers');
  t.equal(hashed.reduce((s, b) => s + b.requests, 0), paths.length, 'the backends counted every request');
  t.equal(
    Object.values(total as Record<string, { selected: { total: number } }>).reduce((s, x) => s + x.selected.total, 0),
    paths.length + 1500,
    'the status too (with the warm-up)',
  );
});

t.test('text format through bin/zonal, with api_config_files on', async (t) => {
  const json = await status('server');
  t.ok(json.config_files && typeof json.config_files[zonal.file] === 'string', 'config_files is shown here');
  const text = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${admin}/status/${path}?format=prometheus`);
    t.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4', `${path}: content type`);
    return res.text();
  };
  const whole = await text('');
  const branch = await text('http/upstreams/lc');
  for (const [name, body] of [['the whole tree', whole], ['an upstream', branch]]) {
    t.same(checkExposition(body), [], `${name}: valid exposition`);
    const tool = promtool(body);
    if (tool !== 'absent') t.equal(tool, '', `${name}: promtool check metrics is clean`);
  }
  t.notMatch(whole, /config_files|zonal\.conf/, 'the configuration files are text, no metric');
  t.match(whole, new RegExp(`^zonal_http_upstreams_peers_selected_total\\{upstream="lc",peer="127\\.0\\.0\\.1:${lcSlow.port}"\\} ${lcSlow.requests}$`, 'm'));
  t.match(whole, /^zonal_http_server_zones_responses_total\{zone="site",code="200"\} \d+$/m);
  const lines = new Set(whole.split('\n'));
  t.same(branch.split('\n').filter((l) => l && !lines.has(l)), [], 'the branch: lines of the whole tree only');
  t.match(branch, new RegExp(`^zonal_http_upstreams_peers_selected_total\\{upstream="lc",peer="127\\.0\\.0\\.1:${lcFast.port}"\\} ${lcFast.requests}$`, 'm'));
  t.notMatch(branch, /upstream="rnd"/, 'and only its own');
  t.equal(await text('server'), 'generation 0\n', 'the server branch: generation only, config_files or not');
});

t.test('peer names and slow_start: -t and /config refuse the same, with the same message', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-methods-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const check = async (upstream: string) => {
    const file = join(dir, 'check.conf');
    writeFileSync(file, `worker_processes 1;\nhttp {\n    upstream u {\n${upstream}\n    }\n    server {\n        listen 127.0.0.1:1;\n    }\n}\n`);
    const r = await checkFile(file);
    return { code: r.code, err: r.err, at: `${file}:` };
  };
  const api = (method: string, path: string, body: unknown) =>
    getJson(`http://127.0.0.1:${admin}/config/http/upstreams/${path}`, { method, body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } });
  for (const name of ['example.invalid', 'backend.local:8080', '_http._tcp@127.0.0.1:8080']) {
    const file = await check(`        server ${name};`);
    t.equal(file.code, 1, `-t refuses ${name}`);
    const message = /\[emerg\] (.*) in \S+:4/.exec(file.err)?.[1];
    t.match(message, /needs a resolver/, `${name}: the file's message, with file and line 4: ${file.err.trim()}`);
    const put = await api('PUT', `hsh/servers/${name}`, {});
    t.equal(put.status, 400, `/config refuses ${name}`);
    t.equal(put.body.error, 'FormatError');
    t.ok(put.body.description.includes(message!), `${name}: /config says what -t says`);
  }
  const local = await check('        server localhost:1;');
  t.equal(local.code, 0, '-t takes localhost');
  t.equal((await api('PUT', `lc/servers/localhost:${ports[14]}`, { weight: 2 })).status, 201, '/config takes it too');
  const peer = await status(`http/upstreams/lc/peers/127.0.0.1:${ports[14]}`);
  t.equal(peer.server, `localhost:${ports[14]}`, 'keyed 127.0.0.1:<port>, server as written');
  t.equal((await getJson(`http://127.0.0.1:${admin}/config/http/upstreams/lc/servers/127.0.0.1:${ports[14]}`, { method: 'DELETE' })).status, 200);

  for (const method of ['hash $uri;', 'ip_hash;', 'random;', 'random two;']) {
    const file = await check(`        ${method}\n        server 127.0.0.1:1 slow_start=10s;`);
    t.equal(file.code, 1, `-t refuses slow_start with ${method}`);
    const message = /\[emerg\] (.*) in \S+:5/.exec(file.err)?.[1];
    t.match(message, /does not support parameter "slow_start"/, `${method}: with file and line 5`);
    const upstream = { 'hash $uri;': 'hsh', 'ip_hash;': 'iph', 'random;': 'rnd', 'random two;': 'two' }[method]!;
    const port = { hsh: hashed[0].port, iph: ip[0].port, rnd: rnd1.port, two: twoFast1.port }[upstream]!;
    const patch = await api('PATCH', `${upstream}/servers/127.0.0.1:${port}`, { slow_start: 10 });
    t.equal(patch.status, 400, `/config refuses slow_start in ${upstream}`);
    t.ok(patch.body.description.includes(message!), `${upstream}: /config says what -t says: ${patch.body.description}`);
    t.notOk('slow_start' in (await getJson(`http://127.0.0.1:${admin}/config/http/upstreams/${upstream}/servers/127.0.0.1:${port}`)).body, 'nothing changed');
  }
  t.equal((await check('        least_conn;\n        server 127.0.0.1:1 slow_start=10s;')).code, 0, '-t takes it with least_conn');
  t.equal((await api('PATCH', `lc/servers/127.0.0.1:${lcFast.port}`, { slow_start: 10 })).status, 200, '/config too');
});
