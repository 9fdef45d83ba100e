// The zonal server's configuration reader: nginx syntax, includes, the directive checks
// with their exact file and line, and the resolved model (nginx's inheritance).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { formatConfigError, loadConfig } from '../../src/server/config/load.js';
import type { ConfigError, ServerConfig } from '../../src/server/config/model.js';
import { TLS_DEFAULTS } from '../../src/server/ssl/config.js';

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
    // The ssl module's settings not written are nginx's defaults.
    ssl: { certificate: abs('tls/cert.pem'), key: abs('tls/key.pem'), handshakeTimeout: 10_000, ...TLS_DEFAULTS },
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

t.test("include: globs relative to the main file's directory (nginx's conf prefix), sorted, any context", async (t) => {
  const dir = tree({
    'zonal.conf': conf('include main.d/workers.conf;', 'http {', '  include sites/*.conf;', '  include nothing/*.conf;', '}'),
    'main.d/workers.conf': conf('worker_processes auto;'),
    'sites/b.conf': conf('server {', '  listen 8082;', '  include loc/[ab]*.conf;', '}'),
    'sites/a.conf': conf('server {', '  listen 8081;', '}'),
    'sites/.hidden.conf': conf('this is not read;'),
    'sites/c.txt': conf('nor this;'),
    'loc/b2.conf': conf('location /b2/ { }'),
    'loc/a1.conf': conf('location /a1/ {', '  include deeper/?.conf;', '}'),
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
  t.equal(config.files[abs('sites/b.conf')], conf('server {', '  listen 8082;', '  include loc/[ab]*.conf;', '}'));
  const [a, b] = config.http!.servers;
  t.same([a.listens[0].port, b.listens[0].port], [8081, 8082], 'sorted by name');
  t.same(b.locations.map((l) => l.path), ['/a1/', '/b2/']);
  t.equal(b.locations[0].root, abs('deep'), "root is relative to the prefix, the main file's directory by default, whichever file it is written in");
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

const PROXIED = conf(
  'http {',
  '    proxy_connect_timeout 5s;',
  '    proxy_set_header X-Real-IP $remote_addr;',
  '    proxy_next_upstream error timeout http_502 http_503 http_504;',
  '',
  '    upstream backend {',
  '        zone backend_zone 256k;',
  '        server 127.0.0.1:8081 weight=3 max_conns=100 max_fails=2 fail_timeout=30s slow_start=1500ms sid=a1;',
  '        server [0::1]:8082 backup;',
  '        server localhost down max_fails=0 fail_timeout=1m;',
  '        least_conn;',
  '        keepalive 16;',
  '        queue 50 timeout=5s;',
  '        response_time_factor 50;',
  '    }',
  '    upstream hashed {',
  '        hash $request_uri${cookie_sid}$arg_x$http_x_user$remote_addr$host$uri consistent;',
  '        include peers.conf;',
  '        zone hashed_zone;',
  '    }',
  '    upstream picked { random two least_conn; server 10.0.0.2:81; }',
  '    upstream sticky { ip_hash; server 10.0.0.3; keepalive off; }',
  '    upstream any { random; server 10.0.0.4:82; queue 10; zone any 1m; }',
  '',
  '    server {',
  '        listen 8080;',
  '        proxy_read_timeout 2m;',
  '        proxy_set_header Host $host;',
  '        proxy_set_header connection "";',
  '        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
  '',
  '        location / {',
  '            proxy_pass http://backend;',
  '            location /api/ {',
  '                proxy_pass http://Later/v1/;',
  '                proxy_next_upstream off;',
  '                proxy_next_upstream_tries 3;',
  '            }',
  '            location /plain/ {',
  '            }',
  '        }',
  '        location /direct/ {',
  '            proxy_pass http://127.0.0.1:8091;',
  '        }',
  '        location /again/ {',
  '            proxy_pass http://localhost:8091/x/;',
  '            proxy_set_header X-Args "$args $scheme $server_port $proxy_host $http_accept $arg_q $request_uri $uri";',
  '            proxy_connect_timeout 250ms;',
  '        }',
  '        location ~ ^/v6 {',
  '            proxy_pass http://[::1];',
  '        }',
  '        location /outer/ {',
  '            proxy_set_header X-B b;',
  '            proxy_next_upstream timeout timeout;',
  '            location /outer/in/ {',
  '                proxy_pass http://hashed;',
  '            }',
  '        }',
  '    }',
  '    upstream later { server 127.0.0.1:8093; }',
  '}',
);
const PEERS = conf('server 10.0.0.1:80;', 'server 10.0.0.5:80 weight=2;');

t.test('upstreams and proxy_pass resolve as nginx reads them', async (t) => {
  const dir = tree({ 'zonal.conf': PROXIED, 'peers.conf': PEERS });
  const file = path.join(dir, 'zonal.conf');
  const peersFile = path.join(dir, 'peers.conf');
  const at = (needle: string) => ({ file, line: lineOf(PROXIED, needle) });
  const config = load(dir);

  const peer = (server: string, host: string, port: number, origin: { file: string; line: number }, more: object = {}) => ({
    server,
    address: host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`,
    host,
    port,
    weight: 1,
    maxConns: 0,
    maxFails: 1,
    failTimeout: 10_000,
    backup: false,
    down: false,
    slowStart: 0,
    origin,
    ...more,
  });
  const upstream = (name: string, origin: { file: string; line: number }, servers: object[], more: object = {}) => ({
    name,
    servers,
    method: { kind: 'round_robin' },
    keepalive: 64,
    responseTimeFactor: 90,
    implicit: false,
    origin,
    ...more,
  });
  t.strictSame(config.http?.upstreams, [
    upstream(
      'backend',
      at('upstream backend'),
      [
        peer('127.0.0.1:8081', '127.0.0.1', 8081, at('server 127.0.0.1:8081'), {
          weight: 3,
          maxConns: 100,
          maxFails: 2,
          failTimeout: 30_000,
          slowStart: 1500,
          sid: 'a1',
        }),
        peer('[0::1]:8082', '::1', 8082, at('server [0::1]:8082'), { backup: true }),
        peer('localhost', '127.0.0.1', 80, at('server localhost'), { down: true, maxFails: 0, failTimeout: 60_000 }),
      ],
      { zone: { name: 'backend_zone', size: 256 * 1024 }, method: { kind: 'least_conn' }, keepalive: 16, queue: { size: 50, timeout: 5000 }, responseTimeFactor: 50 },
    ),
    upstream(
      'hashed',
      at('upstream hashed'),
      [
        peer('10.0.0.1:80', '10.0.0.1', 80, { file: peersFile, line: 1 }),
        peer('10.0.0.5:80', '10.0.0.5', 80, { file: peersFile, line: 2 }, { weight: 2 }),
      ],
      { zone: { name: 'hashed_zone' }, method: { kind: 'hash', key: '$request_uri${cookie_sid}$arg_x$http_x_user$remote_addr$host$uri', consistent: true } },
    ),
    upstream('picked', at('upstream picked'), [peer('10.0.0.2:81', '10.0.0.2', 81, at('upstream picked'))], { method: { kind: 'random', two: true } }),
    upstream('sticky', at('upstream sticky'), [peer('10.0.0.3', '10.0.0.3', 80, at('upstream sticky'))], { method: { kind: 'ip_hash' }, keepalive: 0 }),
    upstream('any', at('upstream any'), [peer('10.0.0.4:82', '10.0.0.4', 82, at('upstream any'))], {
      zone: { name: 'any', size: 1024 * 1024 },
      method: { kind: 'random', two: false },
      queue: { size: 10, timeout: 60_000 },
    }),
    upstream('later', at('upstream later'), [peer('127.0.0.1:8093', '127.0.0.1', 8093, at('upstream later'))]),
    // Implicit ones: one per address, after the configured ones, in order of appearance.
    upstream('127.0.0.1:8091', at('proxy_pass http://127.0.0.1:8091'), [peer('127.0.0.1:8091', '127.0.0.1', 8091, at('proxy_pass http://127.0.0.1:8091'))], {
      implicit: true,
    }),
    upstream('[::1]:80', at('proxy_pass http://[::1]'), [peer('[::1]', '::1', 80, at('proxy_pass http://[::1]'))], { implicit: true }),
  ]);

  // The server's settings, inherited by every location below.
  const serverHeaders = [
    { name: 'Host', value: '$host' },
    { name: 'connection', value: '' },
    { name: 'X-Forwarded-For', value: '$proxy_add_x_forwarded_for' },
  ];
  // The proxy module's options at their defaults; `proxy_redirect default` turns the
  // proxy_pass URL (as written) into the location's path.
  const options = (redirects: object[]) => ({
    nextUpstreamTimeout: 0,
    httpVersion: '1.1',
    buffering: true,
    requestBuffering: true,
    hideHeaders: [],
    passHeaders: [],
    interceptErrors: false,
    redirects,
  });
  const proxy = (upstream: string, redirects: object[], more: object = {}) => ({
    upstream,
    setHeaders: serverHeaders,
    connectTimeout: 5000,
    readTimeout: 120_000,
    sendTimeout: 60_000,
    nextUpstream: ['error', 'timeout', 'http_502', 'http_503', 'http_504'],
    nextUpstreamTries: 0,
    options: options(redirects),
    ...more,
  });
  const location = (path: string, line: string, more: object = {}) => ({
    access: [],
    modifier: '',
    path,
    apiConfigFiles: false,
    locations: [],
    origin: at(line),
    ...more,
  });
  t.strictSame(config.http?.servers, [
    {
      access: [],
      listens: [{ host: '0.0.0.0', port: 8080, ssl: false, admin: false, defaultServer: false, origin: at('listen 8080') }],
      names: [],
      admin: false,
      locations: [
        location('/', 'location / {', {
          proxy: proxy('backend', [{ from: 'http://backend/', to: '/' }]),
          locations: [
            location('/api/', 'location /api/', { proxy: proxy('later', [{ from: 'http://Later/v1/', to: '/api/' }], { uri: '/v1/', nextUpstream: [], nextUpstreamTries: 3 }) }),
            location('/plain/', 'location /plain/'),
          ],
        }),
        location('/direct/', 'location /direct/', { proxy: proxy('127.0.0.1:8091', [{ from: 'http://127.0.0.1:8091/', to: '/' }]) }),
        location('/again/', 'location /again/', {
          proxy: proxy('127.0.0.1:8091', [{ from: 'http://localhost:8091/x/', to: '/again/' }], {
            uri: '/x/',
            // A level with any proxy_set_header replaces the outer list: nginx's defaults come back.
            setHeaders: [
              { name: 'Host', value: '$proxy_host' },
              { name: 'X-Args', value: '$args $scheme $server_port $proxy_host $http_accept $arg_q $request_uri $uri' },
            ],
            connectTimeout: 250,
          }),
        }),
        location('^/v6', 'location ~ ^/v6', { modifier: '~', regex: /^\/v6/, proxy: proxy('[::1]:80', [{ from: 'http://[::1]/', to: '/' }]) }),
        location('/outer/', 'location /outer/', {
          locations: [
            location('/outer/in/', 'location /outer/in/', {
              proxy: proxy('hashed', [{ from: 'http://hashed/', to: '/' }], {
                setHeaders: [{ name: 'Host', value: '$proxy_host' }, { name: 'X-B', value: 'b' }],
                nextUpstream: ['timeout'],
              }),
            }),
          ],
        }),
      ],
      origin: at('    server {'),
    },
  ]);
});

t.test('proxy settings: nginx defaults, and http-level ones reach every server', async (t) => {
  const dir = tree({
    'zonal.conf': conf(
      'http {',
      '  server {',
      '    listen 8080;',
      '    location / { proxy_pass http://127.0.0.1:9000; }',
      '  }',
      '  server {',
      '    listen 8081;',
      '    location / { proxy_pass http://127.0.0.1:9000/; }',
      '    location /b/ { proxy_pass http://[::1]:9000; }',
      '  }',
      '  proxy_set_header X-Real-IP $remote_addr;',
      '  proxy_set_header HOST $http_host;',
      '}',
    ),
  });
  const { servers, upstreams } = load(dir).http!;
  t.strictSame(servers[0].locations[0].proxy, {
    upstream: '127.0.0.1:9000',
    setHeaders: [
      { name: 'HOST', value: '$http_host' },
      { name: 'X-Real-IP', value: '$remote_addr' },
    ],
    connectTimeout: 60_000,
    readTimeout: 60_000,
    sendTimeout: 60_000,
    nextUpstream: ['error', 'timeout'],
    nextUpstreamTries: 0,
    options: {
      nextUpstreamTimeout: 0,
      httpVersion: '1.1',
      buffering: true,
      requestBuffering: true,
      hideHeaders: [],
      passHeaders: [],
      interceptErrors: false,
      redirects: [{ from: 'http://127.0.0.1:9000/', to: '/' }],
    },
  }, 'a configured header replaces a default of its name (caseless) in its place');
  t.equal(servers[1].locations[0].proxy?.uri, '/');
  t.same(upstreams.map((u) => [u.name, u.implicit, u.servers.map((p) => p.server)]), [
    ['127.0.0.1:9000', true, ['127.0.0.1:9000']],
    ['[::1]:9000', true, ['[::1]:9000']],
  ], 'one implicit upstream per address, however many proxy_pass name it');

  const bare = load(tree({ 'zonal.conf': conf('http {', '  server {', '    listen 8080;', '    location / { proxy_pass http://127.0.0.1:9000; }', '  }', '}') }));
  t.same(bare.http?.servers[0].locations[0].proxy?.setHeaders, [{ name: 'Host', value: '$proxy_host' }], "nginx's default headers, but its Connection: close (zonal writes Connection itself)");
  t.same(load(tree({ 'zonal.conf': conf('http {', '}') })).http?.upstreams, [], 'no upstream');
});

t.test('proxy_pass https:// and the proxy_ssl_* settings, inherited as nginx does', async (t) => {
  const dir = tree({
    'ca.pem': '-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n',
    'zonal.conf': conf(
      'http {',
      '  proxy_ssl_trusted_certificate ca.pem;',
      '  server {',
      '    listen 8080;',
      '    proxy_ssl_verify on;',
      '    location /a/ { proxy_pass https://127.0.0.1/; proxy_ssl_server_name on; }',
      '    location /b/ { proxy_pass https://[::1]:8443; proxy_ssl_name api.example; proxy_ssl_session_reuse off; proxy_ssl_verify off; }',
      '    location /c/ { proxy_pass http://127.0.0.1:8443; }',
      '  }',
      '}',
    ),
  });
  const { servers, upstreams } = load(dir).http!;
  const [a, b, c] = servers[0].locations.map((l) => l.proxy!);
  t.strictSame(a.ssl, { serverName: true, name: '127.0.0.1', verify: true, trusted: path.join(dir, 'ca.pem'), sessionReuse: true }, "the default name is $proxy_host's host");
  t.equal(a.upstream, '127.0.0.1:443', "https's default port");
  t.strictSame(b.ssl, { serverName: false, name: 'api.example', verify: false, trusted: path.join(dir, 'ca.pem'), sessionReuse: false });
  t.equal(c.ssl, undefined, 'plain http has none');
  t.same(upstreams.map((u) => u.name), ['127.0.0.1:443', '[::1]:8443', '127.0.0.1:8443']);
});

t.test('an upstream config survives the snapshot', async (t) => {
  const dir = tree({ 'zonal.conf': PROXIED, 'peers.conf': PEERS });
  const fromDisk = load(dir);
  const again = loadConfig(path.join(dir, 'zonal.conf'), { files: fromDisk.files, cpus: 4 });
  t.strictSame(again.config, fromDisk);
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
/** An upstream and a valid server after it; lines of `body` start at line 3. */
const upstream = (name: string, ...body: string[]) => conf('http {', `  upstream ${name} {`, ...body, '  }', '  server {', '    listen 8080;', '  }', '}');

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
  { name: 'listen on a unix socket without a path', text: server('    listen unix:;'), line: 4, message: /^no path in "unix:" of the "listen" directive$/ },
  { name: 'admin listen on a unix socket', text: server('    listen unix:/tmp/s admin;'), line: 4, message: /^the "admin" parameter is not allowed on "unix:\/tmp\/s": admin listens are TCP$/ },
  // http2 is accepted with a warning (test/server/http/http2.test.ts); HTTP/3 is not.
  { name: 'listen parameter', text: server('    listen 8081 quic;'), line: 4, message: /^invalid parameter "quic": zonal serves HTTP\/1\.1 over TCP, HTTP\/3 \(QUIC\) is not implemented$/ },
  { name: 'unknown listen parameter', text: server('    listen 8081 bogus;'), line: 4, message: /^invalid parameter "bogus"$/ },
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
  { name: 'allow unix:<path>', text: server('    allow unix:/tmp/a.sock;'), line: 4, message: /^invalid parameter "unix:\/tmp\/a\.sock" in "allow" directive$/ },
  { name: 'allow /33', text: server('    allow 10.0.0.0/33;'), line: 4, message: /^invalid parameter "10\.0\.0\.0\/33" in "allow" directive$/ },
  { name: 'deny a name', text: server('    deny example.com;'), line: 4, message: /^invalid parameter "example\.com" in "deny" directive$/ },
  { name: 'deny IPv6 /129', text: server('    deny ::1/129;'), line: 4, message: /^invalid parameter "::1\/129" in "deny" directive$/ },
  { name: 'invalid location modifier', text: server('    location ~~ /x {', '    }'), line: 4, message: /^invalid location modifier "~~"$/ },
  { name: 'invalid location regex', text: server('    location ~ "(" {', '    }'), line: 4, message: /^invalid regular expression "\(" in "location" directive/ },
  { name: 'bad ssl_handshake_timeout', text: server('    ssl_handshake_timeout soon;'), line: 4, message: /^invalid value "soon" in "ssl_handshake_timeout" directive$/ },
  { name: 'zero ssl_handshake_timeout', text: server('    ssl_handshake_timeout 0;'), line: 4, message: /^invalid value "0" in "ssl_handshake_timeout" directive$/ },
  { name: 'ssl_handshake_timeout beyond a timer', text: server('    ssl_handshake_timeout 30d;'), line: 4, message: /^invalid value "30d" in "ssl_handshake_timeout" directive$/ },
  { name: 'named location in a location', text: server('    location / {', '      location @fallback { }', '    }'), line: 5, message: /^named location "@fallback" can be on the server level only$/ },
  { name: 'location in a named location', text: server('    location @fallback {', '      location /x { }', '    }'), line: 5, message: /^location "\/x" could not be inside the named location "@fallback"$/ },
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
  // One server's `ssl` makes the address TLS (nginx merges it): its default server, here one
  // whose own listen has no `ssl`, needs a certificate.
  { name: 'ssl address whose default server has no certificate', text: conf('http {', '  server {', '    listen 8443;', '  }', '  server {', '    listen 8443 ssl;', '    ssl_certificate c.pem;', '    ssl_certificate_key k.pem;', '  }', '}'), files: CERTS, line: 6, message: /^no "ssl_certificate" is defined for the "listen \.\.\. ssl" directive$/ },
  { name: 'admin and not admin on one address', text: conf('http {', '  server {', '    listen [::1]:9000 admin;', '  }', '  server {', '    listen [::1]:9000;', '  }', '}'), line: 6, message: /^conflicting "admin" parameter for \[::1\]:9000: \[::1\]:9000 is admin$/ },
  { name: 'admin port under a wildcard', text: conf('http {', '  server {', '    listen 127.0.0.1:9000 admin;', '  }', '  server {', '    listen 9000;', '  }', '}'), line: 6, message: /^conflicting "admin" parameter for 0\.0\.0\.0:9000: 127\.0\.0\.1:9000 is admin$/ },
  // upstreams
  { name: 'upstream name', text: upstream('u/v', '    server 127.0.0.1;'), line: 2, message: /^invalid upstream name "u\/v": letters, digits, "_", "-" and "\." only$/ },
  { name: 'duplicate upstream, caseless', text: conf('http {', '  upstream u { server 127.0.0.1:1; }', '  upstream U { server 127.0.0.1:2; }', '}'), line: 3, message: /^duplicate upstream "U"$/ },
  { name: 'upstream in a server', text: server('    upstream u {', '      server 127.0.0.1;', '    }'), line: 4, message: /^"upstream" directive is not allowed here$/ },
  { name: 'a peer outside an upstream', text: conf('http {', '  server 127.0.0.1:8081;', '}'), line: 2, message: /^directive "server" has no opening "{"$/ },
  { name: 'a virtual server in an upstream', text: upstream('u', '    server 127.0.0.1;', '    server {', '    }'), line: 4, message: /^directive "server" is not terminated by ";"$/ },
  { name: 'zone name', text: upstream('u', '    zone a/b 64k;', '    server 127.0.0.1;'), line: 3, message: /^invalid zone name "a\/b" in "zone" directive/ },
  { name: 'zone size', text: upstream('u', '    server 127.0.0.1;', '    zone z 1g;'), line: 4, message: /^invalid zone size "1g"$/ },
  { name: 'zone too small', text: upstream('u', '    zone z 63k;', '    server 127.0.0.1;'), line: 3, message: /^zone "z" is too small: at least 64k$/ },
  { name: 'zone too large', text: upstream('u', '    zone z 1025m;', '    server 127.0.0.1;'), line: 3, message: /^zone "z" is too large: at most 1024m$/ },
  { name: 'zone twice', text: upstream('u', '    zone z;', '    zone y;', '    server 127.0.0.1;'), line: 4, message: /^"zone" directive is duplicate$/ },
  // Several upstreams may share a zone (upstream/shared-zone.test.ts), of one size.
  { name: 'zone of another upstream, another size', text: conf('http {', '  upstream a { server 127.0.0.1:1; zone z 128k; }', '  upstream b {', '    server 127.0.0.1:2;', '    zone z 64k;', '  }', '}'), line: 5, message: /^the size 65536 of shared memory zone "z" conflicts with already declared size 131072$/ },
  { name: 'peer host name', text: upstream('u', '    server example.org:80;'), line: 3, message: /^the server "example\.org:80" is a host name, which needs a resolver: the configuration follows one with "server example\.org:80 resolve" and a "resolver"; here write an IP address and port$/ },
  { name: 'peer host name without a port', text: upstream('u', '    server example.invalid;'), line: 3, message: /^the server "example\.invalid" is a host name, which needs a resolver/ },
  { name: 'peer SRV service', text: upstream('u', '    server _http._tcp@127.0.0.1:8080;'), line: 3, message: /^the server "_http\._tcp@127\.0\.0\.1:8080" names the service "_http\._tcp", which needs a resolver/ },
  { name: 'peer IPv6 without brackets', text: upstream('u', '    server ::1;'), line: 3, message: /^invalid IPv6 address in upstream "::1": IPv6 addresses are written in brackets$/ },
  { name: 'peer unix socket without a path', text: upstream('u', '    server unix:;'), line: 3, message: /^no path in upstream "unix:"$/ },
  { name: 'peer port', text: upstream('u', '    server 127.0.0.1:65536;'), line: 3, message: /^invalid port in upstream "127\.0\.0\.1:65536"$/ },
  { name: 'peer IPv6', text: upstream('u', '    server [::g]:80;'), line: 3, message: /^invalid IPv6 address in upstream "\[::g\]:80"$/ },
  { name: 'peer without host', text: upstream('u', '    server :80;'), line: 3, message: /^no host in upstream ":80"$/ },
  { name: 'peer weight 0', text: upstream('u', '    server 127.0.0.1 weight=0;'), line: 3, message: /^invalid parameter "weight=0"$/ },
  { name: 'peer max_fails', text: upstream('u', '    server 127.0.0.1 max_fails=-1;'), line: 3, message: /^invalid parameter "max_fails=-1"$/ },
  { name: 'peer max_conns too large', text: upstream('u', '    server 127.0.0.1 max_conns=2147483648;'), line: 3, message: /^invalid parameter "max_conns=2147483648"$/ },
  { name: 'peer fail_timeout in ms', text: upstream('u', '    server 127.0.0.1 fail_timeout=500ms;'), line: 3, message: /^invalid parameter "fail_timeout=500ms"$/ },
  { name: 'peer slow_start', text: upstream('u', '    server 127.0.0.1 slow_start=soon;'), line: 3, message: /^invalid parameter "slow_start=soon"$/ },
  { name: 'peer empty sid', text: upstream('u', '    server 127.0.0.1 sid=;'), line: 3, message: /^invalid parameter "sid="$/ },
  { name: 'peer backup with a value', text: upstream('u', '    server 127.0.0.1 backup=1;'), line: 3, message: /^invalid parameter "backup=1"$/ },
  { name: 'peer parameter zonal lacks', text: upstream('u', '    server 127.0.0.1 drain;'), line: 3, message: /^invalid parameter "drain"$/ },
  // Two servers of one address are two peers (upstream/duplicates.test.ts); a name a
  // resolver follows makes one peer per address, so twice would make none.
  { name: 'duplicate resolved name', text: upstream('u', '    resolver 127.0.0.1;', '    server app.test resolve;', '    server app.test:80 resolve backup;'), line: 5, message: /^a duplicate server app\.test:80 in upstream "u"$/ },
  { name: 'balancing method redefined', text: upstream('u', '    least_conn;', '    server 127.0.0.1;', '    ip_hash;'), line: 5, message: /^load balancing method redefined$/ },
  { name: 'balancing method twice', text: upstream('u', '    hash $uri;', '    hash $host;', '    server 127.0.0.1;'), line: 4, message: /^load balancing method redefined$/ },
  { name: 'random parameter', text: upstream('u', '    random three;', '    server 127.0.0.1;'), line: 3, message: /^invalid parameter "three"$/ },
  { name: 'random two method', text: upstream('u', '    random two least_time=header;', '    server 127.0.0.1;'), line: 3, message: /^invalid parameter "least_time=header"$/ },
  { name: 'least_conn with an argument', text: upstream('u', '    least_conn on;', '    server 127.0.0.1;'), line: 3, message: /^invalid number of arguments in "least_conn" directive$/ },
  { name: 'hash parameter', text: upstream('u', '    hash $uri always;', '    server 127.0.0.1;'), line: 3, message: /^invalid parameter "always"$/ },
  { name: 'hash variable', text: upstream('u', '    hash $binary_remote_addrx;', '    server 127.0.0.1;'), line: 3, message: /^unknown "binary_remote_addrx" variable$/ },
  { name: 'hash with a variable in braces', text: upstream('u', '    hash ${proxy_hostname};', '    server 127.0.0.1;'), line: 3, message: /^unknown "proxy_hostname" variable$/ },
  { name: 'backup with hash, written before it', text: upstream('u', '    server 127.0.0.1:1;', '    server 127.0.0.1:2 backup;', '    hash $uri;'), line: 4, message: /^balancing method does not support parameter "backup"$/ },
  { name: 'backup with ip_hash', text: upstream('u', '    ip_hash;', '    server 127.0.0.1:1;', '    server 127.0.0.1:2 backup;'), line: 5, message: /^balancing method does not support parameter "backup"$/ },
  { name: 'backup with random', text: upstream('u', '    server 127.0.0.1:1 backup;', '    server 127.0.0.1:2;', '    random two;'), line: 3, message: /^balancing method does not support parameter "backup"$/ },
  { name: 'slow_start with hash, written before it', text: upstream('u', '    server 127.0.0.1:1;', '    server 127.0.0.1:2 slow_start=30s;', '    hash $uri;'), line: 4, message: /^balancing method "hash" does not support parameter "slow_start": only round robin and "least_conn" ramp a peer's weight$/ },
  { name: 'slow_start with ip_hash', text: upstream('u', '    ip_hash;', '    server 127.0.0.1:1 slow_start=500ms;'), line: 4, message: /^balancing method "ip_hash" does not support parameter "slow_start"/ },
  { name: 'slow_start with random', text: upstream('u', '    random two;', '    server 127.0.0.1:1 slow_start=1m;'), line: 4, message: /^balancing method "random" does not support parameter "slow_start"/ },
  { name: 'keepalive 0', text: upstream('u', '    server 127.0.0.1;', '    keepalive 0;'), line: 4, message: /^invalid value "0" in "keepalive" directive$/ },
  { name: 'queue 0', text: upstream('u', '    server 127.0.0.1;', '    queue 0;'), line: 4, message: /^invalid value "0" in "queue" directive$/ },
  { name: 'queue parameter', text: upstream('u', '    server 127.0.0.1;', '    queue 10 wait=5s;'), line: 4, message: /^invalid parameter "wait=5s"$/ },
  { name: 'queue timeout', text: upstream('u', '    server 127.0.0.1;', '    queue 10 timeout=0;'), line: 4, message: /^invalid parameter "timeout=0"$/ },
  { name: 'response_time_factor 100', text: upstream('u', '    server 127.0.0.1;', '    response_time_factor 100;'), line: 4, message: /^invalid value "100" in "response_time_factor" directive, it must be a number from 1 to 99$/ },
  { name: 'response_time_factor 0', text: upstream('u', '    server 127.0.0.1;', '    response_time_factor 0;'), line: 4, message: /^invalid value "0" in "response_time_factor"/ },
  { name: 'upstream without servers', text: upstream('u', '    zone u 64k;', '    keepalive 2;'), line: 2, message: /^no servers are inside upstream$/ },
  { name: 'zone in a location', text: server('    location / {', '      zone z;', '    }'), line: 5, message: /^"zone" directive is not allowed here$/ },
  // proxying
  { name: 'proxy_pass https verified against nothing', text: server('    location / {', '      proxy_pass https://127.0.0.1:8443;', '      proxy_ssl_verify on;', '    }'), line: 6, message: /^no "proxy_ssl_trusted_certificate" for "proxy_ssl_verify"$/ },
  { name: 'proxy_pass without a scheme', text: server('    location / {', '      proxy_pass 127.0.0.1:8081;', '    }'), line: 5, message: /^invalid URL prefix in "127\.0\.0\.1:8081"$/ },
  { name: 'proxy_pass without a host', text: server('    location / {', '      proxy_pass http:///a;', '    }'), line: 5, message: /^no host in "http:\/\/\/a" of the "proxy_pass" directive$/ },
  { name: 'proxy_pass with an unknown variable', text: server('    location / {', '      proxy_pass http://$hostx;', '    }'), line: 5, message: /^unknown "hostx" variable$/ },
  { name: 'proxy_pass with a variable and no scheme', text: server('    location / {', '      proxy_pass ftp://$host;', '    }'), line: 5, message: /^invalid URL prefix in "ftp:\/\/\$host"$/ },
  { name: 'proxy_pass to an unknown host', text: conf('http {', '  server {', '    listen 8080;', '    location / {', '      proxy_pass http://backend/;', '    }', '  }', '  upstream backends { server 127.0.0.1; }', '}'), line: 5, message: /^host not found in upstream "backend"$/ },
  { name: 'proxy_pass to an upstream with a port', text: conf('http {', '  upstream backend { server 127.0.0.1; }', '  server {', '    listen 8080;', '    location / {', '      proxy_pass http://backend:8080;', '    }', '  }', '}'), line: 6, message: /^upstream "backend" may not have port 8080$/ },
  { name: 'proxy_pass to a bad port', text: server('    location / {', '      proxy_pass http://127.0.0.1:0/;', '    }'), line: 5, message: /^invalid port in upstream "127\.0\.0\.1:0"$/ },
  { name: 'proxy_pass to a unix socket without a path', text: server('    location / {', '      proxy_pass http://unix::/;', '    }'), line: 5, message: /^no path in the unix domain socket "http:\/\/unix::\/"$/ },
  { name: 'proxy_pass URI in a regex location', text: server('    location ~* \\.php$ {', '      proxy_pass http://127.0.0.1:9000/index.php;', '    }'), line: 5, message: /^"proxy_pass" cannot have URI part in location given by regular expression$/ },
  { name: 'proxy_pass and api', text: server('    location /s/ {', '      proxy_pass http://127.0.0.1:9000;', '      api /status/;', '    }'), line: 5, message: /^"proxy_pass" and "api" cannot be in the same location$/ },
  { name: 'proxy_pass and return', text: server('    location /s/ {', '      return 204;', '      proxy_pass http://127.0.0.1:9000;', '    }'), line: 6, message: /^"proxy_pass" and "return" cannot be in the same location$/ },
  { name: 'proxy_pass twice', text: server('    location / {', '      proxy_pass http://127.0.0.1:9000;', '      proxy_pass http://127.0.0.1:9001;', '    }'), line: 6, message: /^"proxy_pass" directive is duplicate$/ },
  { name: 'proxy_pass in a server', text: server('    proxy_pass http://127.0.0.1:9000;'), line: 4, message: /^"proxy_pass" directive is not allowed here$/ },
  { name: 'proxy_pass in an admin server', text: conf('http {', '  server {', '    listen 9000 admin;', '    location / {', '      proxy_pass http://127.0.0.1:9001;', '    }', '  }', '}'), line: 5, message: /^"proxy_pass" directive is not allowed in an admin server$/ },
  { name: 'proxy_set_header in an admin server', text: conf('http {', '  server {', '    listen 9000 admin;', '    proxy_set_header X-A a;', '  }', '}'), line: 4, message: /^"proxy_set_header" directive is not allowed in an admin server$/ },
  { name: 'proxy_set_header variable', text: server('    proxy_set_header X-Id $request_idx;'), line: 4, message: /^unknown "request_idx" variable$/ },
  { name: 'proxy_set_header bare $', text: server('    location / {', '      proxy_set_header X-Price "5$";', '    }'), line: 5, message: /^invalid variable name in "5\$"$/ },
  { name: 'proxy_set_header name', text: server('    proxy_set_header "X Id" 1;'), line: 4, message: /^invalid header name "X Id"$/ },
  { name: 'proxy_set_header value', text: conf('http {', '  proxy_set_header X-A "a', 'b";', '}'), line: 2, message: /^invalid header value "a\nb" of "X-A"$/ },
  { name: 'proxy_set_header arguments', text: server('    proxy_set_header X-A;'), line: 4, message: /^invalid number of arguments in "proxy_set_header" directive$/ },
  { name: 'proxy_connect_timeout', text: conf('http {', '  proxy_connect_timeout soon;', '}'), line: 2, message: /^invalid value "soon" in "proxy_connect_timeout" directive$/ },
  { name: 'proxy_read_timeout 0', text: server('    location / {', '      proxy_read_timeout 0;', '    }'), line: 5, message: /^invalid value "0" in "proxy_read_timeout" directive$/ },
  { name: 'proxy_read_timeout beyond timers', text: server('    proxy_read_timeout 25d;'), line: 4, message: /^invalid value "25d" in "proxy_read_timeout" directive$/ },
  { name: 'proxy_next_upstream condition zonal lacks', text: server('    proxy_next_upstream error updating;'), line: 4, message: /^invalid value "updating" in "proxy_next_upstream" directive$/ },
  { name: 'proxy_next_upstream_timeout', text: server('    proxy_next_upstream_timeout soon;'), line: 4, message: /^invalid value "soon" in "proxy_next_upstream_timeout" directive$/ },
  { name: 'proxy_http_version', text: server('    proxy_http_version 2.0;'), line: 4, message: /^invalid value "2.0" in "proxy_http_version" directive, it must be "1.0" or "1.1"$/ },
  { name: 'proxy_redirect off with others', text: server('    proxy_redirect http://a/ /;', '    proxy_redirect off;'), line: 5, message: /^"proxy_redirect off" cannot be used with other "proxy_redirect" directives$/ },
  { name: 'proxy_redirect bad regex', text: server('    proxy_redirect ~^(http:// /;'), line: 4, message: /^invalid regular expression "\^\(http:\/\/" in "proxy_redirect" directive/ },
  { name: 'proxy_buffers', text: server('    proxy_buffers 1 4k;'), line: 4, message: /^invalid value "1" in "proxy_buffers" directive, at least 2 buffers$/ },
  { name: 'proxy_hide_header', text: server('    proxy_hide_header "a b";'), line: 4, message: /^invalid header name "a b" in "proxy_hide_header" directive$/ },
  { name: 'proxy_ssl_certificate without its key', text: server('    proxy_ssl_certificate zonal.conf;', '    location / { proxy_pass https://127.0.0.1:1; }'), line: 4, message: /^no "proxy_ssl_certificate_key" is defined for certificate ".*zonal.conf"$/ },
  { name: 'proxy_next_upstream off with others', text: server('    proxy_next_upstream error off;'), line: 4, message: /^invalid value "off" in "proxy_next_upstream" directive$/ },
  { name: 'proxy_next_upstream_tries', text: server('    proxy_next_upstream_tries -1;'), line: 4, message: /^invalid value "-1" in "proxy_next_upstream_tries" directive$/ },
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

t.test('slow_start: round robin and least_conn take it, every method takes it off', async (t) => {
  for (const [method, written] of [['', 'slow_start=30s'], ['least_conn;', 'slow_start=30s'], ['hash $uri;', 'slow_start=0'], ['random;', 'slow_start=0s']]) {
    const dir = tree({ 'zonal.conf': upstream('u', `    ${method}`, `    server 127.0.0.1:1 ${written};`) });
    t.same(loadConfig(path.join(dir, 'zonal.conf')).errors, [], `${method || 'round robin'} with ${written}`);
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
    'servers.conf': conf('server {', '  listen 8081;', '  location /a/ { status_zone a b c; }', '  auth_basic "r";', '}'),
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
