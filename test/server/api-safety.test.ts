// The API through bin/zonal refuses what a web page could send it: a Host that is not the
// server's (DNS rebinding), a write from another origin, a body not declared JSON; and
// the primary's log has a line for every /config write, applied or refused.
import t from 'tap';
import { request } from 'node:http';
import { freePorts, Zonal } from './zonal.js';

const [site, admin, peerPort] = await freePorts(3);
const U = `/config/http/upstreams/u/servers/127.0.0.1:${peerPort}`;

const conf = `
worker_processes 1;
http {
    upstream u {
        zone u 64k;
        server 127.0.0.1:${peerPort} weight=2;
    }
    server {
        listen 127.0.0.1:${site};
        server_name example.test;
        location /api/ {
            api /;
        }
        location /dash/ {
            api /;
            api_origins https://dash.example.com http://127.0.0.1:7000;
        }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`;
const zonal = await Zonal.start({ 'zonal.conf': conf });
t.teardown(() => zonal.stop());

interface Answer {
  status: number;
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

/** A request with exactly these headers (fetch would not send Host or Origin as given). */
function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { ...(body !== undefined ? { 'Content-Length': String(Buffer.byteLength(body)) } : {}), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode!, body: parsed, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const JSON_TYPE = { 'Content-Type': 'application/json' };
const weight = async () => (await send(admin, 'GET', `${U}/weight`, { Host: `127.0.0.1:${admin}` })).body;

t.test("the first user's exploit: a cross-site text/plain PATCH from a rebound name changes nothing", async (t) => {
  const r = await send(admin, 'PATCH', U, { Host: 'evil.example', Origin: 'http://evil.example', 'Content-Type': 'text/plain' }, '{"weight":9}');
  t.equal(r.status, 403);
  t.equal(r.body.error, 'Forbidden');
  t.match(r.body.description, /Host "evil.example"/);
  t.equal(await weight(), 2, 'weight unchanged');
});

t.test('admin listener: only its own names, for reads too', async (t) => {
  for (const host of ['evil.example', `evil.example:${admin}`, `localhost:${admin + 1}`, '10.0.0.1', 'example.test'])
    t.equal((await send(admin, 'GET', '/status/connections', { Host: host })).status, 403, `Host ${host}: refused`);
  for (const host of ['localhost', `localhost:${admin}`, '127.0.0.1', `127.0.0.1:${admin}`, '[::1]', `[::1]:${admin}`, 'LOCALHOST.'])
    t.equal((await send(admin, 'GET', '/status/connections', { Host: host })).status, 200, `Host ${host}: answered`);
  const refused = await send(admin, 'GET', '/status/', { Host: 'rebound.example' });
  t.equal(refused.headers['content-type'], 'application/json', 'the refusal is JSON');
  t.notOk(JSON.stringify(refused.body).includes('connections'), 'and shows no status');
});

t.test('writes: Origin must be the server itself or listed in api_origins', async (t) => {
  const host = { Host: `127.0.0.1:${admin}` };
  let r = await send(admin, 'PATCH', U, { ...host, ...JSON_TYPE, Origin: 'http://evil.example' }, '{"weight":3}');
  t.equal(r.status, 403, 'another origin');
  t.match(r.body.description, /origin "http:\/\/evil.example"/);
  t.equal((await send(admin, 'PATCH', U, { ...host, ...JSON_TYPE, Origin: 'null' }, '{"weight":3}')).status, 403, 'Origin: null');
  t.equal((await send(admin, 'PATCH', U, { ...host, ...JSON_TYPE, Origin: `http://127.0.0.1:${admin + 1}` }, '{"weight":3}')).status, 403, 'another port is another origin');
  t.equal(await weight(), 2, 'nothing changed');
  t.equal((await send(admin, 'PATCH', U, { ...host, ...JSON_TYPE, Origin: `http://127.0.0.1:${admin}` }, '{"weight":3}')).status, 200, 'its own origin');
  t.equal((await send(admin, 'PATCH', U, { ...host, ...JSON_TYPE }, '{"weight":4}')).status, 200, 'no Origin: not a browser page');
  t.equal(await weight(), 4);

  const siteHost = { Host: 'example.test' };
  t.equal((await send(site, 'PATCH', `/dash${U}`, { ...siteHost, ...JSON_TYPE, Origin: 'https://dash.example.com' }, '{"weight":5}')).status, 200, 'listed in api_origins');
  t.equal((await send(site, 'PATCH', `/dash${U}`, { ...siteHost, ...JSON_TYPE, Origin: 'http://127.0.0.1:7000' }, '{"weight":6}')).status, 200, 'the other listed origin');
  t.equal((await send(site, 'PATCH', `/api${U}`, { ...siteHost, ...JSON_TYPE, Origin: 'https://dash.example.com' }, '{"weight":7}')).status, 403, 'listed only where api_origins applies');
  t.equal(await weight(), 6);
});

t.test('a write must be JSON: 415 with nothing changed', async (t) => {
  const host = { Host: `127.0.0.1:${admin}` };
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
    const r = await send(admin, 'PUT', U, { ...host, 'Content-Type': type }, '{"weight":8}');
    t.equal(r.status, 415, type);
    t.equal(r.body.error, 'UnsupportedMediaType');
  }
  t.equal((await send(admin, 'PUT', U, host, '{"weight":8}')).status, 415, 'no Content-Type');
  t.equal(await weight(), 6);
});

t.test('data-plane server: reads answered as nginx answers its default server, writes only for its names', async (t) => {
  t.equal((await send(site, 'GET', '/api/status/connections', { Host: 'anything.example' })).status, 200, 'a read through the default server');
  const r = await send(site, 'PATCH', `/api${U}`, { Host: 'anything.example', ...JSON_TYPE }, '{"weight":1}');
  t.equal(r.status, 403, 'but no write for a Host the server does not name');
  for (const host of ['example.test', `example.test:${site}`, `127.0.0.1:${site}`, 'localhost'])
    t.equal((await send(site, 'PATCH', `/api${U}`, { Host: host, ...JSON_TYPE }, '{"weight":2}')).status, 200, `a write for ${host}`);
  t.equal((await send(site, 'PATCH', `/api${U}`, { Host: `example.test:${site + 1}`, ...JSON_TYPE }, '{"weight":2}')).status, 403, 'not on a port it does not listen on');
});

t.test("the primary's log: notice for each applied change, warn with the reason for each refused one", async (t) => {
  // The worker's lines reach the primary's log a moment after their answers: the last
  // one of the test before first.
  await zonal.waitLog(new RegExp(`refused 403: The Host "example.test:${site + 1}"`), 5000);
  const from = zonal.log.length;
  await send(admin, 'PATCH', U, { Host: `127.0.0.1:${admin}`, ...JSON_TYPE }, '{ "max_fails":\n 3 }');
  await send(site, 'DELETE', `/api${U}/max_fails`, { Host: 'example.test' });
  await send(site, 'PUT', `/api${U}`, { Host: 'example.test', 'Content-Type': 'text/plain' }, '{}');
  await send(admin, 'PATCH', U, { Host: 'evil.example', ...JSON_TYPE }, '{"down":true}');
  await zonal.waitLog(/config: PATCH .* refused 403/, 5000, from);
  await zonal.waitLog(/config: PUT .* refused 415/, 5000, from);
  const lines = zonal.log.slice(from).split('\n').filter((l) => l.includes('config: '));
  // A worker's line and the primary's own may come in either order.
  const line = (re: RegExp, what: string) => t.ok(lines.some((l) => re.test(l)), what, { lines });
  line(new RegExp(`^zonal: \\[notice\\] config: PATCH ${U} from 127\\.0\\.0\\.1: 200 \\{ "max_fails": 3 \\}$`), 'admin: applied, with the value on one line');
  line(new RegExp(`^zonal: \\[notice\\] config: DELETE /config/http/upstreams/u/servers/127\\.0\\.0\\.1:${peerPort}/max_fails from 127\\.0\\.0\\.1: 200$`), "a worker's, in the primary's log");
  line(/^zonal: \[warn\] config: PUT .* refused 415: The request body must be application\/json, not text\/plain\.$/, 'a refusal, with its reason');
  line(/^zonal: \[warn\] config: PATCH .* refused 403: The Host "evil.example"/, 'a refused Host');
  t.equal(lines.length, 4, 'one line each');
});
