// The zonal server's configuration reader: nginx syntax, includes, the directive checks
// with their exact file and line, and the resolved model (nginx's inheritance).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { formatConfigError, loadConfig } from '../../src/server/config/load.js';
import type { ConfigError, ServerConfig } from '../../src/server/config/model.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'zonal-conf-'));
t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));

/** A fresh directory with these files (relative name -> text); returns its path. */
function tree(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(root, 'case-'));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

/** Lines of a file: line N of the configuration is argument N. */
const conf = (...lines: string[]) => lines.join('\n') + '\n';

/** 1-based line of the first line holding `needle`. */
function lineOf(text: string, needle: string): number {
  const index = text.split('\n').findIndex((l) => l.includes(needle));
  if (index < 0) throw new Error(`no line with ${needle}`);
  return index + 1;
}

function load(dir: string, main = 'zonal.conf', cpus = 4): ServerConfig {
  const { config, errors } = loadConfig(path.join(dir, main), { cpus });
  if (!config) throw new Error(errors.map(formatConfigError).join('\n'));
  return config;
}

const MAIN = conf(
  '# zonal test configuration',
  'worker_processes 2;',
  '',
  'http {',
  '    root html;',
  '    allow 127.0.0.1;',
  '    deny all;',
  '    auth_basic "Private area";',
  '    auth_basic_user_file users.htpasswd;',
  '',
  '    server {',
  '        listen 8080 default_server;',
  '        listen [0:0::1]:8080;',
  '        server_name Example.COM *.example.com .example.org www.example.* "~^(?P<sub>\\w+)\\.example\\.net$" "";',
  '        status_zone site;',
  '        root site;',
  '',
  '        location / {',
  '            status_zone pages;',
  '            location /docs/ {',
  '                status_zone off;',
  '                location /docs/old/ {',
  '                    root old;',
  '                }',
  '            }',
  '            location /inner/ {',
  '                status_zone inner;',
  '                auth_basic_user_file inner.htpasswd;',
  '            }',
  '            location /plain/ {',
  '            }',
  '        }',
  '        location = /health {',
  '            return 204;',
  '        }',
  '        location ^~ /static/ {',
  '            root /srv/static;',
  '            allow 10.0.0.0/8;',
  '            allow fd00::/8;',
  '            deny all;',
  '        }',
  '        location ~* \\.(png|jpe?g)$ {',
  '            auth_basic off;',
  '        }',
  '        location /moved/ {',
  '            return 301 https://example.com/new/;',
  '            location /moved/kept/ {',
  '            }',
  '        }',
  '        location /private/ {',
  '            auth_basic "Inner realm";',
  '            auth_basic_user_file inner.htpasswd;',
  '        }',
  '    }',
  '',
  '    server {',
  '        listen 8443 ssl;',
  '        server_name secure.example.com;',
  '        ssl_certificate tls/cert.pem;',
  '        ssl_certificate_key tls/key.pem;',
  '        ssl_handshake_timeout 10s;',
  '        return https://example.com/;',
  '    }',
  '',
  '    server {',
  '        listen 127.0.0.1:9000 admin;',
  '        listen localhost:9001 admin;',
  '        location /status/ {',
  '            api /status/;',
  '            api_config_files on;',
  '            location /status/http/ {',
  '            }',
  '        }',
  '        location /config/ {',
  '            api /config/;',
  '            allow 127.0.0.1;',
  '            auth_basic off;',
  '        }',
  '    }',
  '}',
);

const SECRETS = {
  'users.htpasswd': 'u:{PLAIN}p\n',
  'inner.htpasswd': 'i:{PLAIN}p\n',
  'tls/cert.pem': 'cert\n',
  'tls/key.pem': 'key\n',
};

t.test('a full configuration resolves as nginx merges it', async (t) => {
  const dir = tree({ 'zonal.conf': MAIN, ...SECRETS });
  const file = path.join(dir, 'zonal.conf');
  const config = load(dir);
  const at = (needle: string) => ({ file, line: lineOf(MAIN, needle) });
  const abs = (p: string) => path.join(dir, p);

  const httpAccess = [
    { allow: true, address: '127.0.0.1', origin: at('allow 127.0.0.1;') },
    { allow: false, address: 'all', origin: at('deny all;') },
  ];
  const httpAuth = { realm: 'Private area', userFile: abs('users.htpasswd') };
  const inherited = { root: abs('html'), access: httpAccess, authBasic: httpAuth };
  const site = { ...inherited, root: abs('site') };
  const location = (path: string, line: string, more: object = {}) => ({
    ...site,
    modifier: '',
    path,
    apiConfigFiles: false,
    locations: [],
    origin: at(line),
    ...more,
  });
  const { authBasic: _, ...siteWithoutAuth } = site;

  t.equal(config.file, file, 'the main file, absolute');
  t.equal(config.workerProcesses, 2);
  t.same(Object.keys(config.files), [file], 'no certificate, key or htpasswd among the files');
  t.strictSame(config.http?.servers[0], {
    ...site,
    listens: [
      { host: '0.0.0.0', port: 8080, ssl: false, admin: false, defaultServer: true, origin: at('listen 8080 default_server') },
      { host: '::1', port: 8080, ssl: false, admin: false, defaultServer: false, origin: at('listen [0:0::1]:8080') },
    ],
    names: ['example.com', '*.example.com', '.example.org', 'www.example.*', '~^(?P<sub>\\w+)\\.example\\.net$', ''],
    statusZone: 'site',
    admin: false,
    locations: [
      location('/', 'location / {', {
        statusZone: 'pages',
        locations: [
          location('/docs/', 'location /docs/ {', {
            locations: [location('/docs/old/', 'location /docs/old/ {', { root: abs('old') })],
          }),
          location('/inner/', 'location /inner/ {', {
            statusZone: 'inner',
            authBasic: { realm: 'Private area', userFile: abs('inner.htpasswd') },
          }),
          location('/plain/', 'location /plain/ {', { statusZone: 'pages' }),
        ],
      }),
      location('/health', 'location = /health', { modifier: '=', return: { code: 204 } }),
      location('/static/', 'location ^~ /static/', {
        modifier: '^~',
        root: '/srv/static',
        access: [
          { allow: true, address: '10.0.0.0/8', origin: at('allow 10.0.0.0/8') },
          { allow: true, address: 'fd00::/8', origin: at('allow fd00::/8') },
          { allow: false, address: 'all', origin: at('            deny all;') },
        ],
      }),
      { ...siteWithoutAuth, modifier: '~*', path: '\\.(png|jpe?g)$', regex: /\.(png|jpe?g)$/i, apiConfigFiles: false, locations: [], origin: at('location ~*') },
      location('/moved/', 'location /moved/ {', {
        return: { code: 301, text: 'https://example.com/new/' },
        locations: [location('/moved/kept/', 'location /moved/kept/')],
      }),
      location('/private/', 'location /private/', { authBasic: { realm: 'Inner realm', userFile: abs('inner.htpasswd') } }),
    ],
    origin: { file, line: 11 },
  });
  t.strictSame(config.http?.servers[1], {
    ...inherited,
    listens: [{ host: '0.0.0.0', port: 8443, ssl: true, admin: false, defaultServer: false, origin: at('listen 8443 ssl') }],
    names: ['secure.example.com'],
    ssl: { certificate: abs('tls/cert.pem'), key: abs('tls/key.pem'), handshakeTimeout: 10_000 },
    admin: false,
    return: { code: 302, text: 'https://example.com/' },
    locations: [],
    origin: { file, line: 56 },
  });
  const adminLocation = { ...inherited, modifier: '' as const, locations: [] };
  t.strictSame(config.http?.servers[2], {
    ...inherited,
    listens: [
      { host: '127.0.0.1', port: 9000, ssl: false, admin: true, defaultServer: false, origin: at('listen 127.0.0.1:9000 admin') },
      { host: '127.0.0.1', port: 9001, ssl: false, admin: true, defaultServer: false, origin: at('listen localhost:9001 admin') },
    ],
    names: [],
    admin: true,
    locations: [
      {
        ...adminLocation,
        path: '/status/',
        api: '/status/',
        apiConfigFiles: true,
        locations: [{ ...adminLocation, path: '/status/http/', apiConfigFiles: true, origin: at('location /status/http/') }],
        origin: at('location /status/ {'),
      },
      (({ authBasic: _a, ...rest }) => ({
        ...rest,
        path: '/config/',
        api: '/config/',
        access: [{ allow: true, address: '127.0.0.1', origin: at('            allow 127.0.0.1;') }],
        apiConfigFiles: false,
        origin: at('location /config/'),
      }))(adminLocation),
    ],
    origin: { file, line: 65 },
  });
  t.equal(config.http?.servers.length, 3);
});

t.test('the settings the model promises, one by one', async (t) => {
  const dir = tree({ 'zonal.conf': MAIN, ...SECRETS });
  const [site, secure] = load(dir).http!.servers;
  const [slash, health, , image, moved, priv] = site.locations;
  t.equal(slash.locations[0].statusZone, undefined, 'status_zone off: no zone here');
  t.equal(slash.locations[0].locations[0].statusZone, undefined, '... nor in nested locations that set none');
  t.equal(slash.locations[1].statusZone, 'inner', 'a nested location may set its own');
  t.equal(slash.locations[1].authBasic?.realm, 'Private area', 'a user file added under a realm set outside');
  t.equal(slash.locations[2].statusZone, 'pages', 'a nested location takes the zone of the one around it');
  t.equal(health.statusZone, undefined, "the server's zone is not a location zone");
  t.equal(image.authBasic, undefined, 'auth_basic off');
  t.ok(image.regex?.test('/A.PNG'), '~* is caseless');
  t.equal(moved.locations[0].return, undefined, 'return is not inherited');
  t.equal(priv.authBasic?.realm, 'Inner realm');
  t.equal(secure.authBasic?.realm, 'Private area', 'auth flows from http to servers');
  t.equal(secure.root, path.join(dir, 'html'), 'root flows from http to servers');
});

t.test('quotes, escapes and comments', async (t) => {
  const text = conf(
    'http { # a comment after a brace',
    '  server {',
    '    listen 8080; # listen here',
    '    location /a {',
    '      return 200 "say \\"hi\\"\\n\\tand \\\\ \\x";',
    '    }',
    "    location '/b c' {",
    "      return 200 'it\\'s; {fine}';",
    '    }',
    '    location ~ "^/d\\d+$" {',
    '      return 200 a#b;',
    '    }',
    '    location /e {',
    '      return 200 "two',
    'lines";',
    '      api /status/${host}/$arg_zone;',
    '    }',
    '    # location /commented { }',
    '    location /f{',
    '      return 200 x\\ y;',
    '    }',
    '  }',
    '}',
  );
  const dir = tree({ 'zonal.conf': text });
  const { config, errors } = loadConfig(path.join(dir, 'zonal.conf'));
  t.same(errors.map((e) => e.message), ['"api" and "return" cannot be in the same location']);
  t.equal(errors[0]?.line, 16, 'a quoted newline still counts as a line');
  t.equal(config, undefined);

  const fixed = text.replace('      api /status/${host}/$arg_zone;\n', '');
  const [server] = load(tree({ 'zonal.conf': fixed })).http!.servers;
  const [a, b, d, e, f] = server.locations;
  t.equal(a.return?.text, 'say "hi"\n\tand \\ \\x', '\\", \\n, \\t, \\\\ replaced; another escape kept whole');
  t.equal(b.path, '/b c', 'single quotes keep spaces');
  t.equal(b.return?.text, "it's; {fine}", "\\' and ; { } inside quotes");
  t.equal(d.path, '^/d\\d+$', 'a regex escape reaches the regex');
  t.ok(d.regex?.test('/d42'));
  t.equal(d.return?.text, 'a#b', '# inside a word is not a comment');
  t.equal(e.return?.text, 'two\nlines');
  t.equal(f.path, '/f', '{ ends an unquoted word');
  t.equal(f.return?.text, 'x\\ y', 'a backslash keeps a space in the word');
  t.equal(server.locations.length, 5, 'the commented location is not read');
  t.equal(f.origin.line, 18, 'lines count across the quoted newline');
});

t.test('${name} is one word, and api variables', async (t) => {
  const dir = tree({
    'zonal.conf': conf(
      'http {',
      '  server {',
      '    listen 8080;',
      '    location ~ ^/zone/(\\w+)$ { api /status/http/server_zones/${1}/$arg_x/$host/$1; }',
      '    location /u/ { api $uri; }',
      '  }',
      '}',
    ),
  });
  const [server] = load(dir).http!.servers;
  t.equal(server.locations[0].api, '/status/http/server_zones/${1}/$arg_x/$host/$1');
  t.equal(server.locations[1].api, '$uri', 'a path may start with a variable');
});

t.test('include: globs relative to the including file, sorted, any context', async (t) => {
  const dir = tree({
    'zonal.conf': conf('include main.d/workers.conf;', 'http {', '  include sites/*.conf;', '  include nothing/*.conf;', '}'),
    'main.d/workers.conf': conf('worker_processes auto;'),
    'sites/b.conf': conf('server {', '  listen 8082;', '  include ../loc/[ab]*.conf;', '}'),
    'sites/a.conf': conf('server {', '  listen 8081;', '}'),
    'sites/.hidden.conf': conf('this is not read;'),
    'sites/c.txt': conf('nor this;'),
    'loc/b2.conf': conf('location /b2/ { }'),
    'loc/a1.conf': conf('location /a1/ {', '  include ../deeper/?.conf;', '}'),
    'loc/c.conf': conf('location /c/ { }'),
    'deeper/x.conf': conf('root deep;'),
  });
  const abs = (p: string) => path.join(dir, p);
  const config = load(dir, 'zonal.conf', 3);
  t.equal(config.workerProcesses, 3, 'include in the main context; auto is the CPUs');
  t.same(
    Object.keys(config.files),
    ['zonal.conf', 'main.d/workers.conf', 'sites/a.conf', 'sites/b.conf', 'loc/a1.conf', 'deeper/x.conf', 'loc/b2.conf'].map(abs),
    'every file read, in reading order; hidden files and other names not matched',
  );
  t.equal(config.files[abs('sites/b.conf')], conf('server {', '  listen 8082;', '  include ../loc/[ab]*.conf;', '}'));
  const [a, b] = config.http!.servers;
  t.same([a.listens[0].port, b.listens[0].port], [8081, 8082], 'sorted by name');
  t.same(b.locations.map((l) => l.path), ['/a1/', '/b2/']);
  t.equal(b.locations[0].root, abs('deeper/deep'), 'a path is relative to the file it is written in');
  t.same(b.locations[0].origin, { file: abs('loc/a1.conf'), line: 1 }, 'origins name the included file');
  t.same(b.listens[0].origin, { file: abs('sites/b.conf'), line: 2 });
});

t.test('a glob over several directories sorts whole paths, as glob(3)', async (t) => {
  const dir = tree({
    'zonal.conf': conf('http {', '  include v*/*.conf;', '}'),
    'v/s.conf': conf('server { listen 1; }'),
    'v-2/s.conf': conf('server { listen 2; }'),
    'v/a/s.conf': conf('server { listen 3; }'),
  });
  const config = load(dir);
  t.same(config.http?.servers.map((s) => s.listens[0].port), [2, 1], '"v-2/" sorts before "v/": "-" is before "/"; no match deeper than the pattern');
});

t.test('the files snapshot reproduces the configuration without the disk', async (t) => {
  const dir = tree({
    'zonal.conf': MAIN.replace('    server {', '    include extra/*.conf;\n    server {'),
    'extra/one.conf': conf('server {', '  listen 8090;', '  location / { root one; }', '}'),
    ...SECRETS,
  });
  const fromDisk = load(dir);
  fs.rmSync(dir, { recursive: true });
  const again = loadConfig(path.join(dir, 'zonal.conf'), { files: fromDisk.files, cpus: 4 });
  t.same(again.errors, []);
  t.strictSame(again.config, fromDisk, 'deep equal, with the directory gone');
  t.equal(again.config?.http?.servers.length, 4);

  const snapshot = {
    '/nowhere/zonal.conf': conf('worker_processes auto;', 'http {', '  include /nowhere/s/*.conf;', '}'),
    '/nowhere/s/2.conf': conf('server { listen 2; auth_basic x; auth_basic_user_file /no/such/file; }'),
    '/nowhere/s/1.conf': conf('server { listen 1; ssl_certificate /no/c; }'),
    '/nowhere/s/sub/3.conf': conf('server { listen 3; }'),
  };
  const fromSnapshot = loadConfig('/nowhere/zonal.conf', { files: snapshot, cpus: 7 });
  t.same(fromSnapshot.errors, [], 'files named by directives are not checked without the disk');
  t.equal(fromSnapshot.config?.workerProcesses, 7);
  t.same(fromSnapshot.config?.http?.servers.map((s) => s.listens[0].port), [1, 2], 'the glob matches keys, one component deep, sorted');
  t.same(Object.keys(fromSnapshot.config!.files), ['/nowhere/zonal.conf', '/nowhere/s/1.conf', '/nowhere/s/2.conf']);
  const missing = loadConfig('/nowhere/other.conf', { files: snapshot });
  t.same(missing.errors, [{ file: '/nowhere/other.conf', line: 0, message: 'open() "/nowhere/other.conf" failed (2: no such file or directory)' }]);
});

t.test('worker_processes defaults to 1; no http block is no http', async (t) => {
  const config = load(tree({ 'zonal.conf': conf('# nothing') }));
  t.equal(config.workerProcesses, 1);
  t.equal(config.http, undefined);
  t.equal(load(tree({ 'zonal.conf': conf('worker_processes 128;') })).workerProcesses, 128);
});

interface ErrorCase {
  readonly name: string;
  readonly text: string;
  /** Other files of the case (relative name -> text). */
  readonly files?: Record<string, string>;
  /** The file the error names, relative; the main file by default. */
  readonly file?: string;
  readonly line: number;
  readonly message: RegExp;
}

/** A server that is valid by itself; lines of `body` start at line 4. */
const server = (...body: string[]) => conf('http {', '  server {', '    listen 8080;', ...body, '  }', '}');
const CERTS = { 'c.pem': 'c', 'k.pem': 'k' };

const errorCases: ErrorCase[] = [
  // syntax
  { name: 'end of file in a block', text: conf('http {', '  server {', '    listen 80;', '  }'), line: 4, message: /^unexpected end of file, expecting "}"$/ },
  { name: 'end of file in a directive', text: conf('http {', '}', 'worker_processes 1'), line: 3, message: /^unexpected end of file, expecting ";" or "}"$/ },
  { name: 'a } too many', text: conf('http {', '}', '}'), line: 3, message: /^unexpected "}"$/ },
  { name: 'a } before ;', text: conf('http {', '  root /x }'), line: 2, message: /^unexpected "}"$/ },
  { name: 'unterminated quote, at its opening line', text: conf('http {', '  root "abc;', '}', '# more'), line: 2, message: /^unterminated quoted string, opened with "$/ },
  { name: 'unterminated single quote', text: conf('http {', "  root 'abc;"), line: 2, message: /^unterminated quoted string, opened with '$/ },
  { name: 'a lone ;', text: conf('http {', '  ;', '}'), line: 2, message: /^unexpected ";"$/ },
  { name: 'a lone {', text: conf('{', '}'), line: 1, message: /^unexpected "{"$/ },
  { name: 'a word glued to a quote', text: conf('http {', '  root "a"b;', '}'), line: 2, message: /^unexpected "b"$/ },
  { name: 'syntax error in an included file', text: conf('http {', '  include bad.conf;', '}'), files: { 'bad.conf': conf('server {', '  listen 80', '}') }, file: 'bad.conf', line: 3, message: /^unexpected "}"$/ },
  // includes
  { name: 'include of a missing file', text: conf('http {', '  include missing.conf;', '}'), line: 2, message: /^open\(\) ".*\/missing\.conf" failed \(2: no such file or directory\)$/ },
  { name: 'include cycle', text: conf('include a.conf;'), files: { 'a.conf': conf('# a', 'include zonal.conf;') }, file: 'a.conf', line: 2, message: /^include cycle: ".*\/zonal\.conf" -> ".*\/a\.conf" -> ".*\/zonal\.conf"$/ },
  { name: 'include with two files', text: conf('include a.conf b.conf;'), line: 1, message: /^invalid number of arguments in "include" directive$/ },
  // generic directive checks
  { name: 'unknown directive', text: conf('foo bar;'), line: 1, message: /^unknown directive "foo"$/ },
  { name: 'unknown directive in a location', text: server('    location / {', '      proxy_pas http://x;', '    }'), line: 5, message: /^unknown directive "proxy_pas"$/ },
  { name: 'listen in main', text: conf('listen 8080;'), line: 1, message: /^"listen" directive is not allowed here$/ },
  { name: 'api in a server', text: server('    api /status/;'), line: 4, message: /^"api" directive is not allowed here$/ },
  { name: 'server outside http', text: conf('# x', 'server {', '  listen 80;', '}'), line: 2, message: /^"server" directive is not allowed here$/ },
  { name: 'location in http', text: conf('http {', '  location / {', '  }', '}'), line: 2, message: /^"location" directive is not allowed here$/ },
  { name: 'too many arguments', text: conf('worker_processes 1 2;'), line: 1, message: /^invalid number of arguments in "worker_processes" directive$/ },
  { name: 'too few arguments', text: server('    root;'), line: 4, message: /^invalid number of arguments in "root" directive$/ },
  { name: 'location with 3 arguments', text: server('    location = /a /b {', '    }'), line: 4, message: /^invalid number of arguments in "location" directive$/ },
  { name: 'http without a block', text: conf('http;'), line: 1, message: /^directive "http" has no opening "{"$/ },
  { name: 'root with a block', text: server('    root /x {', '    }'), line: 4, message: /^directive "root" is not terminated by ";"$/ },
  { name: 'http twice', text: conf('http {', '}', 'http {', '}'), line: 3, message: /^"http" directive is duplicate$/ },
  { name: 'root twice', text: server('    root a;', '    root b;'), line: 5, message: /^"root" directive is duplicate$/ },
  { name: 'return twice', text: server('    location / {', '      return 200;', '      return 204;', '    }'), line: 6, message: /^"return" directive is duplicate$/ },
  // values
  { name: 'worker_processes 0', text: conf('worker_processes 0;'), line: 1, message: /^invalid value "0" in "worker_processes" directive/ },
  { name: 'worker_processes 129', text: conf('', 'worker_processes 129;'), line: 2, message: /^invalid value "129" in "worker_processes" directive/ },
  { name: 'worker_processes many', text: conf('worker_processes many;'), line: 1, message: /^invalid value "many" in "worker_processes" directive/ },
  { name: 'listen port 0', text: server('    listen 127.0.0.1:0;'), line: 4, message: /^invalid port in "127\.0\.0\.1:0" of the "listen" directive$/ },
  { name: 'listen port 65536', text: server('    listen 65536;'), line: 4, message: /^invalid port in "65536" of the "listen" directive$/ },
  { name: 'listen on a host name', text: server('    listen example.org:80;'), line: 4, message: /^invalid host in "example\.org:80" of the "listen" directive$/ },
  { name: 'listen on a bad IPv6', text: server('    listen [zz]:80;'), line: 4, message: /^invalid IPv6 address in "\[zz\]:80" of the "listen" directive$/ },
  { name: 'listen on a unix socket', text: server('    listen unix:/tmp/s;'), line: 4, message: /^unix domain sockets are not supported/ },
  { name: 'listen parameter', text: server('    listen 8081 http2;'), line: 4, message: /^invalid parameter "http2"$/ },
  { name: 'server_name regex', text: server('    server_name "~^(a";'), line: 4, message: /^invalid regular expression "\^\(a" in "server_name" directive/ },
  { name: 'server_name wildcard', text: server('    server_name ex*ample.com;'), line: 4, message: /^invalid server name or wildcard "ex\*ample\.com"$/ },
  { name: 'status_zone off in a server', text: server('    status_zone off;'), line: 4, message: /^"status_zone off" is allowed only in a location$/ },
  { name: 'status_zone name', text: server('    location / {', '      status_zone a/b;', '    }'), line: 5, message: /^invalid zone name "a\/b" in "status_zone" directive/ },
  { name: 'return code', text: server('    return abc;'), line: 4, message: /^invalid return code "abc"$/ },
  { name: 'return code 1000', text: server('    return 1000 x;'), line: 4, message: /^invalid return code "1000"$/ },
  { name: 'api path', text: server('    location /s/ {', '      api status;', '    }'), line: 5, message: /^invalid API path "status" in "api" directive/ },
  { name: 'api variable', text: server('    location /s/ {', '      api /status/$foo;', '    }'), line: 5, message: /^unknown "foo" variable in "api" directive$/ },
  { name: 'api ${} variable', text: server('    location /s/ {', '      api /status/${request_uri};', '    }'), line: 5, message: /^unknown "request_uri" variable/ },
  { name: 'api unclosed ${', text: server('    location /s/ {', '      api /status/${host;', '    }'), line: 5, message: /^the closing bracket in "host" variable is missing/ },
  { name: 'api_config_files value', text: server('    location /s/ {', '      api_config_files yes;', '    }'), line: 5, message: /^invalid value "yes" in "api_config_files" directive, it must be "on" or "off"$/ },
  { name: 'allow unix:', text: server('    allow unix:;'), line: 4, message: /^"unix:" addresses are not supported in "allow" directive$/ },
  { name: 'allow /33', text: server('    allow 10.0.0.0/33;'), line: 4, message: /^invalid parameter "10\.0\.0\.0\/33" in "allow" directive$/ },
  { name: 'deny a name', text: server('    deny example.com;'), line: 4, message: /^invalid parameter "example\.com" in "deny" directive$/ },
  { name: 'deny IPv6 /129', text: server('    deny ::1/129;'), line: 4, message: /^invalid parameter "::1\/129" in "deny" directive$/ },
  { name: 'invalid location modifier', text: server('    location ~~ /x {', '    }'), line: 4, message: /^invalid location modifier "~~"$/ },
  { name: 'invalid location regex', text: server('    location ~ "(" {', '    }'), line: 4, message: /^invalid regular expression "\(" in "location" directive/ },
  { name: 'bad ssl_handshake_timeout', text: server('    ssl_handshake_timeout soon;'), line: 4, message: /^invalid value "soon" in "ssl_handshake_timeout" directive$/ },
  { name: 'zero ssl_handshake_timeout', text: server('    ssl_handshake_timeout 0;'), line: 4, message: /^invalid value "0" in "ssl_handshake_timeout" directive$/ },
  { name: 'named location', text: server('    location @fallback {', '    }'), line: 4, message: /^named location "@fallback" is not supported$/ },
  // semantics
  { name: 'auth_basic without a user file', text: conf('http {', '  auth_basic "x";', '  server {', '    listen 80;', '    location / { }', '  }', '}'), line: 2, message: /^"auth_basic" has no "auth_basic_user_file" where it applies$/ },
  { name: 'api and return', text: server('    location /s/ {', '      return 200;', '      api /status/;', '    }'), line: 6, message: /^"api" and "return" cannot be in the same location$/ },
  { name: 'location inside an exact location', text: server('    location = /a {', '      location /a/b {', '      }', '    }'), line: 5, message: /^location "\/a\/b" cannot be inside the exact location "\/a"$/ },
  { name: 'nested location outside its parent', text: server('    location /a/ {', '      location /b/ {', '      }', '    }'), line: 5, message: /^location "\/b\/" is outside location "\/a\/"$/ },
  { name: 'duplicate location', text: server('    location /a/ {', '    }', '    location ^~ /a/ {', '    }'), line: 6, message: /^duplicate location "\/a\/"$/ },
  { name: 'admin server with a plain listen', text: conf('http {', '  server {', '    listen 9000 admin;', '    listen 9001;', '  }', '}'), line: 4, message: /^all listens of an admin server must be "admin": "0\.0\.0\.0:9001" is not$/ },
  { name: 'ssl on an admin listen', text: conf('http {', '  server {', '    listen 9000 admin ssl;', '  }', '}'), line: 3, message: /^the "ssl" parameter is not allowed on an admin listen$/ },
  { name: 'root in an admin location', text: conf('http {', '  server {', '    listen 9000 admin;', '    location / {', '      root /x;', '    }', '  }', '}'), line: 5, message: /^"root" directive is not allowed in an admin server$/ },
  { name: 'status_zone in an admin server', text: conf('http {', '  server {', '    status_zone z;', '    listen 9000 admin;', '  }', '}'), line: 3, message: /^"status_zone" directive is not allowed in an admin server$/ },
  { name: 'ssl without a certificate', text: conf('http {', '  server {', '    listen 8443 ssl;', '  }', '}'), line: 3, message: /^no "ssl_certificate" is defined for the "listen \.\.\. ssl" directive$/ },
  { name: 'ssl without a key', text: conf('http {', '  server {', '    listen 8443 ssl;', '    ssl_certificate c.pem;', '  }', '}'), files: CERTS, line: 3, message: /^no "ssl_certificate_key" is defined for certificate ".*\/c\.pem"$/ },
  { name: 'certificate file missing', text: server('    ssl_certificate missing.pem;'), line: 4, message: /^cannot read ".*\/missing\.pem" of the "ssl_certificate" directive \(ENOENT\)$/ },
  { name: 'certificate key is a directory', text: server('    ssl_certificate_key tls;'), files: { 'tls/k.pem': 'k' }, line: 4, message: /^".*\/tls" of the "ssl_certificate_key" directive is not a file$/ },
  { name: 'user file missing', text: server('    auth_basic_user_file nope;'), line: 4, message: /^cannot read ".*\/nope" of the "auth_basic_user_file" directive \(ENOENT\)$/ },
  { name: 'server without listen', text: conf('http {', '  server {', '    server_name a;', '  }', '}'), line: 2, message: /^no "listen" directive in server$/ },
  { name: 'duplicate default server', text: conf('http {', '  server {', '    listen 80 default_server;', '  }', '  server {', '    listen *:80 default_server;', '  }', '}'), line: 6, message: /^a duplicate default server for 0\.0\.0\.0:80$/ },
  { name: 'duplicate listen in a server', text: server('    listen 0.0.0.0:8080;'), line: 4, message: /^a duplicate listen 0\.0\.0\.0:8080$/ },
  { name: 'ssl and not ssl on one address', text: conf('http {', '  server {', '    listen 8443 ssl;', '    ssl_certificate c.pem;', '    ssl_certificate_key k.pem;', '  }', '  server {', '    listen 8443;', '  }', '}'), files: CERTS, line: 8, message: /^conflicting "ssl" parameter for 0\.0\.0\.0:8443/ },
  { name: 'admin and not admin on one address', text: conf('http {', '  server {', '    listen [::1]:9000 admin;', '  }', '  server {', '    listen [::1]:9000;', '  }', '}'), line: 6, message: /^conflicting "admin" parameter for \[::1\]:9000: \[::1\]:9000 is admin$/ },
  { name: 'admin port under a wildcard', text: conf('http {', '  server {', '    listen 127.0.0.1:9000 admin;', '  }', '  server {', '    listen 9000;', '  }', '}'), line: 6, message: /^conflicting "admin" parameter for 0\.0\.0\.0:9000: 127\.0\.0\.1:9000 is admin$/ },
];

t.test('each error, with its file and line', async (t) => {
  for (const c of errorCases) {
    const dir = tree({ 'zonal.conf': c.text, ...c.files });
    const { config, errors } = loadConfig(path.join(dir, 'zonal.conf'));
    t.equal(config, undefined, `${c.name}: no configuration`);
    t.equal(errors.length, 1, `${c.name}: one error, not a cascade`, { errors });
    t.match(errors[0]?.message, c.message, `${c.name}: message`);
    t.same({ file: errors[0]?.file, line: errors[0]?.line }, { file: path.join(dir, c.file ?? 'zonal.conf'), line: c.line }, `${c.name}: file and line`);
  }
});

t.test('a missing main file has no line', async (t) => {
  const file = path.join(root, 'absent.conf');
  const { errors } = loadConfig(file);
  t.same(errors, [{ file, line: 0, message: `open() "${file}" failed (2: no such file or directory)` }]);
  t.equal(formatConfigError(errors[0]), `zonal: [emerg] open() "${file}" failed (2: no such file or directory)`);
});

t.test('several errors are reported together, in order', async (t) => {
  const dir = tree({
    'zonal.conf': conf(
      'worker_processes none;',
      'http {',
      '  include servers.conf;',
      '  server {',
      '    listen 8080;',
      '    location / {',
      '      bogus on;',
      '      allow 300.1.1.1;',
      '    }',
      '  }',
      '}',
    ),
    'servers.conf': conf('server {', '  listen 8081;', '  location /a/ { status_zone a b; }', '  auth_basic "r";', '}'),
  });
  const main = path.join(dir, 'zonal.conf');
  const included = path.join(dir, 'servers.conf');
  const { config, errors } = loadConfig(main);
  t.equal(config, undefined);
  t.same(
    errors.map((e: ConfigError) => [path.basename(e.file), e.line, e.message]),
    [
      ['zonal.conf', 1, 'invalid value "none" in "worker_processes" directive, it must be "auto" or a number from 1 to 128'],
      ['servers.conf', 3, 'invalid number of arguments in "status_zone" directive'],
      ['zonal.conf', 7, 'unknown directive "bogus"'],
      ['zonal.conf', 8, 'invalid parameter "300.1.1.1" in "allow" directive'],
      ['servers.conf', 4, '"auth_basic" has no "auth_basic_user_file" where it applies'],
    ],
  );
  t.equal(errors[1].file, included);
  t.equal(errors[2].file, main);

  const two = tree({
    'zonal.conf': conf('http {', '  include a.conf;', '  include b.conf;', '}'),
    'a.conf': conf('server {'),
    'b.conf': conf('', 'server }'),
  });
  t.same(
    loadConfig(path.join(two, 'zonal.conf')).errors.map((e) => [path.basename(e.file), e.line, e.message]),
    [
      ['a.conf', 1, 'unexpected end of file, expecting "}"'],
      ['b.conf', 2, 'unexpected "}"'],
    ],
    'a syntax error stops its file only',
  );
});

t.test('formatConfigError speaks like nginx', async (t) => {
  t.equal(
    formatConfigError({ file: '/abs/path/zonal.conf', line: 12, message: 'unknown directive "foo"' }),
    'zonal: [emerg] unknown directive "foo" in /abs/path/zonal.conf:12',
  );
  const dir = tree({ 'zonal.conf': conf('', 'foo;') });
  const { errors } = loadConfig(path.join(dir, 'zonal.conf'));
  t.same(errors.map(formatConfigError), [`zonal: [emerg] unknown directive "foo" in ${path.join(dir, 'zonal.conf')}:2`]);
});

t.test('relative main file and listen forms', async (t) => {
  const dir = tree({
    'zonal.conf': conf(
      'http {',
      '  server {',
      '    listen 127.0.0.1;',
      '    listen *:81;',
      '    listen [::]:82;',
      '    listen localhost:83;',
      '  }',
      '}',
    ),
  });
  const relative = path.relative(process.cwd(), path.join(dir, 'zonal.conf'));
  const { config } = loadConfig(relative);
  t.equal(config?.file, path.join(dir, 'zonal.conf'), 'the main file is made absolute');
  t.same(
    config?.http?.servers[0].listens.map((l) => `${l.host} ${l.port}`),
    ['127.0.0.1 80', '0.0.0.0 81', ':: 82', '127.0.0.1 83'],
    'a bare address is port 80, as nginx',
  );
});
