// Issue 19, item 1: what a reload and a restart keep of /config changes. With `state
// <file>` an upstream's peers come from the file, and every /config change is written to
// it: they survive a SIGHUP and a restart. Without it the configured servers come back
// with either. A state file that is corrupt or cannot be written is a clear error.
import t, { type Test } from 'tap';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkFile, freePorts, getJson, runZonal, Zonal } from './zonal.js';

const [admin, p1, p2, p3] = await freePorts(4);
const A = `127.0.0.1:${p1}`;
const B = `127.0.0.1:${p2}`;
const C = `127.0.0.1:${p3}`;

const conf = (state?: string) => `
worker_processes 2;
http {
    upstream u {
        zone u 256k;
        ${state ? `state ${state};` : ''}
        server ${A};
        server ${B} weight=2;
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`;

const servers = `http://127.0.0.1:${admin}/config/http/upstreams/u/servers/`;

async function write(method: string, name: string, body?: unknown): Promise<number> {
  const res = await fetch(servers + name, {
    method,
    ...(body !== undefined ? { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) } : {}),
  });
  await res.text();
  return res.status;
}

/** The changes both halves make: one peer added, one changed, one removed. */
async function change(t: Test): Promise<void> {
  t.equal(await write('PUT', C, { weight: 3 }), 201, 'PUT adds a peer');
  t.equal(await write('PATCH', A, { max_fails: 7 }), 200, 'PATCH changes one');
  t.equal(await write('DELETE', B), 200, 'DELETE removes one');
}

const CONFIGURED = { [A]: {}, [B]: { weight: 2 } };
const CHANGED = { [A]: { max_fails: 7 }, [C]: { weight: 3 } };

async function shown(): Promise<unknown> {
  const got = await getJson(servers);
  return got.status === 200 ? got.body : got;
}

t.test('with state: /config changes survive a SIGHUP and a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-state-'));
  const file = join(dir, 'u.state');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  let zonal = await Zonal.start({ 'zonal.conf': conf(file) });
  t.teardown(() => zonal.stop());
  t.same(await shown(), CONFIGURED, 'no state file yet: the configured servers');
  await change(t);
  t.same(await shown(), CHANGED, 'changed');
  t.equal(readFileSync(file, 'utf8'), `server ${A} max_fails=7;\nserver ${C} weight=3;\n`, 'the state file holds the change');

  t.ok(await zonal.reload(), 'SIGHUP reloaded');
  t.same(await shown(), CHANGED, 'the reload kept the changes');

  await zonal.stop();
  t.notOk(existsSync(join(zonal.dir)), 'the first server is gone');
  zonal = await Zonal.start({ 'zonal.conf': conf(file) });
  t.same(await shown(), CHANGED, 'the restart kept them too');
  // A change after the restart goes on from the file's set.
  t.equal(await write('PATCH', C, { weight: 4 }), 200);
  t.ok(await zonal.reload(), 'reloaded again');
  t.same(await shown(), { [A]: { max_fails: 7 }, [C]: { weight: 4 } }, 'and so does the next');
});

t.test('without state: a SIGHUP and a restart give the configured servers back', async (t) => {
  let zonal = await Zonal.start({ 'zonal.conf': conf() });
  t.teardown(() => zonal.stop());
  await change(t);
  t.same(await shown(), CHANGED, 'changed');
  t.ok(await zonal.reload(), 'SIGHUP reloaded');
  t.same(await shown(), CONFIGURED, 'the reload reset the changes');

  await change(t);
  t.same(await shown(), CHANGED, 'changed again');
  await zonal.stop();
  zonal = await Zonal.start({ 'zonal.conf': conf() });
  t.same(await shown(), CONFIGURED, 'the restart reset them too');
});

t.test('a corrupt state file: -t, start and reload name its line, nothing crashes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-state-'));
  const file = join(dir, 'u.state');
  const main = join(dir, 'zonal.conf');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(main, conf(file));
  writeFileSync(file, `server ${A};\nserver ${B} weight=heavy;\n`);

  const checked = await checkFile(main);
  t.not(checked.code, 0, '-t fails');
  t.match(checked.err, `zonal: [emerg] bad value in "weight=heavy" in the state file of upstream "u" in ${file}:2`, '-t names the state file and its line');

  writeFileSync(file, `# kept by zonal\nserver ${A};\nserver example.org:80 weight=2;\n`);
  const named = await checkFile(main);
  t.match(named.err, `zonal: [emerg] the server "example.org:80" is a host name, which needs a resolver`, 'a peer zonal cannot address: the same message as in the configuration file');
  t.match(named.err, `in the state file of upstream "u" in ${file}:3`, 'by its line');

  writeFileSync(file, `server ${A}\n`);
  const started = await runZonal(['-c', main]);
  t.not(started.code, 0, 'start refuses');
  t.match(started.err, `in ${file}:1`, 'naming the line');
  t.notMatch(started.err, /at .*\.js:\d+/, 'an error message, not a stack');

  // Running, then the file goes bad: the reload is refused and the server goes on.
  writeFileSync(file, `server ${C};\n`);
  const zonal = await Zonal.start({ 'zonal.conf': conf(file) });
  t.teardown(() => zonal.stop());
  t.same(await shown(), { [C]: {} }, 'started from the state file');
  writeFileSync(file, 'upstream {\n');
  t.notOk(await zonal.reload(), 'the reload is refused');
  t.match(zonal.log, `in ${file}:1`, 'the log names the state file');
  t.same(await shown(), { [C]: {} }, 'the running set stays');
  t.equal(await write('PATCH', C, { weight: 5 }), 200, '/config still writes');
  t.equal(readFileSync(file, 'utf8'), `server ${C} weight=5;\n`, 'and its write repairs the file');
  t.notOk(zonal.exited, 'still running');
});

t.test('a state file that cannot be written: -t names the directive; a /config write is refused whole', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-state-'));
  const main = join(dir, 'zonal.conf');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(main, conf(join(dir, 'missing', 'u.state')));
  const checked = await checkFile(main);
  t.not(checked.code, 0, '-t fails');
  t.match(checked.err, new RegExp(`cannot write the state file ".*missing/u\\.state" \\(ENOENT\\) in ${main.replace(/\./g, '\\.')}:6`), 'naming the directive');

  // Writable at start, then its directory goes away under the running server.
  const sub = join(dir, 'sub');
  mkdirSync(sub);
  const zonal = await Zonal.start({ 'zonal.conf': conf(join(sub, 'u.state')) });
  t.teardown(() => zonal.stop());
  rmSync(sub, { recursive: true, force: true });
  const res = await fetch(servers + A, { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: '{"weight":9}' });
  const body = (await res.json()) as { error: string; description: string };
  t.equal(res.status, 500, 'the write is refused');
  t.equal(body.error, 'InternalError');
  t.match(body.description, /state file/, 'saying why');
  t.same(await shown(), CONFIGURED, 'nothing changed');
  t.notOk(existsSync(sub), 'no file was made in its place');
  t.notOk(zonal.exited, 'still running');
});

t.test('writes through two workers at once leave the state file with the newest set', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-state-'));
  const file = join(dir, 'u.state');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const [data] = await freePorts(1);
  const text = conf(file).replace(
    '    server {\n        listen 127.0.0.1:' + admin + ' admin;',
    `    server {\n        listen 127.0.0.1:${data};\n        location / { api /; }\n    }\n    server {\n        listen 127.0.0.1:${admin} admin;`,
  );
  t.match(text, `listen 127.0.0.1:${data};`, 'a data-plane API served by the workers');
  const zonal = await Zonal.start({ 'zonal.conf': text });
  t.teardown(() => zonal.stop());
  // Fresh connections, so that both workers take some of them.
  const patch = (weight: number) =>
    fetch(`http://127.0.0.1:${data}/config/http/upstreams/u/servers/${A}`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/json', Connection: 'close' },
      body: JSON.stringify({ weight }),
    }).then(async (res) => (await res.text(), res.status));
  for (let round = 0; round < 5; round++) {
    const statuses = await Promise.all(Array.from({ length: 40 }, (_, i) => patch(round * 40 + i + 1)));
    t.ok(statuses.every((s) => s === 200), `round ${round}: every PATCH taken`);
    const live = ((await shown()) as Record<string, { weight?: number }>)[A]?.weight;
    t.equal(readFileSync(file, 'utf8').split('\n')[0], `server ${A} weight=${live};`, `round ${round}: the file holds the live weight ${live}`);
  }
});

t.test('a server configured by name (localhost) keeps its name through the state file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-state-'));
  const file = join(dir, 'u.state');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const text = conf(file).replace(`server ${A};`, `server localhost:${p1};`);
  const zonal = await Zonal.start({ 'zonal.conf': text });
  t.teardown(() => zonal.stop());
  const before = await getJson(`http://127.0.0.1:${admin}/status/http/upstreams/u/peers/`);
  t.equal(before.body[A]?.server, `localhost:${p1}`, 'the peer goes by its address');
  t.equal(await write('PATCH', A, { max_fails: 3 }), 200);
  t.match(readFileSync(file, 'utf8'), `server localhost:${p1} max_fails=3;`, 'the file writes it as configured');
  t.ok(await zonal.reload(), 'reloaded');
  const after = await shown();
  t.same(Object.keys(after as object).sort(), [A, B].sort(), 'read back, under the same name');
  t.same((after as Record<string, unknown>)[A], { max_fails: 3 }, 'with its change');
});
