// status_zone_histogram: its checks with file and line, its inheritance (http -> server ->
// location, http -> upstream, stream -> stream upstream), and what the catalog says of
// each zone's and upstream's bounds.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { formatConfigError, loadConfig } from '../../../src/server/config/load.js';
import { statusConfigOf } from '../../../src/server/catalog.js';
import { DEFAULT_BOUNDS } from '../../../src/metrics/histograms.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'zonal-hist-'));
t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));

function load(text: string) {
  const dir = fs.mkdtempSync(path.join(root, 'case-'));
  const file = path.join(dir, 'zonal.conf');
  fs.writeFileSync(file, text);
  const { config, errors } = loadConfig(file, { cpus: 2 });
  return { config, errors: errors.map(formatConfigError), file };
}

t.test('bounds are inherited as nginx settings are, and reach the catalog', (t) => {
  const { config, errors } = load(`
http {
    status_zone_histogram 5 50ms 0.5s 5s;
    upstream own {
        server 127.0.0.1:9001;
        status_zone_histogram 1 10 100;
    }
    upstream inherits {
        server 127.0.0.1:9002;
    }
    server {
        listen 127.0.0.1:9100;
        status_zone site;
        location /a/ { status_zone a; }
        location /b/ { status_zone b; status_zone_histogram off; }
        location /c/ { status_zone c; status_zone_histogram on; }
        location /d/ { status_zone d; status_zone_histogram 2.5 1000; }
        location /p/ { proxy_pass http://127.0.0.1:9003; }
    }
    server {
        listen 127.0.0.1:9101;
        status_zone other;
        status_zone_histogram off;
    }
}
stream {
    status_zone_histogram 1s 10s;
    upstream tcp { server 127.0.0.1:9004; }
    upstream tcp_default { server 127.0.0.1:9005; status_zone_histogram on; }
    server { listen 127.0.0.1:9102; proxy_pass tcp; }
}
`);
  t.same(errors, []);
  const c = statusConfigOf(config!);
  const outer = [5, 50, 500, 5000];
  t.same(c.http!.serverZones, [{ name: 'site', histogram: outer }, { name: 'other' }], 'server zones: their server\'s setting (off: none)');
  t.same(c.http!.locationHistograms, { a: outer, c: DEFAULT_BOUNDS, d: [2.5, 1000] }, 'location zones: their location\'s ("on": the default bounds; b is off)');
  const upstream = (name: string) => c.http!.upstreams!.find((u) => u.name === name)?.histogram;
  t.same(upstream('own'), [1, 10, 100], 'an upstream\'s own bounds');
  t.same(upstream('inherits'), outer, 'an upstream inherits the http block\'s');
  t.same(upstream('127.0.0.1:9003'), outer, 'so does the implicit upstream of a proxy_pass address');
  const tcp = (name: string) => c.stream!.upstreams!.find((u) => u.name === name)!;
  t.same(tcp('tcp').histogram, [1000, 10000], 'a stream upstream inherits the stream block\'s');
  t.same(tcp('tcp_default').histogram, DEFAULT_BOUNDS, '"on": the default bounds');
  t.end();
});

t.test('without the directive there are no histograms: the tree is Angie\'s', (t) => {
  const { config } = load(`http { upstream u { server 127.0.0.1:9001; } server { listen 127.0.0.1:9100; status_zone s; location / { status_zone l; proxy_pass http://u; } } }
stream { upstream t { server 127.0.0.1:9002; } server { listen 127.0.0.1:9101; proxy_pass t; } }\n`);
  const c = statusConfigOf(config!);
  t.same(c.http!.serverZones, [{ name: 's' }]);
  t.notOk(c.http!.locationHistograms);
  t.notOk('histogram' in c.http!.upstreams![0]);
  t.notOk('histogram' in c.stream!.upstreams![0]);
  t.end();
});

t.test('bad bounds are configuration errors naming file and line', (t) => {
  const cases: Array<[string, RegExp]> = [
    ['status_zone_histogram 10 5;', /bound "5" in "status_zone_histogram" directive is not above the one before it/],
    ['status_zone_histogram 10 10;', /bound "10" .* is not above the one before it/],
    ['status_zone_histogram 0 5;', /invalid bound "0" in "status_zone_histogram" directive/],
    ['status_zone_histogram -1;', /invalid bound "-1"/],
    ['status_zone_histogram 5m;', /invalid bound "5m"/],
    ['status_zone_histogram fast;', /invalid bound "fast"/],
    ['status_zone_histogram 1 off;', /invalid bound "off"/],
    [`status_zone_histogram ${Array.from({ length: 33 }, (_, i) => i + 1).join(' ')};`, /invalid number of arguments in "status_zone_histogram" directive/],
  ];
  for (const [line, message] of cases) {
    const { config, errors, file } = load(`http {\n    server {\n        listen 127.0.0.1:9100;\n        ${line}\n    }\n}\n`);
    t.notOk(config, `${line}: refused`);
    t.equal(errors.length, 1, `${line}: one error`);
    t.match(errors[0], message, line);
    t.match(errors[0], `${file}:4`, `${line}: the file and line`);
  }
  const { errors } = load(`http { server { listen 127.0.0.1:9100 admin; status_zone_histogram 5; } }\n`);
  t.equal(errors.length, 1, 'not in an admin server, which counts nothing');
  t.end();
});
