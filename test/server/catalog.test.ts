// What the status tree lists for a configuration (statusConfigOf): server and location
// zones, and every upstream, implicit ones too, with its peers as /config holds them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { slabZones } from '../../src/metrics/catalog.js';
import { stateFileText } from '../../src/metrics/peers.js';
import { statusConfigOf } from '../../src/server/catalog.js';
import { formatConfigError, loadConfig } from '../../src/server/config/load.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zonal-catalog-'));
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));

const CONF = [
  'http {',
  '  upstream backend {',
  '    zone backend_zone 256k;',
  '    server 127.0.0.1:8081 weight=3 max_conns=100 max_fails=2 fail_timeout=30s slow_start=1500ms sid=a1;',
  '    server [0::1]:8082 backup;',
  '    server localhost:8083 down max_fails=0 fail_timeout=1m slow_start=2s;',
  '    server 127.0.0.1:8084 weight=1 max_fails=1 fail_timeout=10s;',
  '    least_conn;',
  '    queue 10;',
  '    response_time_factor 50;',
  '  }',
  '  upstream hashed { hash $uri; zone hashed_zone; server 10.0.0.1; }',
  '  upstream picked { random two; server 10.0.0.2:81; }',
  '  upstream sticky { ip_hash; server 10.0.0.3:82; }',
  '  server {',
  '    listen 8080;',
  '    listen 8443 ssl;',
  '    ssl_certificate c.pem;',
  '    ssl_certificate_key k.pem;',
  '    status_zone site;',
  '    location / { status_zone pages; proxy_pass http://backend; }',
  '    location /direct/ { proxy_pass http://localhost:8091/; }',
  '    location /again/ { status_zone pages; proxy_pass http://127.0.0.1:8091; }',
  '  }',
  '  server {',
  '    listen 8081;',
  '    status_zone site;',
  '  }',
  '  server {',
  '    listen 9000 admin;',
  '    location /status/ { api /status/; }',
  '  }',
  '}',
].join('\n');

fs.writeFileSync(path.join(dir, 'zonal.conf'), CONF);
fs.writeFileSync(path.join(dir, 'c.pem'), 'c');
fs.writeFileSync(path.join(dir, 'k.pem'), 'k');

t.test('zones, upstreams and peers as the status tree and /config take them', async (t) => {
  const { config, errors } = loadConfig(path.join(dir, 'zonal.conf'));
  if (!config) throw new Error(errors.map(formatConfigError).join('\n'));
  const status = statusConfigOf(config);
  t.strictSame(status, {
    http: {
      serverZones: [{ name: 'site', ssl: true }],
      locationZones: ['pages'],
      upstreams: [
        {
          name: 'backend',
          zone: 'backend_zone',
          zoneSize: 256 * 1024,
          peers: [
            { server: '127.0.0.1:8081', weight: 3, maxConns: 100, maxFails: 2, failTimeout: 30, slowStart: 1.5, sid: 'a1' },
            { server: '[0::1]:8082', name: '[::1]:8082', backup: true },
            { server: 'localhost:8083', name: '127.0.0.1:8083', maxFails: 0, failTimeout: 60, slowStart: 2, down: true },
            // Written out, the defaults are still defaults: as a peer /config made with `{}`.
            { server: '127.0.0.1:8084' },
          ],
          queue: true,
          responseTimeFactor: 50,
          method: 'least_conn',
        },
        { name: 'hashed', zone: 'hashed_zone', peers: [{ server: '10.0.0.1', name: '10.0.0.1:80' }], responseTimeFactor: 90, method: 'hash' },
        { name: 'picked', peers: [{ server: '10.0.0.2:81' }], responseTimeFactor: 90, method: 'random' },
        { name: 'sticky', peers: [{ server: '10.0.0.3:82' }], responseTimeFactor: 90, method: 'ip_hash' },
        // The implicit upstream of both proxy_pass: every proxied request is counted.
        { name: '127.0.0.1:8091', peers: [{ server: 'localhost:8091', name: '127.0.0.1:8091' }], responseTimeFactor: 90, method: 'round_robin' },
      ],
    },
  });

  const upstreams = status.http!.upstreams!;
  t.equal(
    stateFileText(upstreams[0].peers),
    [
      'server 127.0.0.1:8081 weight=3 max_conns=100 max_fails=2 fail_timeout=30s slow_start=1500ms sid=a1;',
      'server [0::1]:8082 backup;',
      'server localhost:8083 max_fails=0 fail_timeout=60s slow_start=2s down;',
      'server 127.0.0.1:8084;',
      '',
    ].join('\n'),
    'the units are those of /config: a state file writes the peers back as the server directive takes them',
  );
  t.same(
    slabZones(status, 2).map((z) => z.name),
    ['backend_zone', 'hashed_zone', 'picked', 'sticky', '127.0.0.1:8091'],
    "a zone of the configured size, or the runtime's; an upstream without one has its own name's",
  );
  t.equal(slabZones(status, 2)[0].size, 256 * 1024);
});

t.test('no http block, no upstream', async (t) => {
  fs.writeFileSync(path.join(dir, 'empty.conf'), 'http {\n}\n');
  const { config } = loadConfig(path.join(dir, 'empty.conf'));
  t.strictSame(statusConfigOf(config!), { http: { serverZones: [], locationZones: [], upstreams: [] } });
});
