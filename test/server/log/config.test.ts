// The log module's directives as nginx's documentation gives them (ngx_core_module's
// error_log, ngx_http_log_module): where each may be written, what they take, what `-t`
// refuses and names, and how the levels merge them into each location.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { formatConfigError, loadConfig } from '../../../src/server/config/load.js';
import { setDefaultAccessLog } from '../../../src/server/log/default-access-log.js';
import { checkConfig } from '../zonal.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'zonal-logconf-'));
t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));

function load(text: string) {
  const dir = fs.mkdtempSync(path.join(root, 'case-'));
  const file = path.join(dir, 'zonal.conf');
  fs.writeFileSync(file, text);
  const { config, errors } = loadConfig(file, { cpus: 2 });
  return { dir, config, errors: errors.map((e) => formatConfigError(e).replaceAll(dir, '<dir>')) };
}

const server = (inner = '') => `server { listen 127.0.0.1:9100; ${inner} }`;

t.test('error_log: a file or stderr, every level, several at once, in each context nginx allows', async (t) => {
  const ok = load(`error_log stderr;\nerror_log main.log debug;\nerror_log crit.log crit;\nhttp { error_log h.log warn; ${server('error_log s.log info; location / { error_log l.log notice; error_log l2.log emerg; }')} }\nstream { error_log st.log; server { listen 127.0.0.1:9200; error_log ss.log alert; proxy_pass 127.0.0.1:9300; } }\n`);
  t.same(ok.errors, []);
  const c = ok.config!;
  t.same(c.errorLogs, [
    { path: 'stderr', level: 'error' },
    { path: path.join(ok.dir, 'main.log'), level: 'debug' },
    { path: path.join(ok.dir, 'crit.log'), level: 'crit' },
  ], 'the main context: each with its own level, error when none is given');
  const s = c.http!.servers[0];
  t.same(s.errorLogs, [{ path: path.join(ok.dir, 's.log'), level: 'info' }], "a server's own replaces the http block's");
  t.same(s.locations[0].errorLogs, [
    { path: path.join(ok.dir, 'l.log'), level: 'notice' },
    { path: path.join(ok.dir, 'l2.log'), level: 'emerg' },
  ]);
  t.same(c.stream!.servers[0].errorLogs, [{ path: path.join(ok.dir, 'ss.log'), level: 'alert' }], 'a stream server');

  const inherit = load(`http { error_log h.log warn; ${server('location / { }')} }\nstream { error_log st.log info; server { listen 127.0.0.1:9200; proxy_pass 127.0.0.1:9300; } }\n`);
  t.same(inherit.config!.http!.servers[0].locations[0].errorLogs, [{ path: path.join(inherit.dir, 'h.log'), level: 'warn' }], 'inherited down to locations');
  t.same(inherit.config!.stream!.servers[0].errorLogs, [{ path: path.join(inherit.dir, 'st.log'), level: 'info' }], 'and to stream servers');
  t.notOk(load(`http { ${server()} }`).config!.errorLogs, 'none written: the startup log');

  t.same(load(`error_log e.log verbose;\nhttp { ${server()} }`).errors, [
    'zonal: [emerg] invalid log level "verbose" in "error_log" directive, it must be one of "emerg", "alert", "crit", "error", "warn", "notice", "info", "debug" in <dir>/zonal.conf:1',
  ]);
  t.same(load(`error_log syslog:server=127.0.0.1;\nhttp { ${server()} }`).errors, ['zonal: [emerg] syslog logging in "error_log" is not supported in <dir>/zonal.conf:1']);
  t.same(load(`error_log memory:32m debug;\nhttp { ${server()} }`).errors, ['zonal: [emerg] memory logging in "error_log" is not supported in <dir>/zonal.conf:1']);
  t.same(load(`error_log nowhere/e.log;\nhttp { ${server()} }`).errors, [
    'zonal: [emerg] cannot open "<dir>/nowhere/e.log" of the "error_log" directive: its folder does not exist in <dir>/zonal.conf:1',
  ]);
  t.same(load(`http { ${server('location / { if ($arg_a) { error_log e.log; } }')} }`).errors, ['zonal: [emerg] "error_log" directive is not allowed here in <dir>/zonal.conf:1']);
  t.same(load(`error_log a b c;\nhttp { ${server()} }`).errors, ['zonal: [emerg] invalid number of arguments in "error_log" directive in <dir>/zonal.conf:1']);
});

t.test('log_format and access_log: formats, parameters, and every variable produced or refused', async (t) => {
  const ok = load(
    `http {\n` +
      `log_format main escape=json '{"a":"$remote_addr",' '"t":"$request_time"}';\n` +
      `log_format up '$upstream_addr $upstream_status $upstream_response_time $upstream_connect_time $upstream_header_time $http_x_y $sent_http_content_type $cookie_c $arg_a';\n` +
      `access_log a.log;\n` +
      `access_log b.log main buffer=64k flush=5s if=$arg_log;\n` +
      `open_log_file_cache max=1000 inactive=20s valid=1m min_uses=2;\n` +
      `${server('access_log s.log up; location /off { access_log off; } location /if { if ($arg_x) { access_log i.log; } } location /in { }')}\n` +
      `}\n`,
  );
  t.same(ok.errors, []);
  const http = ok.config!.http!;
  const s = http.servers[0];
  t.same(s.accessLogs, [{ path: path.join(ok.dir, 's.log'), format: { name: 'up', escape: 'default', text: '$upstream_addr $upstream_status $upstream_response_time $upstream_connect_time $upstream_header_time $http_x_y $sent_http_content_type $cookie_c $arg_a' }, buffer: 0, flush: 0 }], "a server's own list replaces the http block's");
  const [off, ifLocation, inherits] = s.locations;
  t.notOk(off.accessLogs, 'access_log off: nothing is logged there');
  t.same(ifLocation.ifs![0].accessLogs!.map((l) => l.path), [path.join(ok.dir, 'i.log')], 'an if block of a location has its own');
  t.same(inherits.accessLogs!.map((l) => l.path), [path.join(ok.dir, 's.log')], 'a location inherits');

  const top = load(`http { log_format main escape=json '{"a":"$remote_addr",' '"t":"$request_time"}'; access_log a.log; access_log b.log main buffer=64k flush=5s if=$arg_log; ${server()} }`);
  t.same(top.config!.http!.servers[0].accessLogs, [
    {
      path: path.join(top.dir, 'a.log'),
      format: { name: 'combined', escape: 'default', text: '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"' },
      buffer: 0,
      flush: 0,
    },
    { path: path.join(top.dir, 'b.log'), format: { name: 'main', escape: 'json', text: '{"a":"$remote_addr","t":"$request_time"}' }, buffer: 65536, flush: 5000, condition: '$arg_log' },
  ], 'several at one level; the predefined combined; the strings of a format joined');

  const refused: Array<[string, string]> = [
    [`log_format x '$remote_addr $nosuch';`, 'unknown "nosuch" variable'],
    [`log_format x '\${remote_addr';`, 'the closing bracket in "remote_addr" variable is missing'],
    [`log_format combined '$status';`, 'duplicate "log_format" name "combined"'],
    [`log_format x escape=xml '$status';`, 'unknown log format escaping "xml"'],
    [`log_format x escape=json;`, 'invalid number of arguments in "log_format" directive'],
    [`access_log a.log nosuch;`, 'unknown log format "nosuch"'],
    [`access_log a.log combined flush=1s;`, 'no buffer is defined for access_log "a.log"'],
    [`access_log a.log combined buffer=big;`, 'invalid buffer size "big"'],
    [`access_log a.log combined buffer=2m;`, 'buffer size "2m" of "access_log" is more than 1m'],
    [`access_log a.log combined buffer=8k flush=soon;`, 'invalid flush time "soon"'],
    [`access_log a.log combined gzip;`, '"gzip" of "access_log" is not supported'],
    [`access_log a.log combined gzip=5 buffer=8k;`, '"gzip" of "access_log" is not supported'],
    [`access_log a.log combined if=$nosuch;`, 'unknown "nosuch" variable'],
    [`access_log a.log combined size=1;`, 'invalid parameter "size=1"'],
    [`access_log off combined;`, 'invalid parameter "combined"'],
    [`access_log logs/$host.log;`, 'variables in the path of "access_log" are not supported'],
    [`access_log syslog:server=127.0.0.1;`, 'syslog logging in "access_log" is not supported'],
    [`access_log nowhere/a.log;`, 'cannot open "<dir>/nowhere/a.log" of the "access_log" directive: its folder does not exist'],
    [`open_log_file_cache inactive=20s;`, '"open_log_file_cache" must have "max" parameter'],
    [`open_log_file_cache max=many;`, 'invalid "open_log_file_cache" parameter "max=many"'],
  ];
  for (const [line, message] of refused) t.same(load(`http {\n${line}\n${server()} }`).errors, [`zonal: [emerg] ${message} in <dir>/zonal.conf:2`], line);
  t.same(load(`http { access_log a.log late; log_format late '$status'; ${server()} }`).errors, ['zonal: [emerg] unknown log format "late" in <dir>/zonal.conf:1'], 'a format is known after its log_format, as in nginx');
  t.same(load(`http { ${server("log_format x '$status';")} }`).errors, ['zonal: [emerg] "log_format" directive is not allowed here in <dir>/zonal.conf:1'], 'log_format: http only');
  t.same(load(`access_log a.log;\nhttp { ${server()} }`).errors, ['zonal: [emerg] "access_log" directive is not allowed here in <dir>/zonal.conf:1']);
  t.same(load(`http { open_log_file_cache off; ${server('open_log_file_cache max=10; location / { open_log_file_cache off; }')} }`).errors, [], 'open_log_file_cache: accepted where nginx takes it');
});

t.test('zonal -t names what it refuses', async (t) => {
  const r = await checkConfig(`http { log_format x '$request $foo_bar'; server { listen 127.0.0.1:9100; } }\n`);
  t.equal(r.code, 1);
  t.match(r.err, 'zonal: [emerg] unknown "foo_bar" variable in <dir>/zonal.conf:1');
});

t.test("nginx's default access log, once the command line sets it (its -p prefix)", async (t) => {
  t.notOk(load(`http { ${server()} }`).config!.http!.servers[0].accessLogs, 'without it: none');
  setDefaultAccessLog('/prefix/logs/access.log');
  t.teardown(() => setDefaultAccessLog(undefined));
  const c = load(`http { ${server('location /own { access_log own.log; } location /off { access_log off; } location /plain { }')} }`);
  const [own, off, plain] = c.config!.http!.servers[0].locations;
  t.same(plain.accessLogs!.map((l) => [l.path, l.format.name]), [['/prefix/logs/access.log', 'combined']], 'where no access_log is written');
  t.same(own.accessLogs!.map((l) => l.path), [path.join(c.dir, 'own.log')], 'one written replaces it');
  t.notOk(off.accessLogs, 'off leaves none');
});
