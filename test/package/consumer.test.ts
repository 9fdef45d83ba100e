// zonal as a dependency (issue 31), tried as a user would: `npm pack` of this checkout,
// the tarball installed into a fresh app whose PATH has no C++ compiler and no make (node,
// npm, npx and sh only), and there:
// - what was shipped and installed: no tests, benchmarks, CI, maps or TypeScript sources
//   but the .d.ts; a prebuilt addon; nothing compiled at install; no TypeScript, node-gyp
//   or uWebSockets.js pulled in;
// - an ESM and a CommonJS cluster app: the primary creates the zones, two workers record
//   exact counts (a server zone, and an upstream's peers picked by zonal's balancer), and
//   one of them reads them through zonal's API handler over HTTP (the ESM app on
//   serveApi, which falls back to node:http without uWebSockets.js; the CommonJS one on
//   apiListener in node:http);
// - the bin: a server it starts answers, its primary and worker running the bundle
//   (dist/bundle/, which starts faster than dist/src); and every name the README imports
//   from 'zonal';
// - a TypeScript consumer type-checked under moduleResolution node16, nodenext and
//   bundler, and a CommonJS .cts file.
// The pack runs in a copy of the checkout (other tests use this checkout's dist/ and
// build/, which prepack rebuilds), and builds the prebuild of this machine's arch only.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { get } from 'node:http';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnUntracked } from '../helpers.js';
import { freePorts } from '../server/zonal.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Ran {
  code: number | string | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, killed after `ms`. */
function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; ms: number }): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawnUntracked(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      stderr += `\n[killed after ${options.ms} ms]`;
      child.kill('SIGKILL');
    }, options.ms);
    child.on('error', (err) => (stderr += String(err)));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, stdout, stderr });
    });
  });
}

const tail = (r: Ran) => `exit ${r.code}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`;
/** An assertion's message: what ran, and on a failure how it ended and what it printed. */
const said = (what: string, r: Ran) => (r.code === 0 ? what : `${what}: ${tail(r)}`);

/** Bytes and files under `dir`, symbolic links not followed. */
function usage(dir: string): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const s = statSync(path, { throwIfNoEntry: false });
    if (!s) continue;
    if (s.isDirectory()) {
      const u = usage(path);
      bytes += u.bytes;
      files += u.files;
    } else {
      bytes += s.size;
      files++;
    }
  }
  return { bytes, files };
}

const work = mkdtempSync(join(tmpdir(), 'zonal-consumer-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

// The environment of everything run here: this process's own, less npm's and tap's
// variables (a child npm must not take the parent's prefix or lifecycle, nor an app tap's
// loaders: see spawnUntracked) and less ZONAL_INSTANCE (each app's primary names its own).
const clean: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(npm_|TAP|NODE_OPTIONS$|NODE_V8_COVERAGE$|ZONAL_|_TAPJS)/i.test(k)),
);

// A PATH with node, npm, npx and sh only: no compiler, no make.
const bin = join(work, 'bin');
mkdirSync(bin);
const which = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim();
symlinkSync(process.execPath, join(bin, 'node'));
for (const name of ['npm', 'npx']) symlinkSync(realpathSync(which(name)), join(bin, name));
symlinkSync(realpathSync(which('sh')), join(bin, 'sh'));
const bare: NodeJS.ProcessEnv = { ...clean, PATH: bin };

const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
const locked = (name: string) => `${name}@${lock.packages[`node_modules/${name}`].version}`;
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

let tarball = '';
let app = '';

t.test('npm pack ships what runs, and only that', async (t) => {
  // A copy of the checkout without what is built or installed, on this node_modules.
  const copy = join(work, 'checkout');
  const skip = new Set(['node_modules', 'build', 'dist', 'prebuilds', '.tap', '.git']);
  cpSync(root, copy, { recursive: true, filter: (src) => !skip.has(relative(root, src).split('/')[0]) && !src.endsWith('.tgz') });
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'), 'dir');
  const started = Date.now();
  const packed = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: copy, env: { ...clean, ZONAL_PREBUILD_ARCHS: arch() }, ms: 300_000 });
  t.equal(packed.code, 0, said('npm pack', packed));
  const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{ filename: string; size: number; unpackedSize: number; entryCount: number; files: Array<{ path: string }> }>;
  tarball = join(work, info.filename);
  t.ok(existsSync(tarball), info.filename);
  t.comment(`npm pack took ${Date.now() - started} ms: tarball ${info.size} bytes, ${info.entryCount} files, ${info.unpackedSize} bytes unpacked`);

  const paths = info.files.map((f) => f.path);
  const shipped = /^(dist\/src\/.+\.(js|d\.ts)|dist\/bundle\/[^/]+\.cjs|dist\/bundle\/inputs\.json|prebuilds\/[^/]+\/[^/]+\.node|bin\/[^/]+|native\/[^/]+\.(cc|h)|conf\/.+|binding\.gyp|src\/server\/dashboard\/dashboard\.html|package\.json|README\.md|LICENSE)$/;
  t.same(paths.filter((p) => !shipped.test(p)), [], 'nothing outside the allow-list');
  t.same(paths.filter((p) => /\.map$|^(test|bench|examples|scripts|\.ci)\//.test(p) || (/\.[cm]?ts$/.test(p) && !p.endsWith('.d.ts'))), [], 'no maps, tests, benchmarks, examples, scripts, CI or TypeScript sources');
  for (const p of ['dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/server/cli.js', 'dist/bundle/zonal.cjs', 'dist/bundle/worker.cjs', 'dist/bundle/inputs.json', `prebuilds/linux-${arch()}/zonal.glibc.node`, 'binding.gyp', 'native/addon.cc', 'bin/zonal'])
    t.ok(paths.includes(p), `ships ${p}`);
  t.notOk(
    paths.some((p) => p.startsWith('dist/') && p.endsWith('.js') && readFileSync(join(copy, p), 'utf8').includes('sourceMappingURL')),
    'the shipped JavaScript names no source map',
  );
});

t.test('installs into a fresh app with no compiler on PATH, and compiles nothing', async (t) => {
  if (!tarball) return t.fail('no tarball');
  const missing = spawnSync('sh', ['-c', 'for c in g++ c++ gcc cc clang make python3; do command -v "$c" && exit 1; done; exit 0'], { env: bare, encoding: 'utf8' });
  t.equal(missing.status, 0, `no compiler, make or python on the app's PATH${missing.stdout ? `; found ${missing.stdout}` : ''}`);
  t.ok(which('g++') || which('cc'), 'the test PATH had one (what was taken away)');

  app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), `${JSON.stringify({ name: 'app', version: '1.0.0', private: true }, null, 2)}\n`);
  const npm = ['install', '--prefer-offline', '--no-audit', '--no-fund', '--foreground-scripts'];
  const started = Date.now();
  const installed = await run('npm', [...npm, tarball], { cwd: app, env: bare, ms: 240_000 });
  t.comment(`npm install <tarball> took ${Date.now() - started} ms`);
  t.equal(installed.code, 0, said('npm install <tarball>', installed));
  const zonal = join(app, 'node_modules', 'zonal');
  t.ok(existsSync(join(zonal, 'prebuilds', `linux-${arch()}`, 'zonal.glibc.node')), 'the prebuild is there');
  t.notOk(existsSync(join(zonal, 'build')), 'nothing was compiled (no build/)');
  for (const name of ['typescript', 'node-gyp', 'uWebSockets.js', 'prebuildify'])
    t.notOk(existsSync(join(app, 'node_modules', name)), `${name} is not installed with zonal`);
  const { bytes, files } = usage(join(app, 'node_modules'));
  t.comment(`installed: node_modules ${bytes} bytes in ${files} files`);
  t.ok(bytes < 10_000_000, `node_modules is small (${(bytes / 1e6).toFixed(1)} MB)`);

  // What the type check needs, as the rest of the suite has it.
  const tools = await run('npm', [...npm, '--save-dev', locked('typescript'), locked('@types/node')], { cwd: app, env: bare, ms: 240_000 });
  t.equal(tools.code, 0, said('npm install typescript @types/node', tools));
});

// Each app prints one line `RESULT <json>`: what its reading worker got over HTTP.
const clusterApp = (format: 'esm' | 'cjs') => `${
  format === 'esm'
    ? `import cluster from 'node:cluster';
import { request } from 'node:http';
import { Balancer, createApi, serveApi, serverZones, Status, WORKER_SLOT_ENV } from 'zonal';`
    : `const cluster = require('node:cluster');
const { createServer, request } = require('node:http');
const { apiListener, Balancer, createApi, serverZones, Status, WORKER_SLOT_ENV } = require('zonal');`
}

// Worker 0 records 7 requests, worker 1 records 11; every fourth is a 404. Each picks
// from the upstream 4 and 6 times: the balancer's round robin splits each worker's picks
// evenly, 5 and 5 in all.
const REQUESTS = [7, 11];
const PICKS = [4, 6];
const config = {
  http: {
    serverZones: [{ name: 'site' }],
    upstreams: [{ name: 'backend', peers: [{ server: '127.0.0.1:8081' }, { server: '127.0.0.1:8082' }] }],
  },
};

function get(port, path) {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    }).on('error', reject).end();
  });
}

${format === 'esm' ? 'const listen = (handler) => serveApi({ host: "127.0.0.1", port: 0, handler });' : `const listen = (handler) => new Promise((resolve) => {
  const listener = apiListener(handler);
  const server = createServer((req, res) => listener(req, res)).listen(0, '127.0.0.1', () => resolve({ port: server.address().port, close: () => server.close() }));
});`}

if (cluster.isPrimary) {
  const status = Status.create(config, { workers: 2 });
  const workers = [0, 1].map((slot) => cluster.fork({ [WORKER_SLOT_ENV]: String(slot) }));
  let recorded = 0;
  for (const w of workers) w.on('message', (m) => m === 'recorded' && ++recorded === 2 && workers[0].send('read'));
  workers[0].on('exit', (code) => {
    workers[1].kill();
    status.remove();
    process.exit(code ?? 1);
  });
  setTimeout(() => (console.error('timed out'), process.exit(3)), 30_000).unref();
} else {
  const slot = Number(process.env[WORKER_SLOT_ENV]);
  const status = Status.attach();
  const site = serverZones.recorder(status, 'site');
  for (let i = 0; i < REQUESTS[slot]; i++) {
    site.requestStarted();
    site.responseSent(i % 4 === 3 ? 404 : 200, 100, 1000);
  }
  const upstream = status.catalog().http.upstreams.find((u) => u.name === 'backend');
  const balancer = new Balancer(status, upstream, { kind: 'round_robin' });
  for (let i = 0; i < PICKS[slot]; i++) {
    const chosen = balancer.pick();
    if (typeof chosen === 'string') throw new Error('no peer: ' + chosen);
    balancer.release(chosen, false);
  }
  process.send('recorded');
  process.on('message', async (m) => {
    if (m !== 'read') return;
    const server = await listen(createApi({ status }));
    const zone = await get(server.port, '/status/http/server_zones/site');
    const peers = await get(server.port, '/status/http/upstreams/backend/peers/');
    server.close();
    const z = JSON.parse(zone.body);
    const p = JSON.parse(peers.body);
    const result = {
      status: [zone.status, peers.status],
      requests: z.requests.total,
      responses: z.responses,
      data: z.data,
      selected: Object.fromEntries(Object.entries(p).map(([name, peer]) => [name, peer.selected.total])),
      requireModule: process.features.require_module === true,
    };
    console.log('RESULT ' + JSON.stringify(result));
    const ok = result.requests === 18 && result.responses['200'] === 15 && result.responses['404'] === 3 && result.data.received === 1800 && result.data.sent === 18000;
    process.exit(ok ? 0 : 1);
  });
}
`;

for (const format of ['esm', 'cjs'] as const) {
  t.test(`${format === 'esm' ? 'an ESM' : 'a CommonJS'} cluster app counts exactly, read through /status/ over HTTP`, async (t) => {
    if (!app) return t.fail('not installed');
    const file = format === 'esm' ? 'cluster.mjs' : 'cluster.cjs';
    writeFileSync(join(app, file), clusterApp(format));
    const ran = await run('node', [file], { cwd: app, env: bare, ms: 60_000 });
    t.equal(ran.code, 0, said(`node ${file}`, ran));
    const line = ran.stdout.split('\n').find((l) => l.startsWith('RESULT '));
    if (!line) return t.fail(`no RESULT line: ${tail(ran)}`);
    const result = JSON.parse(line.slice('RESULT '.length));
    t.same(result.status, [200, 200], 'both reads answered 200');
    t.equal(result.requests, 18, 'requests.total: 7 + 11');
    t.same(result.responses, { '200': 15, '404': 3 }, 'responses by code');
    t.same(result.data, { received: 1800, sent: 18000 }, 'bytes');
    t.same(result.selected, { '127.0.0.1:8081': 5, '127.0.0.1:8082': 5 }, "the balancer's picks: 4 + 6, evenly");
    if (format === 'esm') t.match(ran.stderr, /uWebSockets\.js is not installed: the API on 127\.0\.0\.1:\d+ is served by node:http/, 'serveApi said it fell back to node:http');
    else t.equal(result.requireModule, true, 'require(esm) is on in this Node');
  });
}

t.test('the bin runs, and every name the README imports from zonal is exported', async (t) => {
  if (!app) return t.fail('not installed');
  const conf = join(app, 'node_modules', 'zonal', 'conf', 'zonal.conf');
  const checked = await run(join(app, 'node_modules', '.bin', 'zonal'), ['-t', '-c', conf], { cwd: app, env: bare, ms: 30_000 });
  t.equal(checked.code, 0, said('zonal -t -c conf/zonal.conf', checked));
  // etcd3 is an optional peer: a configuration that keeps its upstreams in etcd says what
  // to install.
  mkdirSync(join(app, 'store'), { recursive: true });
  writeFileSync(join(app, 'store', 'zonal.conf'), 'config_store etcd://127.0.0.1:2379/zonal;\nhttp { upstream u { zone u 64k; server 127.0.0.1:8081; } }\n');
  const store = await run(join(app, 'node_modules', '.bin', 'zonal'), ['-t', '-c', join(app, 'store', 'zonal.conf')], { cwd: app, env: bare, ms: 30_000 });
  t.equal(store.code, 1, 'config_store without etcd3 fails -t');
  t.match(store.stderr, /"config_store" needs the etcd3 package, which is not installed: install it beside zonal \(npm install etcd3\)/);

  // A server from the bin answers; CPU profiles of its primary and worker (node:cluster
  // forks the worker with the primary's options) say which files ran.
  const [port] = await freePorts(1);
  const served = join(app, 'served');
  mkdirSync(join(served, 'profiles'), { recursive: true });
  writeFileSync(join(served, 'zonal.conf'), `http { server { listen 127.0.0.1:${port}; location / { return 200 "from the package\\n"; } } }\n`);
  const server = spawnUntracked('node', ['--cpu-prof', '--cpu-prof-interval', '100', '--cpu-prof-dir', join(served, 'profiles'), join(app, 'node_modules', '.bin', 'zonal'), '-c', join(served, 'zonal.conf')], { cwd: app, env: bare, stdio: 'ignore' });
  const exited = new Promise((resolve) => server.once('exit', resolve));
  let body = '';
  for (let i = 0; i < 200 && body === ''; i++) {
    body = await new Promise<string>((resolve) =>
      get(`http://127.0.0.1:${port}/`, (r) => {
        let b = '';
        r.on('data', (d) => (b += d)).on('end', () => resolve(r.statusCode === 200 ? b : ''));
      }).on('error', () => setTimeout(() => resolve(''), 100)),
    );
  }
  server.kill('SIGTERM');
  await exited;
  t.equal(body, 'from the package\n', 'the server the bin started answers');
  // A profile a thread: the processes' own are those that ran zonal's files (the other
  // threads run none).
  const ran = readdirSync(join(served, 'profiles'))
    .map((f) => {
      const profile = JSON.parse(readFileSync(join(served, 'profiles', f), 'utf8')) as { nodes: Array<{ callFrame: { url: string } }> };
      return [...new Set(profile.nodes.map((n) => n.callFrame.url.replace(/^.*\/node_modules\/zonal\//, '')).filter((u) => /^(dist|bin)\//.test(u)))];
    })
    .filter((files) => files.length > 0);
  t.equal(ran.length, 2, 'two processes ran zonal: the primary and its worker');
  t.ok(
    ran.some((files) => files.some((u) => u.startsWith('dist/bundle/zonal'))),
    "the primary's bundle ran",
  );
  t.ok(
    ran.some((files) => files.some((u) => u.startsWith('dist/bundle/worker'))),
    "the worker's bundle ran",
  );
  t.same(ran.flat().filter((u) => u.startsWith('dist/src/')), [], 'nothing of dist/src ran');
  // The code V8 compiled is kept beside the bundle (the package folder is writable here),
  // and a start that takes it runs as well.
  const compiled = join(app, 'node_modules', 'zonal', 'dist', 'bundle', 'compiled');
  const kept = existsSync(compiled) ? readdirSync(compiled).sort() : [];
  t.match(kept, [/^worker\.cjs-\d+-\d+-/, /^zonal\.cjs-\d+-\d+-/], "the primary's and the worker's compiled code were kept");
  const written = () => kept.map((f) => statSync(join(compiled, f)).mtimeMs);
  const before = written();
  const again = await run(join(app, 'node_modules', '.bin', 'zonal'), ['-t', '-c', conf], { cwd: app, env: bare, ms: 30_000 });
  t.equal(again.code, 0, said('zonal -t with the compiled code kept', again));
  t.same(readdirSync(compiled).sort(), kept, 'the same files');
  t.same(written(), before, 'not written again: V8 took the code (a rejected one is replaced)');

  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const imports = [...readme.matchAll(/import\s*\{([^}]*)\}\s*from\s*'(zonal[^']*)'/g)];
  t.ok(imports.length > 0, `the README has ${imports.length} import lines from zonal`);
  const subpaths = ['zonal', 'zonal/express', 'zonal/fastify', 'zonal/undici'];
  t.same([...new Set(imports.map((m) => m[2]))].filter((s) => !subpaths.includes(s)), [], `the README imports from ${subpaths.join(', ')} only`);
  // The framework subpaths load their framework: it is installed for them below.
  for (const from of new Set(imports.map((m) => m[2]).filter((s) => s === 'zonal'))) {
    const names = [...new Set(imports.filter((m) => m[2] === from).flatMap((m) => m[1].split(',').map((n) => n.trim().replace(/^type\s+/, '')).filter(Boolean)))];
    const listed = await run('node', ['--input-type=module', '-e', `import * as z from '${from}'; console.log(JSON.stringify(Object.keys(z)))`], { cwd: app, env: bare, ms: 30_000 });
    const exported = new Set(JSON.parse(listed.stdout) as string[]);
    t.same(names.filter((n) => !exported.has(n)), [], `${from}: ${names.join(', ')}: all exported`);
  }
  const exportsField = Object.keys(manifest.exports);
  t.same(exportsField, ['.', './express', './fastify', './undici', './package.json'], 'the front door, the framework subpaths and package.json');
});

// The README's Express and Fastify apps (examples/*-app.ts), as an app would have them:
// its imports from zonal's subpaths, its types stripped by the app's own TypeScript.
for (const [example, framework] of [
  ['express-app.ts', 'express'],
  ['fastify-app.ts', 'fastify'],
] as const) {
  t.test(`the README's ${framework} app runs from the package, and counts exactly`, async (t) => {
    if (!app) return t.fail('not installed');
    const added = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', locked(framework)], { cwd: app, env: bare, ms: 240_000 });
    t.equal(added.code, 0, said(`npm install ${framework}`, added));
    const source = readFileSync(join(root, 'examples', example), 'utf8').replace(`'../src/embed/${framework}.js'`, `'zonal/${framework}'`);
    t.match(source, `from 'zonal/${framework}'`, 'the example imports zonal as an app does');
    writeFileSync(join(app, example), source);
    const js = example.replace(/\.ts$/, '.mjs');
    const strip = `const ts = require('typescript'); const fs = require('fs'); fs.writeFileSync(${JSON.stringify(js)}, ts.transpileModule(fs.readFileSync(${JSON.stringify(example)}, 'utf8'), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText);`;
    const stripped = await run('node', ['-e', strip], { cwd: app, env: bare, ms: 30_000 });
    t.equal(stripped.code, 0, said('strip types', stripped));
    const [port, apiPort] = await freePorts(2);
    const child = spawnUntracked('node', [js], { cwd: app, env: { ...bare, PORT: String(port), ZONAL_PORT: String(apiPort) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    t.teardown(() => void child.kill('SIGTERM'));
    const until = async (probe: () => Promise<boolean> | boolean, ms: number) => {
      const end = Date.now() + ms;
      for (let i = 0; i < 2000 && Date.now() < end; i++) {
        try {
          if (await probe()) return true;
        } catch {
          // Not listening yet.
        }
        await new Promise((r) => setTimeout(r, 25));
      }
      return false;
    };
    t.ok(await until(() => (out.match(/^worker \d+ on /gm) ?? []).length === 2, 30_000), `both workers listen: ${out}`);
    const n = 9;
    for (let i = 0; i < n; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/users/${i}`, { headers: { connection: 'close' } });
      t.equal(res.status, 200);
      await res.text();
    }
    const json = async (path: string) => (await fetch(`http://127.0.0.1:${apiPort}/status/${path}`)).json() as Promise<any>;
    t.ok(await until(async () => (await json('http/server_zones/app/requests')).total === n, 10_000), 'the primary shows every request');
    t.same((await json('http/location_zones/'))['/users/:id']?.responses, { 200: n }, 'one route zone for /users/:id, exact');
    t.equal((await json('connections')).accepted, n, 'connections');
  });
}

const consumer = `import { createServer } from 'node:http';
import {
  apiListener,
  Balancer,
  createApi,
  DnsResolver,
  resolver,
  serveApi,
  serverZones,
  Status,
  WORKER_SLOT_ENV,
  type ApiHandler,
  type BalancingMethod,
  type ServeApiOptions,
  type StatusConfig,
} from 'zonal';

const config: StatusConfig = {
  http: { serverZones: [{ name: 'site' }], upstreams: [{ name: 'backend', peers: [{ server: '127.0.0.1:8081' }] }] },
  resolvers: ['dns'],
};

export function primary(): Status {
  return Status.create(config, { workers: 2 });
}

export async function worker(): Promise<number> {
  const status = Status.attach();
  const site = serverZones.recorder(status, 'site');
  site.requestStarted();
  site.responseSent(200, 100, 1000);
  // @ts-expect-error a response's status is a number: the types are zonal's, not any
  site.responseSent('200', 100, 1000);
  const handler: ApiHandler = createApi({ status });
  const listener = apiListener(handler);
  createServer((req, res) => void listener(req, res));
  const options: ServeApiOptions = { host: '127.0.0.1', port: 0, handler };
  const server = await serveApi(options);
  server.close();
  const method: BalancingMethod = { kind: 'round_robin' };
  const upstream = status.catalog().http?.upstreams?.find((u) => u.name === 'backend');
  if (upstream) {
    const balancer = new Balancer(status, upstream, method);
    const chosen = balancer.pick();
    if (typeof chosen !== 'string') balancer.release(chosen, false);
  }
  const dns = new DnsResolver({ servers: [{ host: '127.0.0.1', port: 53 }], recorder: resolver(status, 'dns') });
  void dns;
  return Number(process.env[WORKER_SLOT_ENV]);
}
`;

t.test('TypeScript consumers type-check: node16, nodenext, bundler, and a CommonJS .cts', async (t) => {
  if (!app) return t.fail('not installed');
  writeFileSync(join(app, 'consumer.mts'), consumer);
  writeFileSync(join(app, 'consumer.ts'), consumer);
  writeFileSync(join(app, 'consumer.cts'), consumer);
  const base = { target: 'ES2022', lib: ['ES2022'], types: ['node'], strict: true, noEmit: true, skipLibCheck: true };
  // One run checks every declaration file too (zonal's, and @types/node's, which costs
  // most of its time); the others check the consumer's file against them.
  const settings: Record<string, { module: string; moduleResolution: string; file: string; skipLibCheck?: boolean }> = {
    node16: { module: 'node16', moduleResolution: 'node16', file: 'consumer.mts' },
    nodenext: { module: 'nodenext', moduleResolution: 'nodenext', file: 'consumer.mts', skipLibCheck: false },
    bundler: { module: 'esnext', moduleResolution: 'bundler', file: 'consumer.ts' },
    cts: { module: 'nodenext', moduleResolution: 'nodenext', file: 'consumer.cts' },
  };
  // And the check can fail: a name zonal does not export is an error.
  writeFileSync(join(app, 'wrong.mts'), "import { noSuchThing } from 'zonal';\nvoid noSuchThing;\n");
  writeFileSync(join(app, 'tsconfig.wrong.json'), JSON.stringify({ compilerOptions: { ...base, module: 'nodenext', moduleResolution: 'nodenext' }, files: ['wrong.mts'] }));
  const tsc = join(app, 'node_modules', 'typescript', 'bin', 'tsc');
  const started = Date.now();
  const wrong = run('node', [tsc, '-p', 'tsconfig.wrong.json'], { cwd: app, env: bare, ms: 120_000 });
  const runs = Object.entries(settings).map(async ([name, s]) => {
    const project = `tsconfig.${name}.json`;
    const compilerOptions = { ...base, module: s.module, moduleResolution: s.moduleResolution, skipLibCheck: s.skipLibCheck ?? base.skipLibCheck };
    writeFileSync(join(app, project), JSON.stringify({ compilerOptions, files: [s.file] }, null, 2));
    return [name, s.file, await run('node', [tsc, '-p', project], { cwd: app, env: bare, ms: 120_000 })] as const;
  });
  for (const [name, file, ran] of await Promise.all(runs)) t.equal(ran.code, 0, said(`${name}: ${file} type-checks`, ran));
  const failed = await wrong;
  t.not(failed.code, 0, 'a missing export fails the check');
  t.match(failed.stdout, /noSuchThing/, 'naming it');
  t.comment(`the five checks took ${Date.now() - started} ms`);
});
