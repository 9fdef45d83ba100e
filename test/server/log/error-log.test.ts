// The error log in one process (what the primary and workers use), and a stream server's
// own `error_log` in a running bin/zonal: nginx's line, each log's level, the startup log
// the command line sets (`-e`), and a session refused by limit_conn logged where its
// server says.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ErrorLog, errorLine, errorLogOf, mainErrorLog, setStartupErrorLog, STARTUP_LOG_ENV, useMainErrorLogs } from '../../../src/server/log/error-log.js';
import { eventually, freePorts } from '../zonal.js';
import { Logged } from './logged.js';

const dir = mkdtempSync(join(tmpdir(), 'zonal-errorlog-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const read = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), 'utf8') : '');

t.test("nginx's line: date, time, [level], pid#0, *connection, message", async (t) => {
  t.match(errorLine('warn', 'something'), new RegExp(`^\\d{4}/\\d\\d/\\d\\d \\d\\d:\\d\\d:\\d\\d \\[warn\\] ${process.pid}#0: something\\n$`));
  t.match(errorLine('error', 'refused', 7), new RegExp(`\\[error\\] ${process.pid}#0: \\*7 refused\\n$`));
});

t.test('each log takes its level and the more severe ones', async (t) => {
  const log = new ErrorLog([
    { path: join(dir, 'warn.log'), level: 'warn' },
    { path: join(dir, 'debug.log'), level: 'debug' },
    { path: join(dir, 'emerg.log'), level: 'emerg' },
  ]);
  t.ok(log.enabled('debug'));
  for (const level of ['debug', 'info', 'notice', 'warn', 'error', 'crit', 'alert', 'emerg'] as const) log.log(level, `at ${level}`);
  await eventually(async () => read('debug.log').split('\n').length > 8 && read('warn.log').split('\n').length > 5 && read('emerg.log') !== '', 5000);
  const levels = (name: string) => [...read(name).matchAll(/\[(\w+)\] \d+#0: at (\w+)/g)].map((m) => (t.equal(m[1], m[2]), m[1]));
  t.same(levels('debug.log'), ['debug', 'info', 'notice', 'warn', 'error', 'crit', 'alert', 'emerg']);
  t.same(levels('warn.log'), ['warn', 'error', 'crit', 'alert', 'emerg']);
  t.same(levels('emerg.log'), ['emerg']);
  const quiet = new ErrorLog([{ path: join(dir, 'quiet.log'), level: 'crit' }]);
  t.notOk(quiet.enabled('error'), 'below every level: not even formatted');
});

t.test('the startup log (-e) and the main context\'s logs', async (t) => {
  t.teardown(() => {
    setStartupErrorLog('stderr', 'notice');
    delete process.env[STARTUP_LOG_ENV];
    useMainErrorLogs(undefined);
  });
  setStartupErrorLog(join(dir, 'startup.log'));
  t.equal(process.env[STARTUP_LOG_ENV], `error ${join(dir, 'startup.log')}`, 'the workers forked from now on inherit it');
  mainErrorLog().log('notice', 'below error: not written');
  mainErrorLog().log('error', 'at startup');
  t.equal(errorLogOf(undefined), mainErrorLog(), 'a place without error_log uses the main log');
  useMainErrorLogs([{ path: join(dir, 'main.log'), level: 'info' }]);
  mainErrorLog().log('info', 'configured');
  useMainErrorLogs(undefined);
  mainErrorLog().log('crit', 'back to the startup log');
  await eventually(async () => read('startup.log').includes('back to the startup log') && read('main.log').includes('configured'), 5000);
  t.match(read('startup.log'), /\[error\] \d+#0: at startup\n.*\[crit\] \d+#0: back to the startup log\n$/s, "-e's log at nginx's level, error");
  t.notOk(read('startup.log').includes('below error'));
  t.notOk(read('startup.log').includes('configured'), "the configuration's error_log replaces it while in force");
});

t.test("a stream server's error_log has its limit_conn refusals; its access_log a line per session", async (t) => {
  const [port, backendPort] = await freePorts(2);
  const held: Socket[] = [];
  const backend = createServer((s) => {
    held.push(s.on('error', () => {}));
    s.on('data', () => s.write('pong'));
  });
  await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', resolve));
  t.teardown(() => {
    held.forEach((s) => s.destroy());
    return new Promise<void>((resolve) => backend.close(() => resolve()));
  });
  const zonal = await Logged.start(`error_log stderr notice;
stream {
  error_log stream.log warn;
  log_format st '$remote_addr $protocol $status $bytes_received $bytes_sent $session_time $upstream_addr $upstream_bytes_sent $upstream_bytes_received $upstream_connect_time $connection';
  access_log stream-access.log st;
  limit_conn_zone $binary_remote_addr zone=one:64k;
  server { listen 127.0.0.1:${port}; error_log server.log info; limit_conn one 1; proxy_pass 127.0.0.1:${backendPort}; }
}
`);
  t.teardown(() => zonal.stop());
  const first = connect(port, '127.0.0.1');
  first.on('error', () => {});
  t.teardown(() => first.destroy());
  await new Promise<void>((resolve) => first.once('connect', resolve));
  // The first session holds the limit once it reaches the backend.
  t.ok(await eventually(async () => held.length === 1, 5000), 'the first session is proxied');
  const second = connect(port, '127.0.0.1');
  second.on('error', () => {});
  await new Promise<void>((resolve) => second.once('close', () => resolve()));
  const file = join(zonal.dir, 'server.log');
  t.ok(await eventually(async () => existsSync(file) && readFileSync(file, 'utf8').includes('limiting connections'), 5000));
  t.match(readFileSync(file, 'utf8'), /^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d \[error\] \d+#0: limiting connections by zone "one", client: 127\.0\.0\.1, server: 127\.0\.0\.1:\d+\n$/);
  t.notOk(existsSync(join(zonal.dir, 'stream.log')) && readFileSync(join(zonal.dir, 'stream.log'), 'utf8').includes('limiting'), "the server's own replaces the block's");

  // The first session: 4 bytes each way, then the client closes.
  first.write('ping');
  await new Promise<void>((resolve) => first.once('data', () => resolve()));
  first.end();
  const access = join(zonal.dir, 'stream-access.log');
  const lines = () => (existsSync(access) ? readFileSync(access, 'utf8').split('\n').filter((l) => l) : []);
  t.ok(await eventually(async () => lines().length === 2, 5000), 'a line for each session, the refused one too');
  const [refused, proxied] = lines().map((l) => l.split(' '));
  t.same(refused.slice(0, 7), ['127.0.0.1', 'TCP', '503', '0', '0', refused[5], '-'], 'refused by limit_conn: 503, no peer');
  t.match(refused[5], /^\d+\.\d{3}$/, '$session_time');
  t.same(proxied.slice(0, 5), ['127.0.0.1', 'TCP', '200', '4', '4'], 'proxied: 200, the bytes both ways');
  t.equal(proxied[6], `127.0.0.1:${backendPort}`, '$upstream_addr');
  t.same(proxied.slice(7, 9), ['4', '4'], '$upstream_bytes_sent and _received');
  t.match(proxied[9], /^\d+\.\d{3}$/, '$upstream_connect_time');
  t.not(proxied[10], refused[10], 'two connections, two numbers');
});

t.test('stream log_format and access_log: what -t refuses', async (t) => {
  const { loadConfig, formatConfigError } = await import('../../../src/server/config/load.js');
  const load = (text: string) => {
    const file = join(dir, 'stream.conf');
    writeFileSync(file, text);
    return loadConfig(file, { cpus: 1 }).errors.map((e) => formatConfigError(e).replaceAll(dir, '<dir>'));
  };
  const server = 'server { listen 127.0.0.1:9200; proxy_pass 127.0.0.1:9300; }';
  t.same(load(`stream { log_format s '$remote_addr $request'; ${server} }`), ['zonal: [emerg] unknown "request" variable in <dir>/stream.conf:1'], 'an http variable is no stream one');
  t.same(load(`stream { access_log a.log; ${server} }`), ['zonal: [emerg] invalid number of arguments in "access_log" directive in <dir>/stream.conf:1'], 'no predefined format in stream');
  t.same(load(`stream { access_log a.log combined; ${server} }`), ['zonal: [emerg] unknown log format "combined" in <dir>/stream.conf:1']);
  t.same(load(`http { log_format h '$status'; } stream { access_log a.log h; ${server} }`), ['zonal: [emerg] unknown log format "h" in <dir>/stream.conf:1'], "http's formats are not the stream's");
  t.same(load(`stream { log_format s '$status'; access_log a.log s; server { listen 127.0.0.1:9200; access_log off; proxy_pass 127.0.0.1:9300; } }`), [], 'access_log off in a stream server');
});
