// The zonal server end to end: bin/zonal on a configuration, traffic this test makes
// itself, and the exact counts the admin listener (whose own traffic is not counted)
// reports for it.
import t from 'tap';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { selfSigned } from '../helpers.js';
import { RawClient, request } from '../transport/raw.js';
import { eventually, freePorts, getJson, runZonal, Zonal } from './zonal.js';

const [site, admin, secure] = await freePorts(3);
const USERS = `alice:{SHA}${createHash('sha1').update('wonderland').digest('base64')}\n`;

const config = (extra = '') => `
worker_processes 2;
http {
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        location / {
            status_zone root;
            return 200 "hello\\n";
        }
        location /files/ {
            status_zone files;
            root .;
        }
        location /api/ {
            api /;
        }
        location /private/ {
            allow 127.0.0.2;
            deny all;
            api /status/;
        }
        location ~ ^/zones/(\\w+)$ {
            api /status/http/server_zones/$1;
        }
        location /by-arg {
            api /status/http/location_zones/$arg_zone;
        }
        location /outer/ {
            status_zone outer;
            return 200 "outer\\n";
            location /outer/quiet/ {
                status_zone off;
                return 200 "quiet\\n";
            }
            location /outer/inner/ {
                return 200 "inner\\n";
            }
        }
        location /secure/ {
            auth_basic "zonal test";
            auth_basic_user_file users;
            api /status/;
        }
        ${extra}
    }
    server {
        listen 127.0.0.1:${secure} ssl;
        status_zone tls;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        ssl_handshake_timeout 300ms;
        location / {
            return 200 "secure\\n";
        }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / {
            api /;
        }
        location /guarded/ {
            deny all;
            api /status/;
        }
    }
}
`;

const { cert, key } = selfSigned('127.0.0.1');
const zonal = await Zonal.start({ 'zonal.conf': config(), users: USERS, 'cert.pem': cert, 'key.pem': key });
mkdirSync(join(zonal.dir, 'files'));
writeFileSync(join(zonal.dir, 'files', 'a.txt'), 'static text\n');
t.teardown(() => zonal.stop());

const api = (path: string) => getJson(`http://127.0.0.1:${admin}/status/${path}`).then((r) => r.body);

/** The numbers this test looks at, read in one go. */
async function snapshot() {
  const [connections, zones, locations] = await Promise.all([api('connections'), api('http/server_zones'), api('http/location_zones')]);
  return { connections, zones, locations };
}
type Snapshot = Awaited<ReturnType<typeof snapshot>>;

/** Waits until `check` holds of a fresh snapshot; the last one either way. */
async function settled(check: (s: Snapshot) => boolean): Promise<Snapshot> {
  let last = await snapshot();
  await eventually(async () => check((last = await snapshot())));
  return last;
}

const GET = (path: string) => request('GET', path);

t.test('10 requests on 2 keep-alive connections: exact connections, zone and location counts', async (t) => {
  const before = await snapshot();
  const clients = [await RawClient.connect(site), await RawClient.connect(site)];
  let sentBytes = 0;
  for (let i = 0; i < 10; i++) {
    const c = clients[i % 2];
    const bytes = GET('/');
    sentBytes += bytes.length;
    await c.send(bytes);
    const res = await c.read();
    t.equal(res.status, 200);
    t.equal(res.body.toString(), 'hello\n');
  }
  const receivedBytes = clients[0].socket.bytesRead + clients[1].socket.bytesRead;
  const d = (s: Snapshot, f: (x: Snapshot) => number) => f(s) - f(before);
  const after = await settled((s) => d(s, (x) => x.connections.idle) === 2 && d(s, (x) => x.zones.site.requests.total) === 10);
  t.equal(d(after, (x) => x.connections.accepted), 2, 'accepted 2');
  t.equal(d(after, (x) => x.connections.idle), 2, 'idle 2 afterwards');
  t.equal(d(after, (x) => x.connections.active), 0, 'none active');
  t.equal(d(after, (x) => x.connections.dropped), 0, 'none dropped');
  t.equal(d(after, (x) => x.zones.site.requests.total), 10, 'requests 10');
  t.equal(after.zones.site.requests.processing, 0);
  t.equal(d(after, (x) => x.zones.site.requests.discarded), 0);
  t.equal(d(after, (x) => x.zones.site.responses['200'] ?? 0), 10, '10 responses 200');
  t.equal(d(after, (x) => x.zones.site.data.received), sentBytes, 'data.received: the request bytes, headers included');
  t.equal(d(after, (x) => x.zones.site.data.sent), receivedBytes, 'data.sent: the response bytes, headers included');
  t.equal(d(after, (x) => x.locations.root.requests.total), 10, 'location zone: requests 10');
  t.equal(d(after, (x) => x.locations.root.data.sent), receivedBytes);
  t.notOk('processing' in after.locations.root.requests, 'a location zone has no processing');
  t.notOk('ssl' in after.zones.site, 'a server without ssl listens has no ssl object');

  for (const c of clients) c.destroy();
  const closed = await settled((s) => d(s, (x) => x.connections.idle) === 0);
  t.equal(d(closed, (x) => x.connections.idle), 0, 'idle back to 0 when the clients close');
  t.equal(d(closed, (x) => x.connections.active), 0);
  t.equal(d(closed, (x) => x.connections.dropped), 0, 'closed by the client: not dropped');
});

t.test('a client that disconnects mid-request is discarded; processing goes back to 0', async (t) => {
  const before = await snapshot();
  const c = await RawClient.connect(site);
  // The API reads a PUT's whole body before answering: this one never completes.
  await c.send(request('PUT', '/api/config/http/upstreams/u/servers/x', { 'Content-Length': 100 }, '{"weight":'));
  const during = await settled((s) => s.zones.site.requests.processing === before.zones.site.requests.processing + 1);
  t.equal(during.zones.site.requests.processing - before.zones.site.requests.processing, 1, 'processing while in flight');
  c.destroy();
  // The request's end and its connection's end are two events, which the reading
  // worker may see apart: wait for both.
  const after = await settled((s) => s.zones.site.requests.discarded - before.zones.site.requests.discarded === 1 && s.connections.active === before.connections.active);
  t.equal(after.zones.site.requests.discarded - before.zones.site.requests.discarded, 1, 'discarded 1');
  t.equal(after.zones.site.requests.total - before.zones.site.requests.total, 1);
  t.equal(after.zones.site.requests.processing, before.zones.site.requests.processing, 'processing back');
  const responses = (s: Snapshot) => Object.values(s.zones.site.responses as Record<string, number>).reduce((a, b) => a + b, 0);
  t.equal(responses(after), responses(before), 'no response counted');
  t.equal(after.connections.active, before.connections.active, 'the connection is gone');
});

t.test('dropped: closed by the server before any request; a client closing is not', async (t) => {
  const before = await snapshot();
  const bad = await RawClient.connect(site);
  await bad.send('NOT HTTP AT ALL\r\n\r\n');
  const res = await bad.read();
  t.equal(res.status, 400, 'a malformed request gets 400');
  await bad.waitClosed();
  const quiet = await RawClient.connect(site);
  quiet.destroy();
  const after = await settled((s) => s.connections.accepted - before.connections.accepted === 2 && s.connections.active === before.connections.active);
  t.equal(after.connections.accepted - before.connections.accepted, 2);
  t.equal(after.connections.dropped - before.connections.dropped, 1, 'only the malformed one is dropped');
  t.equal(after.zones.site.requests.total, before.zones.site.requests.total, 'no request reached a server');
});

t.test('root: static files, and their location zone', async (t) => {
  const before = await snapshot();
  const ok = await fetch(`http://127.0.0.1:${site}/files/a.txt`);
  t.equal(ok.status, 200);
  t.equal(ok.headers.get('content-type'), 'text/plain');
  t.equal(await ok.text(), 'static text\n');
  const missing = await fetch(`http://127.0.0.1:${site}/files/nope.txt`);
  await missing.text();
  t.equal(missing.status, 404);
  const code = (x: Snapshot, c: string): number => x.locations.files?.responses[c] ?? 0;
  // Requests count as they arrive, responses as they end: wait for the responses.
  const after = await settled((s) => code(s, '200') - code(before, '200') === 1 && code(s, '404') - code(before, '404') === 1);
  t.equal(code(after, '200') - code(before, '200'), 1);
  t.equal(code(after, '404') - code(before, '404'), 1);
  t.equal(after.locations.files.requests.total - (before.locations.files?.requests.total ?? 0), 2);
});

t.test('TLS: handshakes, session reuse across workers, failures', async (t) => {
  const before = await snapshot();
  const handshake = (session?: Buffer) =>
    new Promise<{ socket: TLSSocket; session?: Buffer }>((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: secure, rejectUnauthorized: false, ...(session ? { session } : {}) });
      let got: Buffer | undefined;
      socket.on('session', (s) => (got = s));
      socket.once('error', reject);
      socket.once('secureConnect', () => {
        socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
        let text = '';
        socket.on('data', (d) => (text += d));
        socket.once('end', () => {
          t.match(text, /^HTTP\/1\.1 200 OK[\s\S]*secure\n$/, 'served over TLS');
          resolve({ socket, session: got });
        });
      });
    });
  const first = await handshake();
  t.ok(first.session, 'a session ticket came');
  t.notOk(first.socket.isSessionReused());
  const second = await handshake(first.session);
  t.ok(second.socket.isSessionReused(), 'the session resumed');

  // Not TLS at all: a failed handshake, and a connection the server dropped.
  const raw = await RawClient.connect(secure);
  await raw.send('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  await raw.waitClosed();

  const after = await settled((s) => s.zones.tls.ssl.failed - before.zones.tls.ssl.failed === 1 && s.zones.tls.ssl.handshaked - before.zones.tls.ssl.handshaked === 2);
  t.equal(after.zones.tls.ssl.handshaked - before.zones.tls.ssl.handshaked, 2, 'handshaked 2');
  t.equal(after.zones.tls.ssl.reuses - before.zones.tls.ssl.reuses, 1, 'reuses 1');
  t.equal(after.zones.tls.ssl.failed - before.zones.tls.ssl.failed, 1, 'failed 1');
  t.equal(after.zones.tls.ssl.timedout - before.zones.tls.ssl.timedout, 0);
  t.equal(after.zones.tls.requests.total - before.zones.tls.requests.total, 2);
  t.equal(after.zones.tls.responses['200'] - (before.zones.tls.responses['200'] ?? 0), 2);
  t.equal(after.connections.dropped - before.connections.dropped, 1, 'the failed handshake is a dropped connection');
});

t.test('a handshake that stalls times out: ssl.timedout, and a dropped connection', async (t) => {
  const before = await snapshot();
  const idle = await RawClient.connect(secure);
  await idle.waitClosed(5000);
  const after = await settled((s) => s.zones.tls.ssl.timedout - before.zones.tls.ssl.timedout === 1 && s.connections.dropped - before.connections.dropped === 1);
  t.equal(after.zones.tls.ssl.timedout - before.zones.tls.ssl.timedout, 1, 'timedout 1');
  t.equal(after.zones.tls.ssl.failed - before.zones.tls.ssl.failed, 0, 'not counted as failed too');
  t.equal(after.connections.dropped - before.connections.dropped, 1, 'dropped 1');
});

t.test('api paths with variables: regex captures and $arg_', async (t) => {
  const zone = await getJson(`http://127.0.0.1:${site}/zones/site`);
  t.equal(zone.status, 200);
  t.same(Object.keys(zone.body), ['requests', 'responses', 'data'], '$1 named the server zone');
  const byArg = await getJson(`http://127.0.0.1:${site}/by-arg?zone=root`);
  t.equal(byArg.status, 200);
  t.same(Object.keys(byArg.body), ['requests', 'responses', 'data'], '$arg_zone named the location zone');
  const missing = await getJson(`http://127.0.0.1:${site}/zones/nope`);
  t.equal(missing.status, 404);
  t.equal(missing.body.error, 'PathNotFound');
});

t.test('status_zone in nested locations: inherited, and off', async (t) => {
  const before = await snapshot();
  for (const [path, text] of [['/outer/x', 'outer\n'], ['/outer/inner/x', 'inner\n'], ['/outer/quiet/x', 'quiet\n']])
    t.equal(await fetch(`http://127.0.0.1:${site}${path}`).then((r) => r.text()), text, path);
  const after = await settled((s) => s.zones.site.requests.total - before.zones.site.requests.total === 3 && s.locations.outer.requests.total - (before.locations.outer?.requests.total ?? 0) === 2);
  t.equal(after.zones.site.requests.total - before.zones.site.requests.total, 3, 'all three in the server zone');
  t.equal(after.locations.outer.requests.total - (before.locations.outer?.requests.total ?? 0), 2, 'outer and inner in the outer zone; quiet in none');
});

t.test('access control in front of API locations: 403 and 401 in JSON', async (t) => {
  const denied = await getJson(`http://127.0.0.1:${site}/private/connections`);
  t.equal(denied.status, 403);
  t.same(Object.keys(denied.body), ['error', 'description']);
  t.equal(denied.body.error, 'Forbidden');
  // The same request from 127.0.0.2, which is allowed.
  const c = await new Promise<RawClient>((resolve, reject) => {
    const socket = tcpConnect({ host: '127.0.0.1', port: site, localAddress: '127.0.0.2' }, () => resolve(RawClient.wrap(socket)));
    socket.once('error', reject);
  });
  await c.send(GET('/private/connections'));
  const allowed = await c.read();
  t.equal(allowed.status, 200, 'allowed from 127.0.0.2');
  t.ok('accepted' in JSON.parse(allowed.body.toString()));
  c.destroy();

  const none = await getJson(`http://127.0.0.1:${site}/secure/connections`);
  t.equal(none.status, 401);
  t.equal(none.headers.get('www-authenticate'), 'Basic realm="zonal test"');
  t.equal(none.body.error, 'Unauthorized');
  const basic = (user: string, password: string) => ({ headers: { Authorization: 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64') } });
  t.equal((await getJson(`http://127.0.0.1:${site}/secure/connections`, basic('alice', 'nope'))).status, 401, 'a wrong password');
  t.equal((await getJson(`http://127.0.0.1:${site}/secure/connections`, basic('bob', 'wonderland'))).status, 401, 'an unknown user');
  const good = await getJson(`http://127.0.0.1:${site}/secure/connections`, basic('alice', 'wonderland'));
  t.equal(good.status, 200);
  t.ok('accepted' in good.body);

  const adminDenied = await getJson(`http://127.0.0.1:${admin}/guarded/connections`);
  t.equal(adminDenied.status, 403, 'admin listeners apply deny too');
  t.equal(adminDenied.body.error, 'Forbidden');
});

t.test('the admin listener\'s own traffic is counted nowhere', async (t) => {
  const before = await snapshot();
  for (let i = 0; i < 5; i++) await api('connections');
  const after = await snapshot();
  t.equal(after.connections.accepted, before.connections.accepted);
  t.same(after.zones, before.zones);
});

t.test('SIGKILLed workers are replaced: totals kept, their connections no longer counted', async (t) => {
  const before = await snapshot();
  const workers = zonal.workers();
  t.equal(workers.length, 2, 'two workers');
  // Connections left idle in the workers: their shards count them until the workers die.
  const clients = await Promise.all([0, 1, 2, 3].map(() => RawClient.connect(site)));
  for (const c of clients) {
    await c.send(GET('/'));
    t.equal((await c.read()).status, 200);
  }
  const from = zonal.log.length;
  for (const pid of workers) process.kill(pid, 'SIGKILL');
  await zonal.waitLog(/exited \(SIGKILL\): starting another[\s\S]*exited \(SIGKILL\): starting another/, 10_000, from);
  t.ok(await eventually(async () => zonal.workers().length === 2 && !zonal.workers().some((p) => workers.includes(p)), 10_000), 'new workers took their places');
  await Promise.all(clients.map((c) => c.waitClosed()));
  // One new connection, found as soon as a worker accepts again, then kept alive.
  let fresh: RawClient | undefined;
  t.ok(
    await eventually(async () => {
      fresh = await RawClient.connect(site).catch(() => undefined);
      return !!fresh;
    }, 10_000),
    'accepting again',
  );
  for (let i = 0; i < 4; i++) {
    await fresh!.send(GET('/'));
    t.equal((await fresh!.read()).body.toString(), 'hello\n');
  }
  // The last answer's bytes reach the client before its worker counts it over: wait for both.
  const after = await settled((s) => s.zones.site.requests.total === before.zones.site.requests.total + 8 && s.zones.site.requests.processing === 0 && s.connections.idle === 1);
  t.equal(after.zones.site.requests.total, before.zones.site.requests.total + 8, 'totals kept, and counting on');
  t.equal(after.zones.site.requests.processing, 0);
  t.equal(after.connections.active, 0, 'no connection active');
  t.equal(after.connections.idle, 1, 'one idle connection: the new one, not the 4 that died with the workers');
  fresh!.destroy();
});

t.test('SIGHUP reloads: generation, load_time, counters kept; a bad configuration is refused', async (t) => {
  const server0 = await api('server');
  const before = await snapshot();
  const workers = zonal.workers();
  t.ok(await zonal.reload(config('location = /new { status_zone fresh; return 204; }')), 'reloaded');
  const server1 = await api('server');
  t.equal(server1.generation, server0.generation + 1, 'generation + 1');
  t.ok(Date.parse(server1.load_time) >= Date.parse(server0.load_time), 'load_time of the reload');
  t.ok(await eventually(async () => !zonal.workers().some((p) => workers.includes(p)), 10_000), 'the old workers drained and left');
  const res = await fetch(`http://127.0.0.1:${site}/new`);
  t.equal(res.status, 204, 'the new configuration serves');
  const after = await settled((s) => s.zones.site.requests.total === before.zones.site.requests.total + 1);
  t.equal(after.zones.site.requests.total, before.zones.site.requests.total + 1, 'the zone kept its counters');
  t.notOk('fresh' in before.locations, 'the new location zone was not there before');
  t.equal(after.locations.fresh?.requests.total, 1, 'the zone the reload added counts from zero');
  t.equal(after.locations.root.requests.total, before.locations.root.requests.total, 'the others keep theirs');

  t.notOk(await zonal.reload(config('location /broken { return; }')), 'refused');
  t.match(zonal.log, /reload refused/);
  const server2 = await api('server');
  t.equal(server2.generation, server1.generation, 'generation unchanged');
  t.equal((await fetch(`http://127.0.0.1:${site}/new`)).status, 204, 'the running configuration stays');
});

// nginx's graceful stop is QUIT (TERM is its fast one: test/server/core/signals.test.ts).
t.test('SIGQUIT: the request in flight finishes, then the zones are removed', async (t) => {
  const instance = `p${zonal.child.pid}`;
  t.ok(readdirSync('/dev/shm').some((f) => f.startsWith(`zonal.${instance}.`)), 'zones exist while running');
  const c = await RawClient.connect(site);
  await c.send(request('PUT', '/api/config/http/upstreams/u/servers/x', { 'Content-Length': 2 }, '{'));
  await settled((s) => s.zones.site.requests.processing === 1);
  zonal.child.kill('SIGQUIT');
  // Draining: the workers stop listening (the port refuses) while the request waits.
  const refused = () =>
    new Promise<boolean>((resolve) => {
      const s = tcpConnect(site, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(false)));
      s.once('error', () => resolve(true));
    });
  t.ok(await eventually(refused, 10_000), 'no longer accepting');
  t.notOk(c.closed, 'the connection with a request in flight stays');
  await c.send('}');
  const res = await c.read();
  t.equal(res.status, 404, 'the request in flight got its answer (no such upstream)');
  const exit = await zonal.waitExit();
  t.equal(exit.code, 0, 'exit code 0');
  t.notOk(readdirSync('/dev/shm').some((f) => f.startsWith(`zonal.${instance}.`)), 'zones removed');
  t.notOk(existsSync(`/proc/${zonal.child.pid}`) && zonal.workers().length > 0, 'no worker left');
});

t.test('the command line: -t checks, -v prints the version', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-t-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'good.conf'), 'worker_processes 1;\nhttp {\n    server {\n        listen 127.0.0.1:1;\n    }\n}\n');
  writeFileSync(join(dir, 'bad.conf'), 'worker_processes 1;\nhttp {\n    server {\n        listen 127.0.0.1:1;\n        bogus on;\n    }\n}\n');
  const good = await runZonal(['-t', '-c', join(dir, 'good.conf')]);
  t.equal(good.code, 0);
  t.match(good.err, /test is successful/);
  const bad = await runZonal(['-t', '-c', join(dir, 'bad.conf')]);
  t.equal(bad.code, 1);
  t.match(bad.err, new RegExp(`unknown directive "bogus" in ${join(dir, 'bad.conf').replace(/[.*+?^$()|[\]\\]/g, '\\$&')}:5`));
  const v = await runZonal(['-v']);
  t.equal(v.code, 0);
  // nginx's wording, on standard error as nginx's.
  t.match(v.err, /^zonal version: zonal\/\d+\.\d+\.\d+/);
});
