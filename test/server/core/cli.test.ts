// The command line as nginx's (nginx.org/en/docs/switches.html): -v, -V, -t, -T, -q, -p,
// -c, -e, -g, -s, and the main-context directives that -t checks.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { NGINX_MODULES } from '../../../src/server/core/modules.js';
import { formatConfigError, loadConfig } from '../../../src/server/config/load.js';
import { checkFile, runZonal } from '../zonal.js';

const dir = mkdtempSync(join(tmpdir(), 'zonal-cli-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** Writes files under a fresh folder of `dir`; returns the folder. */
let cases = 0;
function tree(files: Record<string, string>): string {
  const root = join(dir, `case-${++cases}`);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(root, name, '..'), { recursive: true });
    writeFileSync(join(root, name), text);
  }
  return root;
}

const HTTP = 'http { server { listen 127.0.0.1:1; location / { return 200 ok; } } }\n';

t.test('-v and -V print the versions on stderr, -V with the nginx version and configure arguments', async (t) => {
  const v = await runZonal(['-v']);
  t.equal(v.code, 0);
  t.equal(v.out, '');
  t.match(v.err, /^zonal version: zonal\/\d+\.\d+\.\d+\n$/);

  const V = await runZonal(['-V']);
  t.equal(V.code, 0);
  const lines = V.err.split('\n');
  t.match(lines[0], /^zonal version: zonal\/\d+\.\d+\.\d+$/);
  // What nginx's test harness reads to pick the tests that apply.
  t.match(V.err, /^nginx version: nginx\/1\.22\.1 /m);
  const args = /^configure arguments: (.*)$/m.exec(V.err)?.[1].split(' ') ?? [];
  t.ok(args.includes('--with-http_ssl_module'));
  t.ok(args.includes('--with-stream'));
  t.ok(args.includes('--with-stream_ssl_module'));
  t.ok(args.includes('--with-http_realip_module'));
  for (const name of ['http_fastcgi_module', 'http_uwsgi_module', 'http_scgi_module', 'http_grpc_module', 'http_memcached_module'])
    t.ok(args.includes(`--without-${name}`), `--without-${name}`);
  for (const name of ['http_proxy_module', 'http_limit_req_module', 'http_upstream_zone_module', 'http_access_module', 'http_map_module', 'http_geo_module', 'stream_map_module', 'stream_geo_module'])
    t.notOk(args.some((a) => a.endsWith(name)), `${name} is built in, not named`);
  // The table is what -V prints: every module that differs from nginx's default, once.
  t.equal(args.length, NGINX_MODULES.filter((m) => m.implemented !== m.byDefault).length);
});

t.test('-t, -T and -q', async (t) => {
  const root = tree({ 'zonal.conf': 'events { }\ninclude http.conf;\n', 'http.conf': HTTP });
  const file = join(root, 'zonal.conf');
  const test = await runZonal(['-t', '-c', file]);
  t.equal(test.code, 0);
  t.equal(test.out, '');
  t.equal(test.err, `zonal: configuration file ${file} test is successful\n`);

  const dump = await runZonal(['-T', '-c', file]);
  t.equal(dump.code, 0);
  t.equal(dump.out, `# configuration file ${file}:\nevents { }\ninclude http.conf;\n\n# configuration file ${join(root, 'http.conf')}:\n${HTTP}\n`, "nginx's dump: every file read, in order");

  const quiet = await runZonal(['-t', '-q', '-c', file]);
  t.equal(quiet.code, 0);
  t.equal(quiet.err, '', '-q: nothing but errors');
  const grouped = await runZonal(['-tq', '-c', file]);
  t.same([grouped.code, grouped.err], [0, ''], 'flags grouped as nginx takes them');

  const bad = tree({ 'zonal.conf': 'events { bogus; }\n' + HTTP });
  const failed = await runZonal(['-T', '-q', '-c', join(bad, 'zonal.conf')]);
  t.equal(failed.code, 1);
  t.equal(failed.out, '', 'no dump of a configuration that fails');
  t.match(failed.err, `zonal: [emerg] unknown directive "bogus" in ${join(bad, 'zonal.conf')}:1\n`);
  t.match(failed.err, /test failed\n$/, 'errors are said even with -q');
});

t.test('-p: -c, pid and root against the prefix, include against the main file directory', async (t) => {
  const root = tree({
    'conf/zonal.conf': 'pid run/zonal.pid;\ninclude sites/*.conf;\n',
    'conf/sites/a.conf': 'http { server { listen 127.0.0.1:1; include locations.conf; } }\n',
    'conf/locations.conf': 'location / { root html; }\n',
  });
  // nginx: the prefix given as `dir/`, the file relative to it.
  const r = await runZonal(['-p', `${root}/`, '-c', 'conf/zonal.conf', '-T']);
  t.equal(r.code, 0, r.err);
  t.match(r.out, `# configuration file ${join(root, 'conf/locations.conf')}:`, "an included file's include is the main file's directory's");
  const missing = await runZonal(['-p', root, '-c', 'zonal.conf', '-t']);
  t.equal(missing.code, 1);
  t.match(missing.err, `open() "${join(root, 'zonal.conf')}" failed`, '-c is relative to the prefix');
});

t.test('-g: main-context directives read before the file', async (t) => {
  const root = tree({ 'zonal.conf': 'worker_processes 1;\n' + HTTP });
  const file = join(root, 'zonal.conf');
  t.equal((await runZonal(['-c', file, '-g', 'pid x.pid; daemon off;', '-t'])).code, 0);
  const dup = await runZonal(['-c', file, '-g', 'worker_processes 2;', '-t']);
  t.equal(dup.code, 1);
  t.match(dup.err, `"worker_processes" directive is duplicate in ${file}:1`, "the file's comes after the command line's");
  const unknown = await runZonal(['-c', file, '-g', 'events { bogus 1; }', '-t']);
  t.equal(unknown.code, 1);
  t.match(unknown.err, 'zonal: [emerg] unknown directive "bogus" in command line\n', 'an error of -g is "in command line"');
  const where = loadConfig(file, { globals: 'location / { }' });
  t.same(where.errors.map(formatConfigError), ['zonal: [emerg] "location" directive is not allowed here in command line']);
  const read = loadConfig(file, { globals: 'pid a.pid; worker_connections 1;' });
  t.same(read.errors.map(formatConfigError), ['zonal: [emerg] "worker_connections" directive is not allowed here in command line']);
});

t.test('-e: the error log file is created, relative to the prefix', async (t) => {
  const root = tree({ 'zonal.conf': HTTP });
  const r = await runZonal(['-p', root, '-c', 'zonal.conf', '-e', 'error.log', '-t']);
  t.equal(r.code, 0, r.err);
  t.ok(existsSync(join(root, 'error.log')));
  const stderr = await runZonal(['-p', root, '-c', 'zonal.conf', '-e', 'stderr', '-t']);
  t.equal(stderr.code, 0);
  t.notOk(existsSync(join(root, 'stderr')), '"stderr" is standard error, not a file');
});

t.test('-s: through the pid file, and its errors', async (t) => {
  const root = tree({ 'zonal.conf': HTTP });
  const file = join(root, 'zonal.conf');
  const none = await runZonal(['-c', file, '-s', 'reload']);
  t.equal(none.code, 1);
  t.match(none.err, 'no pid file to signal: the configuration has no "pid" directive');
  const absent = await runZonal(['-c', file, '-g', 'pid z.pid;', '-s', 'quit']);
  t.equal(absent.code, 1);
  t.match(absent.err, `open() "${join(root, 'z.pid')}" failed (2: `);
  writeFileSync(join(root, 'bad.pid'), 'x\n');
  const invalid = await runZonal(['-c', file, '-g', 'pid bad.pid;', '-s', 'stop']);
  t.equal(invalid.code, 1);
  t.match(invalid.err, `invalid PID number "x" in "${join(root, 'bad.pid')}"`);
  const unknown = await runZonal(['-c', file, '-s', 'restart']);
  t.equal(unknown.code, 1);
  t.match(unknown.err, 'invalid option: "-s restart"');
});

t.test('invalid options and missing values', async (t) => {
  const r = await runZonal(['-x']);
  t.equal(r.code, 2);
  t.match(r.err, 'zonal: invalid option: "x"');
  const c = await runZonal(['-c']);
  t.equal(c.code, 2);
  t.match(c.err, 'option "-c" requires file name');
});

t.test('main-context directives: accepted, refused by name', async (t) => {
  const check = async (main: string) => {
    const root = tree({ 'zonal.conf': main + '\n' + HTTP });
    const r = loadConfig(join(root, 'zonal.conf'));
    return { code: r.errors.length ? 1 : 0, err: r.errors.map((e) => formatConfigError(e) + '\n').join('').replaceAll(root, '<dir>') };
  };
  const accepted = [
    'daemon off;',
    'master_process on;',
    'worker_processes auto;',
    'events { worker_connections 1024; use epoll; multi_accept on; accept_mutex off; accept_mutex_delay 500ms; }',
    'worker_rlimit_nofile 4096;',
    'env TZ; env FOO=bar;',
    'load_module modules/ngx_stream_module.so;',
    'lock_file logs/nginx.lock;',
    'timer_resolution 100ms;',
    'worker_shutdown_timeout 10s;',
    'pcre_jit on;',
    'pid logs/nginx.pid;',
  ];
  for (const main of accepted) t.same(await check(main), { code: 0, err: '' }, main);

  const refused: Array<[string, string]> = [
    ['load_module modules/ngx_http_geoip_module.so;', 'module "modules/ngx_http_geoip_module.so" is not supported by zonal: zonal has no dynamic modules, and this module is not built in'],
    ['load_module /x/ngx_mail_module.so;', 'module "/x/ngx_mail_module.so" is not supported by zonal: zonal has no dynamic modules, and this module is not built in'],
    ['events { use kqueue; }', `invalid event type "kqueue": zonal's event loop (libuv's) uses "epoll"`],
    ['events { worker_connections 0; }', 'invalid value "0" in "worker_connections" directive'],
    ['daemon maybe;', 'invalid value "maybe" in "daemon" directive, it must be "on" or "off"'],
    ['env 1A=b;', 'invalid variable name "1A" in "env" directive'],
    ['events { } events { }', '"events" directive is duplicate'],
    ['http { worker_connections 5; }', '"worker_connections" directive is not allowed here'],
    ['thread_pool default threads=32;', 'unknown directive "thread_pool"'],
  ];
  for (const [main, message] of refused) {
    const r = await check(main);
    t.equal(r.code, 1, main);
    t.match(r.err, `zonal: [emerg] ${message} in <dir>/zonal.conf:1`, main);
  }
});

t.test('user: a warning unless root, refused as root', async (t) => {
  const root = tree({ 'zonal.conf': 'user nobody nogroup;\n' + HTTP });
  const r = await runZonal(['-t', '-c', join(root, 'zonal.conf')]);
  if (process.getuid!() === 0) {
    t.equal(r.code, 1);
    t.match(r.err, `the "user" directive is not supported when zonal runs as root: start zonal as the user "nobody" instead in ${join(root, 'zonal.conf')}:1`);
  } else {
    t.equal(r.code, 0);
    t.match(r.err, `zonal: [warn] the "user" directive makes sense only if the master process runs with super-user privileges, ignored in ${join(root, 'zonal.conf')}:1`);
  }
});

t.test('nesting 5,000 levels deep is refused with its file and line, no stack', async (t) => {
  const blocks = tree({ 'zonal.conf': 'http { server { listen 127.0.0.1:1;\n' + 'location / {\n'.repeat(5000) + '}'.repeat(5000) + '\n} }\n' });
  const deep = await runZonal(['-t', '-c', join(blocks, 'zonal.conf')]);
  t.equal(deep.code, 1);
  t.match(deep.err, `zonal: [emerg] too deep nesting of blocks and includes: more than 100 levels in ${join(blocks, 'zonal.conf')}:100\n`);
  t.notMatch(deep.err, /RangeError|    at /);

  // An include chain: a.conf includes b0.conf, which includes b1.conf...
  const files: Record<string, string> = { 'zonal.conf': 'http { include b0.conf; }\n' };
  for (let i = 0; i < 5000; i++) files[`b${i}.conf`] = `include b${i + 1}.conf;\n`;
  files['b5000.conf'] = 'server { listen 127.0.0.1:1; }\n';
  const chain = tree(files);
  const included = loadConfig(join(chain, 'zonal.conf'));
  t.same(included.errors.map(formatConfigError), [`zonal: [emerg] too deep nesting of blocks and includes: more than 100 levels in ${join(chain, 'b98.conf')}:1`]);

  const fine = tree({ 'zonal.conf': 'http { server { listen 127.0.0.1:1;\n' + 'location / {\n'.repeat(60) + '}'.repeat(60) + '\n} }\n' });
  t.same(loadConfig(join(fine, 'zonal.conf')).errors, [], '60 levels are fine');
});

t.test('a state file with more peers than its zone holds fails -t', async (t) => {
  const state = Array.from({ length: 400 }, (_, i) => `server 127.0.1.${(i % 250) + 1}:${1000 + i};`).join('\n') + '\n';
  const conf = (zone: string) => `http { upstream u { ${zone} state u.state; server 127.0.0.1:1; } server { listen 127.0.0.1:1; location / { proxy_pass http://u; } } }\n`;
  const small = tree({ 'zonal.conf': conf('zone u 64k;'), 'u.state': state });
  const r = await runZonal(['-t', '-c', join(small, 'zonal.conf')]);
  t.equal(r.code, 1);
  t.match(r.err, `zonal: [emerg] zone "u" has no room left for`);
  t.match(r.err, `the state file "${join(small, 'u.state')}" of upstream "u" has 400 peers, more than the zone's 64k hold`);
  const big = tree({ 'zonal.conf': conf('zone u 64m;'), 'u.state': state });
  const ok = await runZonal(['-t', '-c', join(big, 'zonal.conf')]);
  t.equal(ok.code, 0, ok.err);
});

t.test("checkFile(), the tests' -t without a process, says what the command says", async (t) => {
  const state = Array.from({ length: 400 }, (_, i) => `server 127.0.1.${(i % 250) + 1}:${1000 + i};`).join('\n') + '\n';
  const cases = {
    good: tree({ 'zonal.conf': 'events { }\ninclude http.conf;\n', 'http.conf': HTTP }),
    'an error': tree({ 'zonal.conf': 'events { bogus; }\n' + HTTP }),
    'user: a warning or an error': tree({ 'zonal.conf': 'user nobody nogroup;\n' + HTTP }),
    'the shared memory tried': tree({ 'zonal.conf': 'http { upstream u { zone u 64k; state u.state; server 127.0.0.1:1; } }\n', 'u.state': state }),
  };
  for (const [what, root] of Object.entries(cases)) {
    const file = join(root, 'zonal.conf');
    const command = await runZonal(['-t', '-c', file]);
    t.same(await checkFile(file), { code: command.code, err: command.err }, what);
  }
});
