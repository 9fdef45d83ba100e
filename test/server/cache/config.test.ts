// The cache's directives: what a location resolves to (nginx's inheritance and defaults),
// the status catalog (bytes, shards), and every bad input refused with file and line.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { formatConfigError, loadConfig } from '../../../src/server/config/load.js';
import { statusConfigOf } from '../../../src/server/catalog.js';
import type { LocationConfig } from '../../../src/server/config/model.js';
import { checkFile } from '../zonal.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'zonal-cache-conf-'));
t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));

function write(text: string): string {
  const dir = fs.mkdtempSync(path.join(root, 'case-'));
  const file = path.join(dir, 'zonal.conf');
  fs.writeFileSync(file, text);
  return file;
}

const GOOD = `http {
  proxy_cache_path /var/cache/one levels=1:2 keys_zone=one:1m inactive=1h max_size=1g use_temp_path=off;
  proxy_cache_path /mnt/a keys_zone=two:64k max_size=10m;
  proxy_cache_path /mnt/b keys_zone=two max_size=20m loader_files=10 loader_sleep=10ms;
  proxy_cache one;
  proxy_cache_valid 200 302 10m;
  proxy_cache_valid 404 1m;
  add_header X-Cache $upstream_cache_status;
  server {
    listen 127.0.0.1:8080;
    location / { proxy_pass http://127.0.0.1:9000; }
    location /two/ {
      proxy_pass http://127.0.0.1:9000;
      proxy_cache two;
      proxy_cache_key $host$uri;
      proxy_cache_valid any 5s;
      proxy_cache_methods POST;
      proxy_cache_min_uses 2;
      proxy_cache_bypass $cookie_nocache $arg_nocache;
      proxy_no_cache $http_pragma;
      proxy_cache_use_stale error timeout updating http_503;
      proxy_cache_background_update on;
      proxy_cache_revalidate on;
      proxy_cache_convert_head off;
      proxy_cache_lock on;
      proxy_cache_lock_timeout 2s;
      add_header X-Other yes always;
    }
    location /off/ { proxy_pass http://127.0.0.1:9000; proxy_cache off; }
    location /if/ { proxy_pass http://127.0.0.1:9000; if ($arg_x) { proxy_cache two; } }
  }
}
`;

t.test('resolved: inherited settings, nginx defaults, shards and bytes', async (t) => {
  const { config, errors } = loadConfig(write(GOOD));
  t.same(errors, []);
  const locations = config!.http!.servers[0].locations;
  const at = (p: string) => locations.find((l: LocationConfig) => l.path === p)!.proxy!;
  const top = at('/').cache!;
  t.equal(top.zone.name, 'one');
  t.equal(top.key, '$scheme$proxy_host$request_uri', "nginx's default key");
  t.same(top.valid, [
    { codes: [200, 302], ms: 600_000 },
    { codes: [404], ms: 60_000 },
  ]);
  t.same([top.methods, top.minUses, top.lock, top.lockTimeout, top.useStale], [['GET', 'HEAD'], 1, false, 5000, []]);
  t.equal(top.convertHead, true, 'proxy_cache_convert_head on by default');
  t.same(at('/').addHeaders, [{ name: 'X-Cache', value: '$upstream_cache_status', always: false }]);
  const two = at('/two/').cache!;
  t.same(two.zone.paths.map((p) => [p.path, p.maxSize]), [
    ['/mnt/a', 10 << 20],
    ['/mnt/b', 20 << 20],
  ]);
  t.same(two.valid, [{ codes: [], ms: 5000 }], 'a block with proxy_cache_valid replaces the outer list');
  t.same([two.methods, two.minUses, two.bypass, two.noCache], [['GET', 'HEAD', 'POST'], 2, ['$cookie_nocache', '$arg_nocache'], ['$http_pragma']]);
  t.same([two.useStale, two.backgroundUpdate, two.revalidate, two.lock, two.lockTimeout], [['error', 'timeout', 'updating', 'http_503'], true, true, true, 2000]);
  t.equal(two.convertHead, false, 'proxy_cache_convert_head off');
  t.same(at('/two/').addHeaders, [{ name: 'X-Other', value: 'yes', always: true }]);
  t.equal(at('/off/').cache, undefined, 'proxy_cache off');
  const iff = locations.find((l: LocationConfig) => l.path === '/if/')!;
  t.equal(iff.proxy!.cache!.zone.name, 'one', 'the location: the http level\'s cache');
  t.equal(iff.ifs![0].proxy!.cache!.zone.name, 'two', 'the if block: its own, through the location\'s proxy_pass');
  t.equal(iff.ifs![0].proxy!.upstream, '127.0.0.1:9000');
  const one = config!.http!.caches![0];
  t.same([one.inactive, one.size, one.paths[0].levels, one.paths[0].maxSize, one.paths[0].useTempPath], [3_600_000, 1 << 20, [1, 2], 1 << 30, false]);
  t.same(statusConfigOf(config!).http!.caches, [
    { name: 'one', zoneSize: 1 << 20, maxSize: 1 << 30 },
    { name: 'two', zoneSize: 65536, maxSize: 30 << 20, shards: [{ path: '/mnt/a', maxSize: 10 << 20 }, { path: '/mnt/b', maxSize: 20 << 20 }] },
  ]);
});

const BAD: Array<[string, string, RegExp]> = [
  ['no keys_zone', 'proxy_cache_path /x levels=1:2;', /"proxy_cache_path" must have "keys_zone" parameter/],
  ['bad levels', 'proxy_cache_path /x levels=1:3 keys_zone=z:1m;', /invalid "levels" "1:3"/],
  ['four levels', 'proxy_cache_path /x levels=1:1:1:1 keys_zone=z:1m;', /invalid "levels"/],
  ['bad size', 'proxy_cache_path /x keys_zone=z:lots;', /invalid keys zone size "lots"/],
  ['tiny zone', 'proxy_cache_path /x keys_zone=z:1k;', /keys zone "z" is too small/],
  ['no size first', 'proxy_cache_path /x keys_zone=z;', /needs a size/],
  ['one path twice', 'proxy_cache_path /x keys_zone=z:1m; proxy_cache_path /x keys_zone=y:1m;', /uses the "\/x" cache path, which is used by cache "z" already/],
  ['bad max_size', 'proxy_cache_path /x keys_zone=z:1m max_size=big;', /invalid "max_size" value "big"/],
  ['bad inactive', 'proxy_cache_path /x keys_zone=z:1m inactive=soon;', /invalid time value "soon"/],
  ['unknown parameter', 'proxy_cache_path /x keys_zone=z:1m purger=on;', /invalid parameter "purger=on"/],
  ['unknown zone', 'server { listen 127.0.0.1:8080; location / { proxy_pass http://127.0.0.1:9; proxy_cache nope; } }', /"proxy_cache" zone "nope" is unknown/],
  ['bad valid status', 'proxy_cache_valid 700 1m;', /invalid status "700"/],
  ['bad valid time', 'proxy_cache_valid 200 forever;', /invalid time value "forever"/],
  ['bad method', 'proxy_cache_methods PUT;', /invalid value "PUT"/],
  ['bad min_uses', 'proxy_cache_min_uses 0;', /invalid value "0"/],
  ['unknown variable', 'proxy_cache_key $nope;', /unknown "nope" variable/],
  ['bad use_stale', 'proxy_cache_use_stale sometimes;', /invalid value "sometimes"/],
  ['bad lock', 'proxy_cache_lock maybe;', /it must be "on" or "off"/],
  ['bad convert_head', 'proxy_cache_convert_head yes;', /it must be "on" or "off"/],
  ['add_header variable', 'add_header X $nope;', /unknown "nope" variable/],
  ['add_header name', 'add_header "X Y" 1;', /invalid header name/],
  ['add_header parameter', 'add_header X 1 sometimes;', /invalid parameter "sometimes"/],
  ['keys zone of an upstream', 'proxy_cache_path /x keys_zone=b:1m;\nupstream b { server 127.0.0.1:9; }', /keys zone "b" is the zone of upstream "b" already/],
  ['proxy_cache_path in server', 'server { listen 127.0.0.1:8080; proxy_cache_path /x keys_zone=z:1m; }', /"proxy_cache_path" directive is not allowed here/],
];

for (const [name, text, message] of BAD)
  t.test(`refused: ${name}`, async (t) => {
    const file = write(`http {\n${text}\n}\n`);
    const { config, errors } = loadConfig(file);
    t.equal(config, undefined);
    const shown = errors.map(formatConfigError).join('\n');
    t.match(shown, message);
    t.match(shown, `${file}:2`, 'names the file and line');
  });

t.test('zonal -t: the same refusal, and the good file passes', async (t) => {
  const bad = await checkFile(write('http {\nproxy_cache_valid 200 forever;\n}\n'));
  t.not(bad.code, 0);
  t.match(bad.err, /invalid time value "forever"/);
  const good = await checkFile(write(GOOD));
  t.equal(good.code, 0, good.err);
});
