// The limits module's directives: what they resolve to in each location (nginx's
// inheritance), and every bad input refused with its file and line.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { formatConfigError, loadConfig } from '../../../src/server/config/load.js';
import { statusConfigOf } from '../../../src/server/catalog.js';
import { checkFile } from '../zonal.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'zonal-limits-conf-'));
t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));

function write(text: string): string {
  const dir = fs.mkdtempSync(path.join(root, 'case-'));
  const file = path.join(dir, 'zonal.conf');
  fs.writeFileSync(file, text);
  return file;
}

const GOOD = `http {
  limit_req_zone $binary_remote_addr zone=perip:1m rate=10r/s;
  limit_req_zone "$server_name:$uri" zone=peruri:64k rate=30r/m;
  limit_conn_zone $remote_addr zone=conns:32k;
  limit_req zone=perip burst=5;
  limit_req_status 429;
  server {
    listen 127.0.0.1:8080;
    server_name site;
    limit_conn conns 10;
    location / { }
    location /api/ {
      limit_req zone=peruri burst=2 nodelay;
      limit_req zone=perip delay=3 burst=8;
      limit_req_dry_run on;
      limit_conn_log_level warn;
      location /api/inner/ { limit_conn conns 1; limit_conn_status 444; }
    }
  }
}
`;

t.test('limits resolve with nginx inheritance', async (t) => {
  const { config, errors } = loadConfig(write(GOOD));
  t.same(errors, []);
  const http = config!.http!;
  t.same(http.limitZones.map((z) => [z.kind, z.name, z.key, z.size, z.rate]), [
    ['req', 'perip', '$binary_remote_addr', 1 << 20, 10],
    ['req', 'peruri', '$server_name:$uri', 64 << 10, 0.5],
    ['conn', 'conns', '$remote_addr', 32 << 10, undefined],
  ]);
  const server = http.servers[0];
  const [plain, api] = server.locations;
  t.same(server.limits?.reqs, [{ zone: 'perip', key: '$binary_remote_addr', rate: 10, burst: 5, delay: 0 }], 'the server inherits http');
  t.same(plain.limits, {
    reqs: [{ zone: 'perip', key: '$binary_remote_addr', rate: 10, burst: 5, delay: 0 }],
    conns: [{ zone: 'conns', key: '$remote_addr', limit: 10 }],
    reqStatus: 429,
    connStatus: 503,
    reqDryRun: false,
    connDryRun: false,
    reqLogLevel: 'error',
    connLogLevel: 'error',
  });
  t.same(api.limits?.reqs.map((r) => [r.zone, r.burst, r.delay]), [['peruri', 2, Infinity], ['perip', 8, 3]], 'a level with limit_req replaces the outer ones');
  t.equal(api.limits?.reqDryRun, true);
  const inner = api.locations[0].limits!;
  t.same(inner.conns, [{ zone: 'conns', key: '$remote_addr', limit: 1 }]);
  t.same([inner.reqs.length, inner.reqDryRun, inner.connStatus, inner.connLogLevel], [2, true, 444, 'warn'], 'the rest inherits');
  const status = statusConfigOf(config!);
  t.same(status.http?.limitReqs, [{ name: 'perip', zoneSize: 1 << 20, rate: 10 }, { name: 'peruri', zoneSize: 64 << 10, rate: 0.5 }]);
  t.same(status.http?.limitConns, [{ name: 'conns', zoneSize: 32 << 10 }]);
});

t.test('no limits: nothing in the model', async (t) => {
  const { config } = loadConfig(write('http { server { listen 127.0.0.1:8080; location / { } } }\n'));
  t.equal(config!.http!.servers[0].locations[0].limits, undefined);
  t.same(config!.http!.limitZones, []);
  t.equal(statusConfigOf(config!).http?.limitReqs, undefined);
});

const BAD: Array<[string, string, RegExp]> = [
  ['limit_req_zone $remote_addr zone=a:1m rate=0r/s;', 'a zero rate', /invalid rate "rate=0r\/s"/],
  ['limit_req_zone $remote_addr zone=a:1m rate=10r/h;', 'a rate per hour', /invalid rate "rate=10r\/h"/],
  ['limit_req_zone $remote_addr zone=a:1m rate=ten;', 'a rate that is no number', /invalid rate "rate=ten"/],
  ['limit_req_zone $remote_addr zone=a:1m burst=1;', 'an unknown parameter', /invalid parameter "burst=1"/],
  ['limit_req_zone $remote_addr zone=a:1m x=1;', 'no rate', /invalid parameter "x=1"/],
  ['limit_req_zone $remote_addr rate=1r/s foo=1;', 'no zone', /invalid parameter "foo=1"/],
  ['limit_req_zone $remote_addr rate=1r/s zone=a;', 'a zone without a size', /invalid zone size "a"/],
  ['limit_req_zone $remote_addr zone=a:16k rate=1r/s;', 'a zone below 8 pages', /zone "a" is too small: at least 32k \(8 pages\)/],
  ['limit_req_zone $remote_addr zone=a:lots rate=1r/s;', 'a bad size', /invalid zone size "a:lots"/],
  ['limit_req_zone $nope zone=a:1m rate=1r/s;', 'an unknown variable', /unknown "nope" variable/],
  ['limit_conn_zone $remote_addr zone=a:8k;', 'a small connection zone', /zone "a" is too small/],
  ['limit_conn_zone $remote_addr;', 'a connection zone without a zone', /invalid number of arguments in "limit_conn_zone"/],
  ['limit_conn_zone $remote_addr zone=a:1m; limit_req_zone $uri zone=a:1m rate=1r/s;', 'one name twice', /shared memory zone "a" is already declared by "limit_conn_zone"/],
  ['limit_req zone=nowhere;', 'a limit of an unknown zone', /unknown limit_req_zone "nowhere"/],
  ['limit_conn nowhere 1;', 'a connection limit of an unknown zone', /unknown limit_conn_zone "nowhere"/],
  ['limit_req_zone $uri zone=z:1m rate=1r/s; limit_req zone=z burst=0;', 'burst=0', /invalid burst value "burst=0"/],
  ['limit_req_zone $uri zone=z:1m rate=1r/s; limit_req zone=z delay=x;', 'a bad delay', /invalid delay value "delay=x"/],
  ['limit_req_zone $uri zone=z:1m rate=1r/s; limit_req zone=z nodelay delay=2;', 'nodelay and delay=', /"nodelay" and "delay=" cannot be used together/],
  ['limit_req_zone $uri zone=z:1m rate=1r/s; limit_req zone=z; limit_req zone=z;', 'the same zone twice', /"limit_req zone=z" is duplicate/],
  ['limit_req burst=2;', 'limit_req without a zone', /"limit_req" must have "zone" parameter/],
  ['limit_conn_zone $uri zone=z:1m; limit_conn z 0;', 'a zero connection limit', /invalid number of connections "0"/],
  ['limit_conn_zone $uri zone=z:1m; limit_conn z 70000;', 'a connection limit over 65535', /invalid number of connections "70000"/],
  ['limit_req_status 200;', 'a status that is no error', /invalid value "200" in "limit_req_status" directive, it must be from 400 to 599/],
  ['limit_conn_dry_run yes;', 'a flag that is not on or off', /invalid value "yes" in "limit_conn_dry_run"/],
  ['limit_req_log_level debug;', 'a log level nginx has but zonal does not show', /invalid value "debug" in "limit_req_log_level"/],
  ['upstream u { server 127.0.0.1:1; } limit_req_zone $uri zone=u:1m rate=1r/s;', 'the zone of an upstream', /shared memory zone "u" is already used by upstream "u"/],
];

t.test('bad limits are refused with their file and line, by -t too', async (t) => {
  for (const [line, what, message] of BAD) {
    const file = write(`http {\n  server { listen 127.0.0.1:8080; }\n  ${line}\n}\n`);
    const { config, errors } = loadConfig(file);
    t.equal(config, undefined, what);
    t.match(errors.map(formatConfigError).join('\n'), message, what);
    t.ok(errors.every((e) => e.file === file && e.line === 3), `${what}: at ${file}:3`);
  }
  const wrong = write('http {\n  server {\n    listen 127.0.0.1:8080;\n    limit_req_zone $uri zone=z:1m rate=1r/s;\n  }\n}\n');
  t.match(loadConfig(wrong).errors.map(formatConfigError), [`zonal: [emerg] "limit_req_zone" directive is not allowed here in ${wrong}:4`]);
  const admin = write('http {\n  limit_conn_zone $uri zone=z:1m;\n  server {\n    listen 127.0.0.1:8081 admin;\n    limit_conn z 1;\n  }\n}\n');
  t.match(loadConfig(admin).errors.map(formatConfigError), [/"limit_conn" directive is not allowed in an admin server in .*:5/]);

  const tested = await checkFile(write(`http {\n  server { listen 127.0.0.1:8080; limit_req zone=missing; }\n}\n`));
  t.not(tested.code, 0, '-t fails');
  t.match(tested.err, /unknown limit_req_zone "missing" in .*zonal\.conf:2/);
  const good = await checkFile(write(GOOD));
  t.equal(good.code, 0, `-t passes the good configuration: ${good.err}`);
});
