// Resilience under load (issue 13): a worker SIGKILLed while proxying, SIGHUP while
// proxying, 1,000 idle connections on the admin listener, and the state file when the
// primary is SIGKILLed during a burst of /config writes. Each subtest prints its figures.
import t from 'tap';
import { createServer, request as httpRequest, Agent, type Server } from 'node:http';
import { connect as tcpConnect, type Socket } from 'node:net';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePorts, getJson, Zonal } from './zonal.js';

const [site, admin, backendPort, stateAdmin] = await freePorts(4);

/** The backend: answers every request at once with a short body. */
const backend: Server = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.end('ok\n'));
});
await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => (backend.close(() => resolve()), backend.closeAllConnections())));

const PEER = `127.0.0.1:${backendPort}`;
const conf = `
worker_processes 2;
http {
    upstream u {
        zone u 256k;
        server ${PEER};
    }
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        location / { proxy_pass http://u; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`;
const zonal = await Zonal.start({ 'zonal.conf': conf });
t.teardown(() => zonal.stop());
const status = (path: string) => getJson(`http://127.0.0.1:${admin}/status/${path}`, { signal: AbortSignal.timeout(5000) }).then((r) => r.body);

interface LoadResult {
  ok: number;
  /** Answers that are not 2xx, by status. */
  bad: Record<number, number>;
  /** Connection errors (no answer), by code. */
  errors: Record<string, number>;
  /** Connection errors per client. */
  errorsPerClient: number[];
}

/** `clients` clients GET `/` through zonal for at least `ms` and until `done()` says what
 * the load must overlap has happened (a loaded machine makes that take longer than any
 * fixed time), at most 20 s and 20,000 requests each: even clients on keep-alive
 * connections, odd ones a new connection per request. */
async function load(clients: number, ms: number, done: () => boolean = () => true): Promise<LoadResult & { endedAt: number }> {
  const result: LoadResult = { ok: 0, bad: {}, errors: {}, errorsPerClient: Array(clients).fill(0) };
  const least = Date.now() + ms;
  const most = Date.now() + 20_000;
  const going = () => Date.now() < most && (Date.now() < least || !done());
  const agents = Array.from({ length: clients }, (_, i) => (i % 2 === 0 ? new Agent({ keepAlive: true, maxSockets: 1 }) : undefined));
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port: site, path: `/c${i}`, agent: agents[i] ?? false, headers: agents[i] ? {} : { Connection: 'close' }, timeout: 5000 }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode! >= 200 && res.statusCode! < 300) result.ok++;
          else result.bad[res.statusCode!] = (result.bad[res.statusCode!] ?? 0) + 1;
          resolve();
        });
        res.on('error', (e: NodeJS.ErrnoException) => fail(e));
      });
      const fail = (e: NodeJS.ErrnoException) => {
        const code = e.code ?? e.message;
        result.errors[code] = (result.errors[code] ?? 0) + 1;
        result.errorsPerClient[i]++;
        resolve();
      };
      req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
      req.on('error', fail);
      req.end();
    });
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      for (let n = 0; n < 20_000 && going(); n++) await one(i);
    }),
  );
  for (const a of agents) a?.destroy();
  return { ...result, endedAt: Date.now() };
}

const failed = (r: LoadResult) => Object.values(r.bad).reduce((a, b) => a + b, 0) + Object.values(r.errors).reduce((a, b) => a + b, 0);

t.test('a worker SIGKILLed under proxy load is replaced; the totals never go down', async (t) => {
  const workers = zonal.workers();
  t.equal(workers.length, 2, 'two workers');
  type Sample = { requests: number; selected: number; responses: Record<string, number> };
  const samples: Sample[] = [];
  let sampling = true;
  let sampleErrors = 0;
  const sampler = (async () => {
    // Every ~20 ms during the load and until it is stopped (at most 60 s).
    const stopAt = Date.now() + 60_000;
    while (sampling && Date.now() < stopAt) {
      try {
        const [zone, peer] = await Promise.all([status('http/server_zones/site'), status(`http/upstreams/u/peers/${PEER}`)]);
        samples.push({ requests: zone.requests.total, selected: peer.selected.total, responses: peer.responses });
      } catch {
        sampleErrors++;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const before = await status('http/server_zones/site');
  const from = zonal.log.length;
  // Until the replacement worker is up and the sampler has seen the load throughout.
  let replaced = false;
  const running = load(8, 2000, () => replaced && samples.length >= 60);
  // Mid-load: once the backend's answers are flowing (a bounded wait for traffic).
  t.ok(await eventually(async () => (await status('http/server_zones/site')).requests.total - before.requests.total >= 200, 5000), 'traffic flowing');
  const killed = workers[0];
  process.kill(killed, 'SIGKILL');
  await zonal.waitLog(/exited \(SIGKILL\): starting another/, 10_000, from);
  t.ok(await eventually(async () => zonal.workers().length === 2 && !zonal.workers().includes(killed), 10_000), 'a new worker took its place');
  replaced = true;
  const result = await running;
  t.notOk(zonal.exited, 'the primary lives');
  // Everything answered is counted (the zone total may hold a request cut off with the worker).
  t.ok(await eventually(async () => (await status('http/server_zones/site')).requests.total - before.requests.total >= result.ok, 5000), 'every answer counted');
  sampling = false;
  await sampler;

  const drops: string[] = [];
  for (let i = 1; i < samples.length; i++) {
    const [p, q] = [samples[i - 1], samples[i]];
    if (q.requests < p.requests) drops.push(`requests.total ${p.requests} -> ${q.requests}`);
    if (q.selected < p.selected) drops.push(`selected.total ${p.selected} -> ${q.selected}`);
    for (const [k, v] of Object.entries(p.responses)) if ((q.responses[k] ?? 0) < v) drops.push(`responses.${k} ${v} -> ${q.responses[k]}`);
  }
  const errors = Object.values(result.errors).reduce((a, b) => a + b, 0);
  t.comment(
    `worker kill: ${result.ok} answered, ${errors} connection errors ${JSON.stringify(result.errors)}, non-2xx ${JSON.stringify(result.bad)}; ` +
      `${samples.length} status samples (${sampleErrors} failed), ${drops.length} decreases; killed ${killed}, workers now ${zonal.workers().join(',')}`,
  );
  t.same(drops, [], 'requests.total, selected.total and responses never went down');
  t.equal(sampleErrors, 0, 'the admin listener answered every sample');
  t.ok(samples.length >= 50, `sampled throughout (${samples.length})`);
  t.same(result.bad, {}, 'no answer other than 2xx (no 5xx)');
  // Only what the killed worker held can fail: one connection per client at most.
  t.ok(result.errorsPerClient.every((n) => n <= 1), `at most one failed request per client: ${result.errorsPerClient.join(',')}`);
  t.ok(result.ok > 200, 'the load went on');
});

t.test('SIGHUP twice under load: 0 failed requests, generation + 2', async (t) => {
  const g0 = (await status('server')).generation;
  const before = await status('http/server_zones/site');
  const from = zonal.log.length;
  const reloads: boolean[] = [];
  let reloaded = false;
  // Until both reloads are done and their old workers gone, then a little more.
  let doneAt = Infinity;
  const running = load(8, 1000, () => reloaded && Date.now() > doneAt + 200);
  for (const at of [200, 600]) {
    t.ok(await eventually(async () => (await status('http/server_zones/site')).requests.total - before.requests.total >= at, 5000), `traffic flowing (${at})`);
    const old = zonal.workers();
    reloads.push(await zonal.reload());
    // A reload needs free worker slots: the next waits until the old workers drained.
    t.ok(await eventually(async () => !zonal.workers().some((p) => old.includes(p)), 5000), 'the old workers drained under load and left');
  }
  const underLoad = Date.now();
  reloaded = true;
  doneAt = underLoad;
  const result = await running;
  const loadEnds = result.endedAt;
  const g1 = (await status('server')).generation;
  if (!reloads.every(Boolean)) t.comment(zonal.log.slice(from));
  t.comment(`SIGHUP x2: ${result.ok} answered, ${failed(result)} failed (connection errors ${JSON.stringify(result.errors)} per client ${result.errorsPerClient.join(',')}, non-2xx ${JSON.stringify(result.bad)}); generation ${g0} -> ${g1}`);
  t.same(reloads, [true, true], 'both reloads happened');
  t.equal(g1, g0 + 2, 'generation + 2');
  t.ok(underLoad < loadEnds, 'both reloads happened while the load ran');
  // The keep-alive clients are the ones at risk: a draining worker must not close a
  // connection under a request its client is sending (src/server/http/plane.ts drain()).
  t.same(result.errors, {}, 'no connection error');
  t.same(result.bad, {}, 'no answer other than 2xx');
  t.equal(failed(result), 0, '0 failed requests');
  t.ok(result.ok > 200, 'the load went on');
});

/** The soft limit on open files of a process, from /proc/<pid>/limits. */
function openFilesLimit(pid: number | 'self'): number {
  const line = readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.split(/\s{2,}/)[1];
  return soft === 'unlimited' ? Infinity : Number(soft);
}

// 1,000 sockets on each side, and room for the rest.
const limits = { test: openFilesLimit('self'), primary: openFilesLimit(zonal.child.pid!) };
const fewFiles = Math.min(limits.test, limits.primary) < 2100 && `the open files limit is below 2,100 (this process ${limits.test}, the primary ${limits.primary})`;

t.test('1,000 idle connections to the admin listener: /status/ keeps answering', { skip: fewFiles }, async (t) => {
  const sockets: Socket[] = [];
  t.teardown(() => sockets.forEach((s) => s.destroy()));
  let partial = 0;
  // 1,000 connections, 100 at a time, each connect bounded by 5 s.
  for (let batch = 0; batch < 10; batch++) {
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        new Promise<void>((resolve, reject) => {
          const s = tcpConnect(admin, '127.0.0.1');
          sockets.push(s);
          const timer = setTimeout(() => reject(new Error('connect timed out')), 5000);
          s.once('error', (e) => (clearTimeout(timer), reject(e)));
          s.once('connect', () => {
            clearTimeout(timer);
            // One in four has sent part of a request line and waits there.
            if ((batch * 100 + i) % 4 === 0) {
              s.write('GET /status/ HT');
              partial++;
            }
            resolve();
          });
        }),
      ),
    );
  }
  t.equal(sockets.length, 1000, '1,000 connections open');
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    for (const path of ['', 'connections']) {
      const started = performance.now();
      const res = await getJson(`http://127.0.0.1:${admin}/status/${path}`, { signal: AbortSignal.timeout(2000) });
      times.push(performance.now() - started);
      t.equal(res.status, 200, `/status/${path}: 200`);
      t.equal(typeof res.body, 'object', `/status/${path}: JSON`);
    }
  }
  const open = sockets.filter((s) => !s.destroyed && s.readyState === 'open').length;
  t.comment(`1,000 idle admin connections (${partial} with a partial request line, ${open} still open): 10 status reads, max ${Math.max(...times).toFixed(1)} ms, median ${times.sort((a, b) => a - b)[5].toFixed(1)} ms; open files limit ${limits.test}/${limits.primary}`);
  t.equal(open, 1000, 'the idle connections stay open meanwhile');
  t.ok(Math.max(...times) < 1000, 'each read within 1 s');
  sockets.forEach((s) => s.destroy());
  t.ok(await eventually(async () => sockets.every((s) => s.closed), 5000), 'all closed');
});

t.test('the state file survives the primary SIGKILLed during a burst of PATCHes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-state-'));
  const stateFile = join(dir, 'u.state');
  const stateConf = `
worker_processes 1;
http {
    upstream u {
        zone u 256k;
        state ${stateFile};
        server ${PEER};
    }
    server {
        listen 127.0.0.1:${stateAdmin} admin;
        location / { api /; }
    }
}
`;
  const first = await Zonal.start({ 'zonal.conf': stateConf });
  const workers = first.workers();
  const instance = `zonal.p${first.child.pid}.`;
  t.teardown(async () => {
    for (const pid of workers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await first.stop();
    for (const f of readdirSync('/dev/shm')) if (f.startsWith(instance)) rmSync(join('/dev/shm', f), { force: true });
    rmSync(dir, { recursive: true, force: true });
  });
  const url = `http://127.0.0.1:${stateAdmin}/config/http/upstreams/u/servers/${PEER}`;
  // One PATCH at a time: once weight N is acknowledged the file holds N (it is written
  // before the answer), and the one in flight is N + 1.
  const acked: number[] = [];
  let inFlight = 0;
  let failure = '';
  const started = Date.now();
  const burst = (async () => {
    for (let n = 1; n <= 20_000 && Date.now() - started < 15_000; n++) {
      inFlight = n;
      try {
        const res = await fetch(url, { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ weight: n }), signal: AbortSignal.timeout(5000) });
        await res.text();
        if (res.status !== 200) return void (failure = `weight ${n}: ${res.status}`);
        acked.push(n);
      } catch (e) {
        return void (failure = `weight ${n}: ${(e as Error).message}`);
      }
    }
  })();
  t.ok(await eventually(async () => acked.length >= 100 || !!failure, 10_000), 'PATCHes acknowledged');
  first.child.kill('SIGKILL');
  await first.waitExit(10_000);
  await burst;
  for (const pid of workers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // it left with its primary
    }
  }
  const gone = (pid: number) => !existsSync(`/proc/${pid}`) || /\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  t.ok(await eventually(async () => workers.every(gone), 10_000), 'no worker left');
  // A SIGKILLed primary removes nothing: its zones are left in /dev/shm.
  for (const f of readdirSync('/dev/shm')) if (f.startsWith(instance)) rmSync(join('/dev/shm', f), { force: true });

  const last = acked[acked.length - 1];
  const text = readFileSync(stateFile, 'utf8');
  const leftovers = readdirSync(dir).filter((f) => f !== 'u.state');
  const second = await Zonal.start({ 'zonal.conf': stateConf });
  t.teardown(() => second.stop());
  const shown = await getJson(`http://127.0.0.1:${stateAdmin}/config/http/upstreams/u/servers/`);
  t.comment(
    `state file: ${acked.length} PATCHes acknowledged in ${Date.now() - started} ms before the kill (last ${last}), the one in flight ${inFlight} (${failure || 'no failure'}); ` +
      `the file says ${JSON.stringify(text)}; after restart /config shows ${JSON.stringify(shown.body)}; temporary files left: ${leftovers.length}`,
  );
  t.ok(acked.length >= 100, 'the burst was under way');
  t.match(failure, new RegExp(`^weight ${inFlight}: `), 'the burst stopped at the kill, on the PATCH in flight');
  // Written whole (a temporary file, then rename) after each change and before its
  // answer: a complete file, holding the last acknowledged weight or the one in flight,
  // whose change may have reached the file before the kill cut its answer off.
  t.match(text, new RegExp(`^server ${PEER.replace(/\./g, '\\.')} weight=\\d+;\\n$`), 'the state file is whole');
  const filed = Number(/weight=(\d+)/.exec(text)![1]);
  t.ok(filed === last || filed === inFlight, `the file holds ${filed}: the last acknowledged (${last}) or the one in flight (${inFlight})`);
  t.equal(shown.status, 200, 'restarted: /config answers');
  t.same(Object.keys(shown.body), [PEER], 'the upstream has its one server');
  t.equal(shown.body[PEER]?.weight, filed, 'with the weight the state file holds');
});
