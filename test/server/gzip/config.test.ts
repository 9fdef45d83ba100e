// The gzip directives as `zonal -t` reads them: what nginx refuses is refused with nginx's
// words (checked against nginx 1.22's `-t`), what it takes lands in the model with
// nginx's merge (each setting inherits unless a block sets it).
import t from 'tap';
import { loadConfig } from '../../../src/server/config/load.js';

const load = (text: string) => loadConfig('/conf/zonal.conf', { files: { '/conf/zonal.conf': text } });

const refused: Array<[string, RegExp]> = [
  ['gzip maybe;', /^invalid value "maybe" in "gzip" directive, it must be "on" or "off"$/],
  ['gzip on; gzip off;', /^"gzip" directive is duplicate$/],
  ['gzip_comp_level 10;', /^value must be between 1 and 9$/],
  ['gzip_comp_level 0;', /^value must be between 1 and 9$/],
  ['gzip_comp_level x;', /^"gzip_comp_level" directive invalid number$/],
  ['gzip_proxied expired bogus;', /^invalid value "bogus"$/],
  ['gzip_http_version 2.0;', /^invalid value "2.0"$/],
  ['gzip_static maybe;', /^invalid value "maybe"$/],
  ['gzip_min_length x;', /^"gzip_min_length" directive invalid value$/],
  ['gzip_buffers x 8k;', /^"gzip_buffers" directive invalid value$/],
  ['gzip_buffers 4 x;', /^"gzip_buffers" directive invalid value$/],
  ['gzip_buffers 4;', /^invalid number of arguments in "gzip_buffers" directive$/],
  ['gzip_disable "(";', /^invalid regular expression "\(" in "gzip_disable" directive/],
  ['gzip_vary yes;', /^invalid value "yes" in "gzip_vary" directive, it must be "on" or "off"$/],
];

for (const [line, message] of refused) {
  t.test(line, async (t) => {
    const { config, errors } = load(`http {\n  server {\n    listen 127.0.0.1:8080;\n    ${line}\n  }\n}\n`);
    t.equal(config, undefined);
    t.match(errors, [{ file: '/conf/zonal.conf', line: 4, message }]);
  });
}

t.test('where nginx takes them', async (t) => {
  const { errors } = load(`http {
  gzip on;
  server {
    listen 127.0.0.1:8080;
    location / { if ($arg_x) { gzip off; } }
    location /s/ { if ($arg_x) { gzip_static on; } }
  }
}
`);
  t.match(errors, [{ line: 6, message: /^"gzip_static" directive is not allowed here$/ }]);
});

t.test('nginx defaults and merge', async (t) => {
  const { config, errors } = load(`http {
  gzip_types application/json;
  gzip_types text/css;
  gzip_proxied expired;
  gzip_proxied auth;
  server {
    listen 127.0.0.1:8080;
    location /none/ { }
    location /on/ { gzip on; gzip_comp_level 6; gzip_disable msie6 "^curl/"; gzip_http_version 1.0; gzip_min_length 1k; gzip_vary on; gzip_buffers 16 8k;
      location /on/any/ { gzip_types *; }
    }
    location /static/ { gzip_static always; }
  }
}
`);
  t.same(errors, []);
  const [none, on, stat] = config!.http!.servers[0].locations;
  t.equal(none.gzip, undefined, 'neither gzip nor gzip_static: nothing in the model');
  t.same(on.gzip, {
    enable: true,
    types: new Set(['text/html', 'application/json', 'text/css']),
    minLength: 1024,
    compLevel: 6,
    proxied: new Set(['expired', 'auth']),
    vary: true,
    disable: [/^curl\//i],
    disableMsie6: true,
    httpVersion: 10,
    static: 'off',
  });
  const any = on.locations[0].gzip!;
  t.equal(any.types, undefined, 'gzip_types *: any type');
  t.equal(any.compLevel, 6, 'the rest inherited');
  t.match(stat.gzip, { enable: false, static: 'always', minLength: 20, compLevel: 1, httpVersion: 11, vary: false });
});
