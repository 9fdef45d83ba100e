// serveApi's node:http fallback (serveHttpApi), what serves the API's own listener when
// uWebSockets.js is not installed (an optional peer dependency, docs/package.md): the same
// answers, handlers that answer later, request bodies, Server-Sent Events, and a close
// that ends everything. test/package/consumer.test.ts sees serveApi choose it in an app
// without uWebSockets.js.
import t, { type Test } from 'tap';
import { request } from 'node:http';
import { createApi, type ApiRequest, type ApiResponse } from '../../src/api/index.js';
import { liveAnswers } from '../../src/api/live.js';
import { serverZones } from '../../src/metrics/http-zones.js';
import { Status } from '../../src/metrics/status.js';
import { serveHttpApi } from '../../src/transport/http.js';
import { uniqueName } from '../helpers.js';
import { EventSourceClient, until } from './push.js';

const host = '127.0.0.1';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function ask(port: number, method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, method, path, headers, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

async function setup(t: Test) {
  const status = Status.create({ http: { serverZones: [{ name: 'site' }] } }, { workers: 1, writer: true, instance: uniqueName('fallback') });
  t.teardown(() => status.remove());
  const api = createApi({ status });
  const live = liveAnswers(api);
  const json = (status: number, value: unknown): ApiResponse => ({ status, headers: { 'Content-Type': 'application/json' }, body: `${JSON.stringify(value)}\n` });
  const handler = (req: ApiRequest) => {
    if (req.stream) return live(req);
    // A handler in front of the API that answers later (basic auth does), and one that
    // reads the body.
    if (req.path === '/later') return new Promise<ApiResponse>((resolve) => setTimeout(() => resolve(json(200, { later: true })), 20));
    if (req.path === '/echo') return json(200, { method: req.method, bytes: req.body?.length ?? 0, local: req.address });
    return api(req);
  };
  const server = await serveHttpApi({ host, port: 0, handler });
  t.teardown(() => server.close());
  return { server, site: serverZones.recorder(status, 'site') };
}

t.test('the API over node:http: reads, HEAD, 404, bodies, answers given later', async (t) => {
  const { server, site } = await setup(t);
  t.ok(server.port > 0, 'a port was picked');
  site.requestStarted();
  site.responseSent(200, 100, 200);
  const read = await ask(server.port, 'GET', '/status/http/server_zones/site');
  t.equal(read.status, 200);
  t.match(read.headers['content-type'], /^application\/json/);
  const zone = JSON.parse(read.body);
  t.same([zone.requests.total, zone.responses['200'], zone.data.received, zone.data.sent], [1, 1, 100, 200], 'the counts');

  const head = await ask(server.port, 'HEAD', '/status/http/server_zones/site');
  t.equal(head.status, 200);
  t.equal(head.body, '', 'HEAD: no body');
  t.equal(head.headers['content-length'], String(Buffer.byteLength(read.body)), "HEAD: the GET's length");

  const missing = await ask(server.port, 'GET', '/nothing/here');
  t.equal(missing.status, 404);
  t.equal(JSON.parse(missing.body).error, 'PathNotFound');

  const later = await ask(server.port, 'GET', '/later');
  t.same([later.status, JSON.parse(later.body)], [200, { later: true }], 'an answer given later');

  const echo = await ask(server.port, 'POST', '/echo', 'x'.repeat(5000), { 'Content-Type': 'application/octet-stream' });
  t.same(JSON.parse(echo.body), { method: 'POST', bytes: 5000, local: '127.0.0.1' }, 'the body is read whole; the local address is given');
  const refused = await ask(server.port, 'DELETE', '/status/');
  t.equal(refused.status, 405, 'a method the API refuses');
});

t.test('Server-Sent Events over node:http, and a close that ends every stream', async (t) => {
  const { server, site } = await setup(t);
  const base = `http://${host}:${server.port}`;
  const client = await EventSourceClient.open(`${base}/status/http/server_zones/site?interval=100`);
  t.equal(client.status, 200);
  t.match(client.headers['content-type'], /^text\/event-stream/);
  await client.events.count(1);
  t.equal(server.subscribers, 1, 'one subscriber');
  t.equal(server.timers, 1, 'one timer');
  site.requestStarted();
  site.responseSent(200, 10, 20);
  await until(() => client.json().some((z: any) => z.requests.total === 1), 5000, 'an event with the new request');

  const bad = await ask(server.port, 'GET', '/status/http/server_zones/site?interval=5', undefined, { Accept: 'text/event-stream' });
  t.equal(bad.status, 400, 'a bad interval is an error and no stream');

  client.close();
  await until(() => server.subscribers === 0 && server.timers === 0, 10_000, 'no subscriber and no timer left');
  t.pass('the subscriber and its timer are gone once the client closed');

  const again = await EventSourceClient.open(`${base}/status/connections?interval=100`);
  await again.events.count(1);
  server.close();
  t.equal(server.subscribers, 0);
  t.equal(server.timers, 0);
  await until(() => again.events.ended, 10_000, 'the client saw the end');
  await t.rejects(ask(server.port, 'GET', '/status/'), 'the port is closed');
});
