// The rewrite module's directives at `zonal -t` (issue 33, item 1): what nginx takes and
// what it refuses, in its words; `set` makes a variable every value may name, wherever
// in the configuration it is written; and `zonal -V` counts the module as built in.
import t, { type Test } from 'tap';
import { checkConfig, runZonal } from '../zonal.js';

const http = (...lines: string[]) => ['events {}', 'http {', '  server {', '    listen 127.0.0.1:8080;', ...lines, '  }', '}', ''].join('\n');

const ok = async (t: Test, text: string, what: string) => {
  const r = await checkConfig(text);
  t.equal(r.code, 0, `${what}: ${r.err}`);
};
const refused = async (t: Test, text: string, message: RegExp, what: string) => {
  const r = await checkConfig(text);
  t.not(r.code, 0, `${what}: refused`);
  t.match(r.err, message, what);
};

t.test('set makes a variable, known to every value, wherever it is written', async (t) => {
  // Named before the `set` that makes it, in another location, in log_format at http level.
  await ok(
    t,
    [
      'events {}',
      'http {',
      '  log_format f "$greeting $who";',
      '  server {',
      '    listen 127.0.0.1:8080;',
      '    location /a { add_header X-G $greeting; return 200 "$who"; }',
      '    location /b { set $greeting hello; if ($arg_x) { set $who $arg_x; } }',
      '  }',
      '}',
    ].join('\n'),
    'set in a location and in an if, read before',
  );
  await ok(t, http('    set $s "a b";', '    rewrite ^/old/(.*)$ /new/$1 last;', '    location / { return 200 $s; }'), 'server-level set and rewrite');
  await ok(t, http('    location / { set $args a=1; rewrite_log on; uninitialized_variable_warn off; }'), '$args may be set');
  await ok(t, http('    location ~ ^/(?<tail>.*)$ { return 200 $tail; }'), 'a named group of a location is a variable');
  await ok(t, http('    location / { if ($uri ~ ^/(?P<word>\\w+)) { return 200 $word; } }'), "a named group of an if, in PCRE's spelling");
  await ok(t, http('    location / { rewrite ^/(?<rest>.*) /x; return 200 $rest; }'), 'a named group of a rewrite');
  await ok(t, http('    if ($arg_a) { set $x 1; rewrite ^ /a; break; return 403; }', '    location / { return 200 $x; }'), 'rewrite directives in a server if');
});

t.test('what nginx refuses, in its words', async (t) => {
  await refused(t, http('    location / { return 200 $nothing_sets_this; }'), /\[emerg\] unknown "nothing_sets_this" variable in <dir>\/zonal.conf:5/, 'an unknown variable still fails');
  await refused(t, http('    location / { set $uri /x; }'), /the duplicate "uri" variable in <dir>\/zonal.conf:5/, "nginx's own variable cannot be set");
  await refused(t, http('    location / { set foo 1; }'), /invalid variable name "foo"/, 'set without $');
  await refused(t, http('    location / { set $foo $bar; }'), /unknown "bar" variable/, "set's value is checked");
  await refused(t, http('    location / { rewrite ^ /x sometimes; }'), /invalid parameter "sometimes"/, 'an unknown flag');
  await refused(t, http('    location / { rewrite ^(a /x; }'), /invalid regular expression "\^\(a" in "rewrite" directive/, 'a bad regex');
  await refused(t, http('    location / { rewrite ^ /$unknown_thing; }'), /unknown "unknown_thing" variable/, 'the replacement is checked');
  await refused(t, http('    location / { rewrite ^; }'), /invalid number of arguments in "rewrite" directive/, 'rewrite takes two or three');
  await refused(t, http('    location / { break 1; }'), /invalid number of arguments in "break" directive/, 'break takes none');
  await refused(t, http('    location / { rewrite_log yes; }'), /invalid value "yes" in "rewrite_log" directive, it must be "on" or "off"/, 'rewrite_log on|off');
  await refused(t, http('    location / { uninitialized_variable_warn 1; }'), /invalid value "1" in "uninitialized_variable_warn" directive/, 'uninitialized_variable_warn on|off');
  await refused(t, ['events {}', 'http {', '  set $a 1;', '}'].join('\n'), /"set" directive is not allowed here/, 'set is not an http-level directive');
});

t.test('zonal -V counts the rewrite module in', async (t) => {
  const r = await runZonal(['-V']);
  t.equal(r.code, 0);
  t.notMatch(r.out + r.err, /--without-http_rewrite_module/);
});
