// The stream block's configuration: the resolved model (the stream block's settings
// inherited by its servers, nginx's defaults, implicit upstreams of addresses), every bad
// input refused with its file and line, and the status catalog it makes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { statusConfigOf } from '../../../src/server/catalog.js';
import { formatConfigError, loadConfig } from '../../../src/server/config/load.js';
import type { ServerConfig } from '../../../src/server/config/model.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'zonal-stream-conf-'));
t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));

function write(text: string): string {
  const dir = fs.mkdtempSync(path.join(root, 'case-'));
  fs.writeFileSync(path.join(dir, 'cert.pem'), 'cert');
  fs.writeFileSync(path.join(dir, 'key.pem'), 'key');
  fs.writeFileSync(path.join(dir, 'zonal.conf'), text);
  return path.join(dir, 'zonal.conf');
}

function load(text: string): ServerConfig {
  const { config, errors } = loadConfig(write(text));
  if (!config) throw new Error(errors.map(formatConfigError).join('\n'));
  return config;
}

/** The errors of a configuration, as `-t` prints them, file name shortened. */
function errorsOf(text: string): string[] {
  const file = write(text);
  return loadConfig(file).errors.map((e) => formatConfigError(e).replace(file, 'zonal.conf').replace(path.dirname(file), '<dir>'));
}

const GOOD = `
stream {
    proxy_connect_timeout 5s;
    proxy_timeout 1m;
    allow 127.0.0.1;
    deny all;
    ssl_certificate cert.pem;
    ssl_certificate_key key.pem;
    upstream backend {
        zone backend 128k;
        hash $remote_addr consistent;
        server 127.0.0.1:9001 weight=2 max_conns=10 max_fails=3 fail_timeout=5s;
        server 127.0.0.1:9002 down;
    }
    upstream ramp {
        least_conn;
        server 127.0.0.1:9003 slow_start=10s;
        server 127.0.0.1:9004 backup;
    }
    server {
        listen 127.0.0.1:7001;
        status_zone tcp;
        proxy_pass backend;
        proxy_next_upstream off;
    }
    server {
        listen 127.0.0.1:7002 ssl;
        listen 127.0.0.1:7004 ssl proxy_protocol;
        status_zone tls;
        allow all;
        ssl_handshake_timeout 2s;
        proxy_ssl on;
        proxy_next_upstream_tries 2;
        proxy_pass 127.0.0.1:9005;
    }
    server {
        listen 127.0.0.1:7003 proxy_protocol;
        proxy_pass ramp;
    }
}
`;

t.test('the resolved model', async (t) => {
  const config = load(GOOD);
  const stream = config.stream!;
  t.equal(stream.servers.length, 3);
  const [tcp, tls, pp] = stream.servers;
  t.same(tcp.listens.map((l) => [l.host, l.port, l.ssl, l.proxyProtocol]), [['127.0.0.1', 7001, false, false]]);
  t.equal(tcp.statusZone, 'tcp');
  t.same(tcp.access.map((r) => [r.allow, r.address]), [
    [true, '127.0.0.1'],
    [false, 'all'],
  ], 'the stream block\'s rules');
  t.same(tcp.proxy, { upstream: 'backend', connectTimeout: 5000, timeout: 60_000, nextUpstream: false, nextUpstreamTries: 0, nextUpstreamTimeout: 0, proxyProtocol: false, ssl: false, halfClose: false });
  t.notOk(tcp.ssl, 'no ssl listen, no ssl');
  t.same(tls.access.map((r) => r.address), ['all'], 'a server\'s own rules replace the outer list');
  t.same(tls.listens.map((l) => [l.port, l.ssl, l.proxyProtocol]), [
    [7002, true, false],
    [7004, true, true],
  ], 'ssl and proxy_protocol on one listen');
  t.equal(tls.ssl!.handshakeTimeout, 2000);
  t.ok(tls.ssl!.certificate.endsWith('cert.pem'), 'the certificate, inherited, relative to the file');
  t.same(tls.proxy, { upstream: '127.0.0.1:9005', connectTimeout: 5000, timeout: 60_000, nextUpstream: true, nextUpstreamTries: 2, nextUpstreamTimeout: 0, proxyProtocol: false, ssl: true, halfClose: false });
  t.ok(pp.listens[0].proxyProtocol);
  t.notOk(pp.statusZone);
  const [backend, ramp, implicit] = stream.upstreams;
  t.same(backend.method, { kind: 'hash', key: '$remote_addr', consistent: true });
  t.same(backend.servers.map((s) => [s.address, s.weight, s.maxConns, s.maxFails, s.failTimeout, s.down]), [
    ['127.0.0.1:9001', 2, 10, 3, 5000, false],
    ['127.0.0.1:9002', 1, 0, 1, 10_000, true],
  ]);
  t.same(ramp.method, { kind: 'least_conn' });
  t.equal(ramp.servers[0].slowStart, 10_000);
  t.ok(ramp.servers[1].backup);
  t.equal(implicit.name, '127.0.0.1:9005');
  t.ok(implicit.implicit);
  t.equal(implicit.zone!.name, 'stream-127.0.0.1:9005', 'its own zone, apart from an http one of the address');
});

t.test('nginx\'s defaults', async (t) => {
  const config = load('stream { server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1:9001; } }\n');
  t.same(config.stream!.servers[0].proxy, { upstream: '127.0.0.1:9001', connectTimeout: 60_000, timeout: 600_000, nextUpstream: true, nextUpstreamTries: 0, nextUpstreamTimeout: 0, proxyProtocol: false, ssl: false, halfClose: false });
  t.same(config.stream!.servers[0].access, []);
  t.notOk(config.http, 'a stream block alone');
});

t.test('the status catalog: stream zones (ssl where a listen has it) and upstreams', async (t) => {
  const catalog = statusConfigOf(load(GOOD));
  t.same(catalog.stream!.serverZones, [{ name: 'tcp' }, { name: 'tls', ssl: true }]);
  t.same(
    catalog.stream!.upstreams!.map((u) => u.name),
    ['backend', 'ramp', '127.0.0.1:9005'],
  );
  t.same(catalog.stream!.upstreams![0].peers[0], { server: '127.0.0.1:9001', weight: 2, maxConns: 10, maxFails: 3, failTimeout: 5 });
  t.equal(catalog.stream!.upstreams![0].method, 'hash');
});

t.test('limit_conn: zones of the stream block, limits inherited or replaced by a server', async (t) => {
  const config = load(`
stream {
    limit_conn_zone $binary_remote_addr zone=client:64k;
    limit_conn_zone $server_port zone=port:64k;
    limit_conn client 10;
    server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1:9001; }
    server { listen 127.0.0.1:7002; limit_conn port 100; limit_conn_dry_run on; proxy_pass 127.0.0.1:9001; }
}
`);
  const [inherits, own] = config.stream!.servers;
  t.same(inherits.limits, { conns: [{ zone: 'client', key: '$binary_remote_addr', limit: 10 }], dryRun: false });
  t.same(own.limits, { conns: [{ zone: 'port', key: '$server_port', limit: 100 }], dryRun: true });
  t.same(statusConfigOf(config).stream!.limitConns, [
    { name: 'client', zoneSize: 65536 },
    { name: 'port', zoneSize: 65536 },
  ]);
  t.notOk('limits' in load('stream { server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1:9001; } }\n').stream!.servers[0]);
});

t.test('bad input, each with its file and line', async (t) => {
  const cases: Array<[string, string]> = [
    ['stream { server { listen 127.0.0.1:7001; } }', 'no handler for server: "proxy_pass" or "return" is missing in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; return $nope; } }', 'unknown "nope" variable in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_pass $nope; } }', 'unknown "nope" variable in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; return x; return y; } }', '"return" directive is duplicate in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; ssl_preread yes; return x; } }', 'invalid value "yes" in "ssl_preread" directive, it must be "on" or "off" in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; preread_buffer_size x; return x; } }', 'invalid value "x" in "preread_buffer_size" directive in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_protocol yes; return x; } }', 'invalid value "yes" in "proxy_protocol" directive, it must be "on" or "off" in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_next_upstream_timeout x; return x; } }', 'invalid value "x" in "proxy_next_upstream_timeout" directive in zonal.conf:1'],
    ['stream { server { proxy_pass 127.0.0.1:1; } }', 'no "listen" directive in server in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001 foo; proxy_pass 127.0.0.1:1; } }', 'invalid parameter "foo" in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_pass nowhere; } }', 'no upstream "nowhere" in stream in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1; } }', 'no port in upstream "127.0.0.1" in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_pass http://u; } }', 'invalid URL prefix in "http://u": a stream "proxy_pass" takes an upstream or an address in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001 ssl; proxy_pass 127.0.0.1:1; } }', 'no "ssl_certificate" is defined for the "listen ... ssl" directive in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001 ssl proxy_protocl; proxy_pass 127.0.0.1:1; } }', 'invalid parameter "proxy_protocl" in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1:1; proxy_timeout 0; } }', 'invalid value "0" in "proxy_timeout" directive in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1:1; proxy_next_upstream maybe; } }', 'invalid value "maybe" in "proxy_next_upstream" directive, it must be "on" or "off" in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1:1; deny 10.0.0.0/99; } }', 'invalid parameter "10.0.0.0/99" in "deny" directive in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1:1; location / { } } }', '"location" directive is not allowed here in zonal.conf:1'],
    ['stream { upstream u { server 127.0.0.1:1; ip_hash; } }', '"ip_hash" directive is not allowed here in zonal.conf:1'],
    ['stream { upstream u { server 127.0.0.1:1; keepalive 4; } }', '"keepalive" directive is not allowed here in zonal.conf:1'],
    ['stream { upstream u { server 127.0.0.1:1 sid=a; } }', 'invalid parameter "sid=a" in zonal.conf:1'],
    ['stream { upstream u { } }', 'no servers are inside upstream in zonal.conf:1'],
    ['stream { upstream u { server 127.0.0.1:1; } upstream U { server 127.0.0.1:2; } }', 'duplicate upstream "U" in zonal.conf:1'],
    ['stream { upstream u { random; server 127.0.0.1:1 slow_start=5s; } }', 'balancing method "random" does not support parameter "slow_start": only round robin and "least_conn" ramp a peer\'s weight in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1:1; } server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1:2; } }', 'a duplicate listen 127.0.0.1:7001 in zonal.conf:1'],
    [
      'http { server { listen 127.0.0.1:7001; } }\nstream { server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1:2; } }',
      'a duplicate listen 127.0.0.1:7001 in zonal.conf:2',
    ],
    [
      'http { upstream shared { zone z 64k; server 127.0.0.1:1; } }\nstream { upstream other { zone z 64k; server 127.0.0.1:2; } }',
      'shared memory zone "z" is already used by http upstream "shared" in zonal.conf:2',
    ],
    ['stream { listen 127.0.0.1:7001; }', '"listen" directive is not allowed here in zonal.conf:1'],
    ['http { server { listen 127.0.0.1:7001; proxy_timeout 1s; } }', '"proxy_timeout" directive is not allowed here in zonal.conf:1'],
    ['stream { } stream { }', '"stream" directive is duplicate in zonal.conf:1'],
    ['stream { limit_conn_zone $uri zone=z:64k; }', 'unknown "uri" variable in zonal.conf:1'],
    ['stream { limit_conn_zone $remote_addr zone=z; }', 'invalid zone size "z" in zonal.conf:1'],
    ['stream { limit_conn_zone $remote_addr z:64k; }', 'invalid parameter "z:64k" in zonal.conf:1'],
    ['stream { server { listen 127.0.0.1:7001; proxy_pass 127.0.0.1:1; limit_conn nowhere 1; } }', 'unknown limit_conn_zone "nowhere" in zonal.conf:1'],
    ['stream { limit_conn_zone $remote_addr zone=z:64k; limit_conn z 0; }', 'invalid number of connections "0", it must be from 1 to 65535 in zonal.conf:1'],
    [
      'http { limit_conn_zone $binary_remote_addr zone=z:64k; }\nstream { limit_conn_zone $remote_addr zone=z:64k; }',
      'shared memory zone "z" is already used by http limit_conn_zone "z" in zonal.conf:2',
    ],
    ['stream { limit_conn_zone $remote_addr zone=u:64k; upstream u { server 127.0.0.1:1; } }', 'shared memory zone "u" is already used by a stream upstream in zonal.conf:1'],
    ['stream { ssl_certificate nothere.pem; }', 'cannot read "<dir>/nothere.pem" of the "ssl_certificate" directive (ENOENT) in zonal.conf:1'],
  ];
  for (const [text, message] of cases) t.same(errorsOf(text + '\n'), [`zonal: [emerg] ${message}`], text);
});
