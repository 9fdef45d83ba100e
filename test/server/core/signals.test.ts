// nginx's signals (nginx.org/en/docs/control.html) sent to a real `bin/zonal`: QUIT is a
// graceful stop (in-flight requests finish), TERM and INT a fast one, HUP a reload, USR1
// the log files' reopening; the zone files and the pid file go at exit.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { eventually, freePorts } from '../zonal.js';
import { Run } from './run.js';

/** A backend that holds each response until told. */
async function holdingBackend(t: Test) {
  const held: ServerResponse[] = [];
  let arrived: (() => void) | undefined;
  const server = createServer((_req, res) => {
    held.push(res);
    arrived?.();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return {
    port: (server.address() as { port: number }).port,
    /** Resolves when a request has arrived (or had already). */
    arrival: () => new Promise<void>((r) => (held.length ? r() : (arrived = r))),
    release: (body: string) => held.splice(0).forEach((res) => res.end(body)),
  };
}

/** A GET through zonal: its status and body, or the error that ended it. */
function get(port: number, path = '/'): Promise<{ status?: number; body?: string; error?: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
      res.on('error', (e) => resolve({ error: e.message }));
    });
    req.on('error', (e) => resolve({ error: e.message }));
    req.end();
  });
}

/** Whether something accepts connections on the port. */
const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('connect', () => (s.destroy(), resolve(true)));
    s.on('error', () => resolve(false));
  });

const conf = (port: number, backend: number) => `
daemon off;
events { }
http {
    server {
        listen 127.0.0.1:${port};
        location / { return 200 "up\\n"; }
        location /slow { proxy_pass http://127.0.0.1:${backend}; }
    }
}
`;

/** nginx's test harness's command line: its main error log is error.log, at debug. */
const harness = (dir: string) => ['-p', `${dir}/`, '-c', 'nginx.conf', '-e', 'error.log', '-g', `pid ${dir}/zonal.pid; error_log ${dir}/error.log debug;`];

/** What the server wrote to its error.log so far. */
const errorLog = (dir: string) => (existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '');

/** Waits (bounded) for a line of error.log. */
async function logged(t: Test, dir: string, re: RegExp): Promise<void> {
  if (!(await eventually(async () => re.test(errorLog(dir)), 20_000))) t.fail(`no ${re} in error.log within 20 s:\n${errorLog(dir)}`);
}

t.test('QUIT: the listeners close, the request in flight finishes, exit 0, zones and pid file gone', async (t) => {
  const backend = await holdingBackend(t);
  const [port] = await freePorts(1);
  const z = await Run.start({ 'nginx.conf': conf(port, backend.port) }, harness);
  t.teardown(() => z.stop());
  t.equal(readFileSync(join(z.dir, 'zonal.pid'), 'utf8'), `${z.pid}\n`, 'the pid file names the primary');
  t.same(await get(port), { status: 200, body: 'up\n' }, 'it answers once the pid file is there');
  t.ok(z.zoneFiles().length > 0, 'zone files in /dev/shm while it runs');
  const workers = z.workers();
  t.equal(workers.length, 1);

  const slow = get(port, '/slow');
  await backend.arrival();
  z.child.kill('SIGQUIT');
  t.ok(await eventually(async () => !(await accepts(port)), 10_000), 'no new connections once QUIT is received');
  t.equal(z.exited, undefined, 'still running while the request is in flight');
  backend.release('finished\n');
  t.same(await slow, { status: 200, body: 'finished\n' }, 'the request in flight finished');
  t.same(await z.waitExit(), { code: 0, signal: null });
  t.same(z.zoneFiles(), [], 'zone files removed');
  t.notOk(existsSync(join(z.dir, 'zonal.pid')), 'pid file removed');
  t.notOk(existsSync(`/proc/${workers[0]}`), 'the worker is gone');
});

for (const signal of ['SIGTERM', 'SIGINT'] as const)
  t.test(`${signal}: a fast stop, the request in flight cut, exit 0, zones and pid file gone`, async (t) => {
    const backend = await holdingBackend(t);
    const [port] = await freePorts(1);
    const z = await Run.start({ 'nginx.conf': conf(port, backend.port) }, harness);
    t.teardown(() => z.stop());
    const slow = get(port, '/slow');
    await backend.arrival();
    z.child.kill(signal);
    t.same(await z.waitExit(), { code: 0, signal: null }, 'exits without waiting for the backend');
    t.ok((await slow).error, 'the request in flight was cut');
    t.same(z.zoneFiles(), [], 'zone files removed');
    t.notOk(existsSync(join(z.dir, 'zonal.pid')), 'pid file removed');
  });

t.test('-s quit and -s reload through the pid file; USR1 reaches the log hook; HUP of a configuration 5,000 deep is refused', async (t) => {
  const backend = await holdingBackend(t);
  const [port] = await freePorts(1);
  const z = await Run.start({ 'nginx.conf': conf(port, backend.port) }, harness);
  t.teardown(() => z.stop());
  const control = async (signal: string) => {
    const c = Run.spawn({}, () => [...harness(z.dir), '-s', signal]);
    t.teardown(() => c.stop());
    return c.waitExit();
  };

  z.child.kill('SIGUSR1');
  await logged(t, z.dir, /\[notice\] \d+#\d+: signal 10 \(SIGUSR1\) received, reopening logs/);
  t.same(await get(port), { status: 200, body: 'up\n' }, 'USR1 does not stop it (Node would start its inspector)');

  writeFileSync(join(z.dir, 'nginx.conf'), conf(port, backend.port).replace('"up\\n"', '"reloaded\\n"'));
  t.same(await control('reload'), { code: 0, signal: null });
  await logged(t, z.dir, /reloaded: generation 1/);
  t.same(await get(port), { status: 200, body: 'reloaded\n' });

  const deep = 'daemon off;\nevents { }\nhttp { server { listen 127.0.0.1:' + port + ';\n' + 'location / {\n'.repeat(5000) + '}'.repeat(5000) + '\n} }\n';
  writeFileSync(join(z.dir, 'nginx.conf'), deep);
  z.child.kill('SIGHUP');
  await logged(t, z.dir, /reload refused/);
  t.match(errorLog(z.dir), `too deep nesting of blocks and includes: more than 100 levels in ${join(z.dir, 'nginx.conf')}:102`);
  t.notMatch(errorLog(z.dir) + z.log, /RangeError/);
  t.same(await get(port), { status: 200, body: 'reloaded\n' }, 'the running configuration goes on serving');

  // -s reads the configuration for its pid file, as nginx's does: a good one again.
  writeFileSync(join(z.dir, 'nginx.conf'), conf(port, backend.port));
  t.same(await control('quit'), { code: 0, signal: null });
  t.same(await z.waitExit(), { code: 0, signal: null });
  t.same(z.zoneFiles(), []);
});
