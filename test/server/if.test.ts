// `if` in locations (issue 19, item 4), as the configuration reader takes it: nginx's
// tokenisation of the condition, the model of each condition kind, what an `if` block
// inherits from its location, and each error with its file and line.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { parseIfCondition } from '../../src/server/rewrite/condition.js';
import { loadConfig } from '../../src/server/config/load.js';
import type { LocationConfig, RewriteStep, ServerConfig } from '../../src/server/config/model.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'zonal-if-'));
t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));

/** A configuration whose server holds `lines` (line 5 is the first of them). */
const server = (...lines: string[]) =>
  ['http {', '  upstream u { server 127.0.0.1:8081; }', '  server {', '    listen 127.0.0.1:8080;', ...lines, '  }', '}', ''].join('\n');

function load(text: string): { config?: ServerConfig; errors: ReturnType<typeof loadConfig>['errors']; file: string } {
  const dir = fs.mkdtempSync(path.join(root, 'case-'));
  const file = path.join(dir, 'zonal.conf');
  fs.writeFileSync(file, text);
  return { ...loadConfig(file), file };
}

function location(text: string, at = 0): LocationConfig {
  const { config, errors } = load(text);
  if (!config) throw new Error(errors.map((e) => `${e.message} (${e.line})`).join('\n'));
  return config.http!.servers[0].locations[at];
}

t.test('conditions: nginx words, each kind', async (t) => {
  const ok = (args: string[]) => {
    const parsed = parseIfCondition(args);
    if (parsed.error !== undefined) throw new Error(parsed.error);
    return parsed.value;
  };
  t.same(ok(['($http_x)']), { kind: 'variable', variable: '$http_x' }, 'a variable, parentheses glued');
  t.same(ok(['(', '$http_x', ')']), { kind: 'variable', variable: '$http_x' }, 'parentheses as words of their own');
  t.same(ok(['($request_uri', '=', '/a)']), { kind: 'equal', variable: '$request_uri', value: '/a', negate: false });
  t.same(ok(['($arg_a', '!=', '$arg_b', ')']), { kind: 'equal', variable: '$arg_a', value: '$arg_b', negate: true }, 'the right side may hold variables');
  t.same(ok(['($host', '=', '', ')']), { kind: 'equal', variable: '$host', value: '', negate: false }, 'an empty quoted string');
  for (const [op, flags, negate] of [['~', '', false], ['~*', 'i', false], ['!~', '', true], ['!~*', 'i', true]] as const) {
    const c = ok(['($uri', op, '^/(a b){2}$', ')']);
    t.equal(c.kind, 'regex', op);
    if (c.kind === 'regex') {
      t.equal(c.regex.source, '^\\/(a b){2}$', `${op}: the regex`);
      t.equal(c.regex.flags, flags, `${op}: caseless or not`);
      t.equal(c.negate, negate, `${op}: negated or not`);
    }
  }
  t.same(ok(['(-f', '/srv$uri)']), { kind: 'file', test: 'f', path: '/srv$uri', negate: false });
  t.same(ok(['(!-d', '/srv)']), { kind: 'file', test: 'd', path: '/srv', negate: true });
  t.same(ok(['(-e', '$1)']), { kind: 'file', test: 'e', path: '$1', negate: false }, 'a capture in a path');
  t.same(ok(['(!-x', '/bin/sh)']), { kind: 'file', test: 'x', path: '/bin/sh', negate: true });

  const bad: Array<[string[], RegExp]> = [
    [['$uri'], /^invalid condition "\$uri"$/],
    [['($uri'], /^invalid condition "\$uri"$/],
    [['()'], /^invalid condition "\(\)"$/],
    [['(', ')'], /^invalid condition/],
    [['($uri', '=', ')'], /^invalid condition "\$uri"$/],
    [['($uri', '==', 'a)'], /^unexpected "==" in condition$/],
    [['($nope)'], /^unknown "nope" variable$/],
    [['($uri', '=', '$nope)'], /^unknown "nope" variable$/],
    [['($uri', '~', '(a)'], /^invalid regular expression "\(a" in condition/],
    [['(-q', '/a)'], /^unexpected "-q" in condition$/],
    [['(-f)'], /^invalid condition "-f"$/],
    [['(-f', '/a', '/b)'], /^invalid condition "-f"$/],
    [['(uri', '=', 'a)'], /^invalid condition "uri"$/],
    [['($u$v)'], /^invalid variable name in condition "\$u\$v"$/],
  ];
  for (const [args, message] of bad) {
    const parsed = parseIfCondition(args);
    t.match(parsed.error, message, `refused: ${args.join(' ')}`);
  }
});

t.test('the tokenisation: quoted regexes with spaces, braces and ";", a ")" after a quote', async (t) => {
  const l = location(
    server(
      '    location / {',
      '      if ($uri ~* "^/a b/{2}[;]$") { return 204; }',
      "      if ( $arg_q = 'x y' ) { return 205; }",
      '      if ($http_x_y) { return 206; }',
      '    }',
    ),
  );
  const [regex, equal, variable] = l.ifs ?? [];
  t.equal(regex.condition.kind === 'regex' && regex.condition.regex.source, '^\\/a b\\/{2}[;]$');
  t.same(equal.condition, { kind: 'equal', variable: '$arg_q', value: 'x y', negate: false });
  t.same(variable.condition, { kind: 'variable', variable: '$http_x_y' });
  t.same(
    l.ifs?.map((i) => i.return),
    [{ code: 204 }, { code: 205 }, { code: 206 }],
  );
});

t.test('an if block inherits its location, and sets what it may', async (t) => {
  const { config, errors, file } = load(
    server(
      '    status_zone site;',
      '    location /app/ {',
      '      status_zone app;',
      '      allow 127.0.0.1;',
      '      deny all;',
      '      proxy_set_header X-From location;',
      '      proxy_read_timeout 5s;',
      '      root files;',
      '      proxy_pass http://u;',
      '      if ($arg_zone) { status_zone other; proxy_pass http://u/x/$1; }',
      '      if ($arg_off) { status_zone off; root other; }',
      '      if ($arg_plain) { return 200 "$1 $host"; }',
      '      if (-f site.html) { api /status/http/; }',
      '    }',
      '    location /ret/ {',
      '      if ($arg_a) { return 201; }',
      '      return 200;',
      '      if ($arg_b) { return 202; }',
      '    }',
    ),
  );
  t.same(errors, []);
  const [app, ret] = config!.http!.servers[0].locations;
  const [zone, off, plain, api] = app.ifs!;
  t.equal(zone.statusZone, 'other', 'its own status_zone');
  t.equal(off.statusZone, undefined, '`status_zone off` in it');
  t.equal(plain.statusZone, 'app', "the location's otherwise");
  for (const i of app.ifs!) t.same(i.access.map((r) => `${r.allow ? 'allow' : 'deny'} ${r.address}`), ['allow 127.0.0.1', 'deny all'], 'allow and deny inherited');
  t.equal(zone.proxy?.uri, '/x/$1', 'its proxy_pass, a URI with a capture');
  t.equal(zone.proxy?.readTimeout, 5000, "with the location's proxy settings");
  t.same(
    zone.proxy?.setHeaders.find((h) => h.name === 'X-From'),
    { name: 'X-From', value: 'location' },
  );
  t.equal(off.root, path.join(path.dirname(file), 'other'), 'its own root');
  t.equal(plain.root, path.join(path.dirname(file), 'files'), "the location's otherwise");
  t.same(plain.return, { code: 200, text: '$1 $host' });
  t.equal(api.api, '/status/http/');
  t.same(api.condition, { kind: 'file', test: 'f', path: path.join(path.dirname(file), 'site.html'), negate: false }, 'a relative path is relative to the file');
  t.same(app.script?.map((s) => s.kind), ['if', 'if', 'if', 'if'], 'its if blocks, in order, no return');
  t.same(ret.script?.map((s) => s.kind), ['if', 'return', 'if'], "the location's return comes after one if block");
  t.same(config!.http!.upstreams.map((u) => u.name), ['u']);
});

t.test('a server holds if blocks with return, in order with its own return', async (t) => {
  const { config, errors } = load(server('    if ($arg_a) { return 401; }', '    if ($http_x) { }', '    return 200;', '    if ($arg_b) { return 402; }', '    location / { }'));
  t.same(errors, []);
  const s = config!.http!.servers[0];
  const returned = (steps: readonly RewriteStep[]) => steps.map((r) => (r.kind === 'return' ? r.value.code : r.kind));
  t.same(
    s.ifs?.map((i) => [i.condition.kind, returned(i.script)]),
    [
      ['variable', [401]],
      ['variable', []],
      ['variable', [402]],
    ],
  );
  t.same(s.script && returned(s.script), ['if', 'if', 200, 'if'], 'the server runs them in the order written');
});

t.test('if blocks add their zones to the status catalog', async (t) => {
  const { statusConfigOf } = await import('../../src/server/catalog.js');
  const { config } = load(server('    location / {', '      status_zone a;', '      if ($arg_b) { status_zone b; }', '    }'));
  t.same(statusConfigOf(config!).http?.locationZones, ['a', 'b']);
});

t.test('each error names its file and line', async (t) => {
  const cases: Array<{ name: string; lines: string[]; line: number; message: RegExp }> = [
    { name: 'bad condition', lines: ['    location / {', '      if $uri { return 200; }', '    }'], line: 6, message: /^invalid condition "\$uri" in "if" directive$/ },
    { name: 'unknown variable', lines: ['    location / {', '      if ($nope) { return 200; }', '    }'], line: 6, message: /^unknown "nope" variable in "if" directive$/ },
    { name: 'bad regex', lines: ['    location / {', '      if ($uri ~ "(") { return 200; }', '    }'], line: 6, message: /^invalid regular expression "\(" in condition: .* in "if" directive$/ },
    { name: 'bad operator', lines: ['    location / {', '      if ($uri =~ a) { return 200; }', '    }'], line: 6, message: /^unexpected "=~" in condition in "if" directive$/ },
    { name: 'an unquoted regex with a brace', lines: ['    location / {', '      if ($uri ~ ^/a{2}) { return 200; }', '    }'], line: 6, message: /^unexpected "}"$/ },
    { name: 'allow in if', lines: ['    location / {', '      if ($arg_a) {', '        allow all;', '      }', '    }'], line: 7, message: /^"allow" directive is not allowed here$/ },
    { name: 'proxy_set_header in if', lines: ['    location / {', '      if ($arg_a) {', '        proxy_set_header A b;', '      }', '    }'], line: 7, message: /^"proxy_set_header" directive is not allowed here$/ },
    { name: 'location in if', lines: ['    location / {', '      if ($arg_a) {', '        location /x { }', '      }', '    }'], line: 7, message: /^"location" directive is not allowed here$/ },
    { name: 'nested if', lines: ['    location / {', '      if ($arg_a) {', '        if ($arg_b) { return 200; }', '      }', '    }'], line: 7, message: /^"if" directive is not allowed here$/ },
    { name: 'status_zone in a server if', lines: ['    if ($arg_a) { status_zone z; }'], line: 5, message: /^"status_zone" directive is not allowed here$/ },
    { name: 'proxy_pass in a server if', lines: ['    if ($arg_a) {', '      proxy_pass http://u;', '    }'], line: 6, message: /^"proxy_pass" directive is not allowed here$/ },
    { name: 'a bad condition in a server if', lines: ['    if ($arg_a ~ "[") { return 200; }'], line: 5, message: /^invalid regular expression "\[" in condition: .* in "if" directive$/ },
    { name: 'if in http', lines: [], line: 1, message: /^"if" directive is not allowed here$/ },
    { name: 'if without a block', lines: ['    location / {', '      if ($arg_a);', '    }'], line: 6, message: /^directive "if" has no opening "{"$/ },
    { name: 'proxy_pass with a URI part', lines: ['    location / {', '      if ($arg_a) { proxy_pass http://u/x/; }', '    }'], line: 6, message: /^"proxy_pass" cannot have URI part inside "if" statement, unless it has variables$/ },
    { name: 'proxy_pass and return', lines: ['    location / {', '      if ($arg_a) {', '        return 200;', '        proxy_pass http://u;', '      }', '    }'], line: 8, message: /^"proxy_pass" and "return" cannot be in the same "if" block$/ },
    { name: 'api and return', lines: ['    location / {', '      if ($arg_a) {', '        api /status/;', '        return 200;', '      }', '    }'], line: 7, message: /^"api" and "return" cannot be in the same "if" block$/ },
    { name: 'two returns', lines: ['    location / {', '      if ($arg_a) {', '        return 200;', '        return 201;', '      }', '    }'], line: 8, message: /^"return" directive is duplicate$/ },
    { name: 'unknown variable in return', lines: ['    location / {', '      if ($arg_a) { return 200 $nope; }', '    }'], line: 6, message: /^unknown "nope" variable$/ },
    { name: 'unknown variable in a proxy_pass URI', lines: ['    location / {', '      if ($arg_a) { proxy_pass http://u/$nope; }', '    }'], line: 6, message: /^unknown "nope" variable$/ },
    { name: 'an unknown variable in the proxy_pass host', lines: ['    location / {', '      if ($arg_a) { proxy_pass http://$hostx; }', '    }'], line: 6, message: /^unknown "hostx" variable$/ },
    { name: 'bad zone', lines: ['    location / {', '      if ($arg_a) { status_zone a/b; }', '    }'], line: 6, message: /^invalid zone name "a\/b" in "status_zone" directive/ },
  ];
  for (const c of cases) {
    const text = c.name === 'if in http' ? server().replace('http {', 'http { if ($arg_a) { return 200; }') : server(...c.lines);
    const { config, errors, file } = load(text);
    t.equal(config, undefined, `${c.name}: no configuration`);
    t.equal(errors.length, 1, `${c.name}: one error`, { errors });
    t.match(errors[0]?.message, c.message, `${c.name}: message`);
    t.same({ file: errors[0]?.file, line: errors[0]?.line }, { file, line: c.line }, `${c.name}: file and line`);
  }
  // An admin server takes no `if`.
  const admin = load(['http {', '  server {', '    listen 127.0.0.1:8081 admin;', '    location / {', '      if ($arg_a) { return 200; }', '      api /;', '    }', '  }', '}', ''].join('\n'));
  t.match(admin.errors, [{ line: 5, message: '"if" directive is not allowed in an admin server' }]);
  // Nor a `return` with variables: its listener has no node:http request to read them from.
  const adminReturn = load(['http {', '  server {', '    listen 127.0.0.1:8081 admin;', '    location / {', '      return 302 http://$host/;', '    }', '  }', '}', ''].join('\n'));
  t.match(adminReturn.errors, [{ line: 5, message: 'variables in "return" are not supported in an admin server' }]);
});

t.test('the directives allowed in an if block are those whose entry names the if context', async (t) => {
  const { specsOf } = await import('../../src/server/config/directives.js');
  const { limitDirectives } = await import('../../src/server/limits/config.js');
  // The modules that had their entries in the loader's table once.
  const tables = await Promise.all(
    ['core/config.js', 'http/config.js', 'rewrite/config.js', 'ssl/config.js', 'access/config.js', 'auth-basic/config.js', 'api/config.js', 'proxy/config.js', 'upstream/config.js'].map((f) => import(`../../src/server/${f}`)),
  );
  const modules = tables.flatMap((m: Record<string, object>) => Object.values(m).filter((v) => typeof v === 'object'));
  const names = [...new Set([...Object.keys(limitDirectives), ...modules.flatMap((m) => Object.keys(m))])];
  const inIf = names.filter((name) => specsOf(name).some((s) => (s.contexts as readonly string[]).includes('if')));
  t.same(inIf.sort(), [
    'api',
    'break',
    // nginx's include is allowed in every context: its lines are the if block's own.
    'include',
    'limit_conn',
    'limit_conn_dry_run',
    'limit_conn_log_level',
    'limit_conn_status',
    'limit_req',
    'limit_req_dry_run',
    'limit_req_log_level',
    'limit_req_status',
    'proxy_pass',
    'return',
    'rewrite',
    'rewrite_log',
    'root',
    'set',
    'status_zone',
    'uninitialized_variable_warn',
  ]);
});
