// `status_zone <key> zone=<name>:<count>` (Angie 1.8) through bin/zonal with two
// workers: a request's key names its zone, made at its first use by whichever worker
// serves it, up to `count` zones; past them, requests count in `<name>`, exactly. Server
// zones ($host, TLS handshakes in the zone of their connection's first request),
// location zones ($uri, regex captures, nested locations, `status_zone off`), one group
// across several locations, a reload that keeps the zones, and the configuration's checks.
import t from 'tap';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFileSync } from 'node:fs';
import { selfSigned } from '../helpers.js';
import { checkConfig, freePorts, getJson, Zonal } from './zonal.js';

const [site, secure, admin] = await freePorts(3);

const config = `
worker_processes 2;
http {
    server {
        listen 127.0.0.1:${site};
        status_zone $host zone=hosts:2;
        location / {
            status_zone $uri zone=uris:3;
            return 200 "ok\\n";
        }
        location /static/ {
            status_zone static;
            return 200 "static\\n";
        }
        location /nested/ {
            status_zone $uri zone=uris;
            return 200 "nested\\n";
            location /nested/off/ {
                status_zone off;
                return 200 "off\\n";
            }
            location /nested/inner/ {
                return 200 "inner\\n";
            }
        }
        location ~ ^/re/(\\w+)$ {
            status_zone re_$1 zone=caps:5;
            return 200 "re\\n";
        }
    }
    server {
        listen 127.0.0.1:${secure} ssl;
        status_zone $host zone=tls:1;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        location / {
            return 200 "secure\\n";
        }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / {
            api /;
        }
    }
}
`;

const { cert, key } = selfSigned('127.0.0.1');
const zonal = await Zonal.start({ 'zonal.conf': config, 'cert.pem': cert, 'key.pem': key });
t.teardown(() => zonal.stop());

const api = (path: string) => getJson(`http://127.0.0.1:${admin}/status/${path}`).then((r) => r.body);

/** One request on a connection of its own (so that both workers serve some), answered
 * with `return`: counted before its response is written, so a read after it sees it. */
function get(path: string, host: string, tls = false): Promise<{ status: number; body: string; pid?: string }> {
  return new Promise((resolve, reject) => {
    const options = { host: '127.0.0.1', port: tls ? secure : site, path, headers: { host }, agent: false, ...(tls ? { rejectUnauthorized: false, servername: 'localhost' } : {}) };
    const req = (tls ? httpsRequest : httpRequest)(options, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

interface Zone {
  requests: { total: number };
  responses: Record<string, number>;
  ssl?: { handshaked: number };
}

t.test('server zones by $host: two made, the rest in "hosts", exactly', async (t) => {
  // One after another, so that which hosts come first is known.
  const sent: Array<[string, number]> = [['a.example', 3], ['b.example', 2], ['c.example', 4], ['d.example', 1], ['a.example', 2]];
  for (const [host, n] of sent) for (let i = 0; i < n; i++) t.equal((await get('/static/', host)).status, 200);
  const zones = (await api('http/server_zones')) as Record<string, Zone>;
  t.same(Object.keys(zones), ['hosts', 'a.example', 'b.example', 'tls'], 'the group’s own zone, then its zones in the order made');
  t.equal(zones['a.example'].requests.total, 5);
  t.equal(zones['b.example'].requests.total, 2);
  t.equal(zones.hosts.requests.total, 5, 'c.example and d.example, past the count of 2');
  t.same(zones.hosts.responses, { '200': 5 });
  t.equal((await api('server')).generation, 0, 'no reload counted');
});

t.test('location zones by $uri, by a capture, one group over locations, and status_zone off', async (t) => {
  const paths = ['/1', '/2', '/1', '/3', '/4', '/5', '/nested/x', '/nested/inner/y', '/nested/off/z', '/re/abc', '/re/def', '/static/'];
  for (const p of paths) t.equal((await get(p, 'a.example')).status, 200, p);
  const zones = (await api('http/location_zones')) as Record<string, Zone>;
  t.same(Object.keys(zones), ['uris', '/1', '/2', '/3', 'static', 'caps', 're_abc', 're_def']);
  t.equal(zones['/1'].requests.total, 2);
  t.equal(zones['/2'].requests.total, 1);
  t.equal(zones['/3'].requests.total, 1);
  t.equal(zones.uris.requests.total, 4, '/4, /5 and the two nested ones: the group made its count of 3 already');
  t.equal(zones.re_abc.requests.total, 1, 'a regex capture in the key');
  t.equal(zones.static.requests.total, 13, 'a configured zone beside them (and the first test’s 12)');
  t.equal(zones.caps.requests.total, 0);
});

t.test('TLS: a handshake counts in the zone of its connection’s first request', async (t) => {
  for (const host of ['x.example', 'x.example', 'y.example']) t.equal((await get('/', host, true)).body, 'secure\n');
  const zones = (await api('http/server_zones')) as Record<string, Zone>;
  t.equal(zones['x.example'].requests.total, 2);
  t.equal(zones['x.example'].ssl!.handshaked, 2, 'two connections, two handshakes');
  t.equal(zones.tls.requests.total, 1, 'y.example, past the count of 1');
  t.equal(zones.tls.ssl!.handshaked, 1);
});

t.test('a reload that keeps the groups keeps their zones and counts', async (t) => {
  t.ok(await zonal.reload(), 'reloaded');
  t.equal((await get('/static/', 'b.example')).status, 200);
  t.equal((await get('/2', 'a.example')).status, 200);
  const [servers, locations, server] = await Promise.all([api('http/server_zones'), api('http/location_zones'), api('server')]);
  t.equal(server.generation, 1);
  t.same(Object.keys(servers).slice(0, 3), ['hosts', 'a.example', 'b.example']);
  t.equal(servers['b.example'].requests.total, 3, 'the zone went on from its count');
  t.equal(locations['/2'].requests.total, 2);
});

t.test('the configuration: keys need a group, counts and parameters are checked', async (t) => {
  const wrap = (directive: string) => `http { server { listen 127.0.0.1:1; location / { ${directive} return 200; } } }`;
  const cases: Array<[string, RegExp]> = [
    ['status_zone $host;', /"status_zone \$host" has variables: the zone a key names needs a group/],
    ['status_zone $host zone=h:0;', /invalid zone count "0" in "status_zone" directive/],
    ['status_zone $host zone=h:x;', /invalid zone count "x"/],
    ['status_zone $host zone=h:10001;', /invalid zone count "10001"/],
    ['status_zone $nope zone=h:2;', /unknown "nope" variable/],
    ['status_zone $host size=2;', /invalid parameter "size=2"/],
    ['status_zone off zone=h:2;', /invalid parameter "off"/],
    ['status_zone $host zone=a/b:2;', /invalid zone name "a\/b"/],
  ];
  for (const [directive, error] of cases) {
    const r = await checkConfig(wrap(directive));
    t.not(r.code, 0, directive);
    t.match(r.err, error, directive);
  }
  t.equal((await checkConfig(wrap('status_zone $host$uri zone=h:2;'))).code, 0, 'a key of several variables');
  // docs/runtime-zones.md's configuration, as written there.
  const doc = readFileSync(new URL('../../docs/runtime-zones.md', import.meta.url), 'utf8');
  const sample = /```nginx\n([\s\S]*?)```/.exec(doc)![1];
  t.same(await checkConfig(sample), { code: 0, err: 'zonal: configuration file <dir>/zonal.conf test is successful\n' }, "the docs' configuration loads");
  t.equal((await checkConfig(wrap('status_zone $http_x_tenant zone=h;'))).code, 0, 'no count: one zone');
});
