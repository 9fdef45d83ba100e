// The process model's directives on a running zonal: events { worker_connections },
// env, daemon, worker_rlimit_nofile, and a start within a generous bound.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { eventually, freePorts, getJson, runZonal } from '../zonal.js';
import { Run } from './run.js';

const harness = (dir: string) => ['-p', `${dir}/`, '-c', 'nginx.conf', '-e', 'error.log', '-g', `pid ${dir}/zonal.pid;`];

/** A connection that has sent a request and read its answer: open, counted, waiting. */
function keptAlive(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\nHost: a\r\n\r\n'));
    s.once('data', () => resolve(s));
    s.once('error', reject);
  });
}

/** Connects and sends a request: what came back before the server closed, '' for nothing. */
function refusedOrAnswered(port: number): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const s = connect(port, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'));
    s.on('data', (d) => (got += d));
    s.on('close', () => resolve(got));
    s.on('error', () => {});
    s.setTimeout(10_000, () => s.destroy());
  });
}

t.test('events { worker_connections 2; }: a third connection is closed at once and counted dropped', async (t) => {
  const [port, admin] = await freePorts(2);
  const z = await Run.start(
    {
      'nginx.conf': `daemon off;
events { worker_connections 2; }
http {
    server { listen 127.0.0.1:${port}; location / { return 200 "ok\\n"; } }
    server { listen 127.0.0.1:${admin} admin; location /api/ { api /; } }
}
`,
    },
    harness,
  );
  t.teardown(() => z.stop());
  const held = [await keptAlive(port), await keptAlive(port)];
  t.equal(await refusedOrAnswered(port), '', 'closed without an answer');
  await z.waitLog(/\[alert\] 2 worker_connections are not enough/);
  const dropped = await eventually(async () => (await getJson(`http://127.0.0.1:${admin}/api/status/connections`)).body.dropped === 1);
  t.ok(dropped, 'connections.dropped counts it');
  held[0].destroy();
  t.ok(await eventually(async () => (await refusedOrAnswered(port)).startsWith('HTTP/1.1 200'), 10_000), 'room again once one closes');
  held[1].destroy();
});

t.test('worker_connections counts stream and HTTP connections together', async (t) => {
  const [port, tcp, admin] = await freePorts(3);
  // An echo backend: a stream session is open while its client is.
  const backend = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  t.teardown(() => backend.close());
  const backendPort = (backend.address() as { port: number }).port;
  const z = await Run.start(
    {
      'nginx.conf': `daemon off;
events { worker_connections 2; }
http {
    server { listen 127.0.0.1:${port}; location / { return 200 "ok\\n"; } }
    server { listen 127.0.0.1:${admin} admin; location /api/ { api /; } }
}
stream { server { listen 127.0.0.1:${tcp}; proxy_pass 127.0.0.1:${backendPort}; } }
`,
    },
    harness,
  );
  t.teardown(() => z.stop());
  const echoing = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const s = connect(tcp, '127.0.0.1', () => s.write('x'));
      s.once('data', () => resolve(s));
      s.once('error', reject);
    });
  const held = [await echoing(), await keptAlive(port)];
  t.equal(await refusedOrAnswered(port), '', 'an HTTP connection past the two is closed');
  const third = connect(tcp, '127.0.0.1');
  third.on('error', () => {});
  const ended = await new Promise<string>((resolve) => {
    let got = '';
    third.on('connect', () => third.write('y'));
    third.on('data', (d) => (got += d));
    third.on('close', () => resolve(got));
  });
  t.equal(ended, '', 'a stream connection past the two is closed without reaching the backend');
  t.ok(await eventually(async () => (await getJson(`http://127.0.0.1:${admin}/api/status/connections`)).body.dropped === 2), 'both counted dropped');
  held.forEach((s) => s.destroy());
});

t.test('env: the workers keep TZ and what env names, nothing else', async (t) => {
  const [port] = await freePorts(1);
  const z = await Run.start(
    { 'nginx.conf': `daemon off;\nenv KEPT;\nenv SET=value;\nevents { }\nhttp { server { listen 127.0.0.1:${port}; } }\n` },
    harness,
    'zonal.pid',
    { KEPT: 'kept', DROPPED: 'dropped', TZ: 'UTC' },
  );
  t.teardown(() => z.stop());
  const [worker] = z.workers();
  const env = new Map(
    readFileSync(`/proc/${worker}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  t.equal(env.get('KEPT'), 'kept');
  t.equal(env.get('SET'), 'value');
  t.equal(env.get('TZ'), 'UTC');
  t.notOk(env.has('DROPPED'), 'a variable env does not name is removed, as nginx does');
  t.notOk(env.has('PATH'));
});

t.test('a configuration that does not load: exit 1, and the worker forked before it was read is gone', async (t) => {
  const z = Run.spawn({ 'nginx.conf': 'daemon off;\nevents { bogus; }\nhttp { }\n' }, harness);
  t.teardown(() => z.stop());
  t.same(await z.waitExit(), { code: 1, signal: null });
  t.match(z.log, /\[emerg\] unknown directive "bogus"/);
  // The early worker has the instance in its environment: no process of it may remain.
  const instance = `ZONAL_INSTANCE=p${z.pid}`;
  const ofInstance = () =>
    readdirSync('/proc').filter((name) => {
      try {
        return /^\d+$/.test(name) && readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(instance);
      } catch {
        return false; // gone meanwhile
      }
    });
  t.ok(await eventually(async () => ofInstance().length === 0, 5000), `no process of the instance remains: ${ofInstance().join(' ')}`);
});

t.test('daemon on: the command returns once the server runs; -s stop ends it', async (t) => {
  const [port] = await freePorts(1);
  const z = Run.spawn({ 'nginx.conf': `daemon on;\nevents { }\nhttp { server { listen 127.0.0.1:${port}; location / { return 200 "daemon\\n"; } } }\n` }, harness);
  t.teardown(() => z.stop());
  t.same(await z.waitExit(), { code: 0, signal: null }, 'the command exits 0 once the server has started');
  const pid = Number(readFileSync(join(z.dir, 'zonal.pid'), 'utf8'));
  t.not(pid, z.pid, 'the server is another process');
  const answer = await getJson(`http://127.0.0.1:${port}/`);
  t.same([answer.status, answer.body], [200, 'daemon\n']);
  const stop = await runZonal([...harness(z.dir), '-s', 'stop']);
  t.equal(stop.code, 0, stop.err);
  t.ok(await eventually(async () => !(await import('node:fs')).existsSync(`/proc/${pid}`), 20_000), 'the server stopped');
});

t.test('worker_rlimit_nofile: said at the start that Node cannot apply it', async (t) => {
  const [port] = await freePorts(1);
  // nginx's harness: the main error log is error.log at debug, where a [warn] shows.
  const z = await Run.start({ 'nginx.conf': `daemon off;\nworker_rlimit_nofile 77;\nevents { }\nhttp { server { listen 127.0.0.1:${port}; } }\n` }, (dir) => [
    ...harness(dir).slice(0, -1),
    `pid ${dir}/zonal.pid; error_log ${dir}/error.log debug;`,
  ]);
  t.teardown(() => z.stop());
  const errorLog = () => readFileSync(join(z.dir, 'error.log'), 'utf8');
  const said = /\[warn\] \d+#\d+: "worker_rlimit_nofile 77" cannot be applied: Node has no setrlimit\(\)/;
  t.ok(await eventually(async () => said.test(errorLog()), 20_000), `error.log says so:\n${errorLog()}`);
});

t.test('start time: a one-server configuration answers well within a generous bound', async (t) => {
  const [port] = await freePorts(1);
  const began = Date.now();
  const z = Run.spawn({ 'nginx.conf': `daemon off;\nevents { }\nhttp { server { listen 127.0.0.1:${port}; location / { return 200 "ok\\n"; } } }\n` }, harness);
  t.teardown(() => z.stop());
  const up = await eventually(async () => (await getJson(`http://127.0.0.1:${port}/`).catch(() => ({ status: 0 }))).status === 200, 20_000);
  t.ok(up, `answered after ${Date.now() - began} ms (the 0.5 s goal is measured by bench side, not asserted on this shared machine)`);
});

t.test("-p: nginx's default access_log logs/access.log combined under the prefix, where that folder exists", async (t) => {
  const [withLogs, without] = await freePorts(2);
  const conf = (port: number) => `daemon off;\nevents { }\nhttp { server { listen 127.0.0.1:${port}; location / { return 200 "ok\\n"; } } }\n`;
  const z = await Run.start({ 'nginx.conf': conf(withLogs), 'logs/.keep': '' }, harness);
  t.teardown(() => z.stop());
  t.equal((await getJson(`http://127.0.0.1:${withLogs}/a?b=1`)).status, 200);
  const accessLog = join(z.dir, 'logs', 'access.log');
  const line = /^127\.0\.0\.1 - - \[[^\]]+\] "GET \/a\?b=1 HTTP\/1\.1" 200 3 "-" "[^"]*"\n$/;
  t.ok(await eventually(async () => existsSync(accessLog) && line.test(readFileSync(accessLog, 'utf8')), 10_000), `a combined line in logs/access.log: ${existsSync(accessLog) ? readFileSync(accessLog, 'utf8') : 'none'}`);

  // No logs/ folder: nothing to write to, and the server runs (nginx would refuse to start).
  const bare = await Run.start({ 'nginx.conf': conf(without) }, harness);
  t.teardown(() => bare.stop());
  t.equal((await getJson(`http://127.0.0.1:${without}/`)).status, 200);
  t.notOk(existsSync(join(bare.dir, 'logs')), 'no folder made');
});
