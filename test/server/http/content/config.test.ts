// The content directives as `zonal -t` reads them: what nginx refuses is refused with
// nginx's words, file and line; what it takes lands in the model with nginx's merge.
import t from 'tap';
import { loadConfig } from '../../../../src/server/config/load.js';

const load = (text: string) => loadConfig('/conf/zonal.conf', { files: { '/conf/zonal.conf': text } });

/** One configuration per refusal, its line, and nginx's message. */
const refused: Array<[string, string, RegExp]> = [
  ['alias after root', 'location /a/ { root /x; alias /y/; }', /^"alias" directive is duplicate, "root" directive was specified earlier$/],
  ['root after alias', 'location /a/ { alias /y/; root /x; }', /^"root" directive is duplicate, "alias" directive was specified earlier$/],
  ['alias in a named location', 'location @n { alias /y/; }', /^"alias" directive cannot be used inside the named location$/],
  ['alias in a server', 'alias /y/;', /^"alias" directive is not allowed here$/],
  ['error_page 200', 'error_page 200 /x;', /^value "200" must be between 300 and 599$/],
  ['error_page 499', 'error_page 499 /x;', /^value "499" must be between 300 and 599, except 499$/],
  ['error_page without a code', 'error_page =404 /x;', /^invalid value "=404"$/],
  ['error_page =code not a number', 'error_page 404 =ab /x;', /^invalid value "=ab"$/],
  ['error_page unknown variable', 'error_page 404 /$nope;', /unknown "nope" variable/],
  ['try_files with a relative last', 'location / { try_files $uri index.html; }', /^invalid URI "index.html" in "try_files" directive$/],
  ['try_files =code not a code', 'location / { try_files $uri =4044; }', /^invalid code "=4044"$/],
  ['try_files one argument', 'location / { try_files $uri; }', /^invalid number of arguments in "try_files" directive$/],
  ['index absolute not last', 'index /a.html b.html;', /^only the last index in "index" directive should be absolute$/],
  ['index with an unknown variable', 'index $nonesuch.html;', /^unknown "nonesuch" variable$/],
  ['internal in a server', 'internal;', /^"internal" directive is not allowed here$/],
  ['internal with an argument', 'location / { internal on; }', /^invalid number of arguments in "internal" directive$/],
  ['server_tokens', 'server_tokens maybe;', /^invalid value "maybe" in "server_tokens" directive, it must be "on", "off" or "build"$/],
  ['limit_rate', 'limit_rate fast;', /^invalid value "fast" in "limit_rate" directive$/],
  ['limit_rate_after with an unknown variable', 'limit_rate_after $nonesuch;', /^unknown "nonesuch" variable$/],
  ['limit_rate with an unknown variable', 'limit_rate $nonesuch;', /^unknown "nonesuch" variable$/],
  ['limit_rate_after', 'limit_rate_after -1;', /^invalid value "-1" in "limit_rate_after" directive$/],
  ['a named location in a location', 'location / { location @n { } }', /^named location "@n" can be on the server level only$/],
];

for (const [name, line, message] of refused) {
  t.test(name, async (t) => {
    const { config, errors } = load(`http {\n  server {\n    listen 127.0.0.1:8080;\n    ${line}\n  }\n}\n`);
    t.equal(config, undefined);
    t.match(errors, [{ file: '/conf/zonal.conf', line: 4, message }]);
  });
}

t.test('what nginx takes, merged as nginx merges it', async (t) => {
  const { config, errors } = load(`http {
  index a.html;
  index b.html;
  error_page 404 /404.html;
  server_tokens off;
  limit_rate 8k;
  server {
    listen 127.0.0.1:8080;
    location / { try_files $uri $uri/ =404; }
    location /x/ { error_page 500 502 =200 /err; limit_rate_after 1m; location /x/y/ { } }
    location /i/ { alias /data/; internal; location /i/n/ { root /other; } }
    location ~ ^/r/(.*)$ { alias /data/$1; }
    location @named { return 204; }
  }
}
`);
  t.same(errors, []);
  const server = config!.http!.servers[0];
  const [root, x, i, r, named] = server.locations;
  t.same(root.content?.index, ['a.html', 'b.html'], 'the arguments of every index of a block, in order');
  t.same(root.content?.tryFiles, { files: ['$uri', '$uri/'], last: '=404' });
  t.same(root.content?.errorPages, [{ status: 404, overwrite: -1, uri: '/404.html' }], 'error_page inherited');
  t.equal(root.content?.serverTokens, 'off');
  t.equal(root.content?.limitRate, 8192);
  t.same(x.content?.errorPages, [
    { status: 500, overwrite: 200, uri: '/err' },
    { status: 502, overwrite: 200, uri: '/err' },
  ], 'a block with error_page replaces the outer list');
  t.equal(x.content?.limitRateAfter, 1024 * 1024);
  t.equal(x.locations[0].content?.limitRateAfter, 1024 * 1024, 'limit_rate_after inherited');
  t.equal(x.locations[0].content?.tryFiles, undefined);
  t.equal(i.content?.alias, '/data/');
  t.equal(i.content?.internal, true);
  t.equal(i.locations[0].content?.alias, undefined, 'a nested root replaces the alias');
  t.equal(i.locations[0].content?.internal, false, 'internal is not inherited');
  t.equal(i.locations[0].root, '/other');
  t.equal(r.content?.alias, '/data/$1');
  t.equal(named.modifier, '@');
  t.equal(named.path, '@named');
});
