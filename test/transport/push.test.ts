// Live push from the uWebSockets.js listener (issue 18): Server-Sent Events and
// WebSockets on the API's own paths, one render per tick shared by the subscribers of a
// stream, slow clients coalesced, nothing left once the clients are gone.
import t, { type Test } from 'tap';
import { Agent } from 'node:http';
import { createApi, type ApiRequest } from '../../src/api/index.js';
import { liveAnswers } from '../../src/api/live.js';
import { serverZones } from '../../src/metrics/http-zones.js';
import { Status } from '../../src/metrics/status.js';
import { serveApi, type ApiServer } from '../../src/transport/uws.js';
import { uniqueName } from '../helpers.js';
import { EventSourceClient, SocketClient, until } from './push.js';

const host = '127.0.0.1';

async function setup(t: Test) {
  const status = Status.create({ http: { serverZones: [{ name: 'site' }, { name: 'other' }] } }, { workers: 1, writer: true, instance: uniqueName('push') });
  t.teardown(() => status.remove());
  const api = createApi({ status });
  // Counts the reads streams make (each tick's render among them): what the shared
  // timer saves is visible here.
  const counted = { reads: 0 };
  const live = liveAnswers((req: ApiRequest) => {
    counted.reads++;
    return api(req);
  });
  const handler = (req: ApiRequest) => (req.stream ? live(req) : api(req));
  const server = await serveApi({ host, port: 0, handler });
  t.teardown(() => server.close());
  const site = serverZones.recorder(status, 'site');
  return { status, server, site, counted, base: `http://${host}:${server.port}`, ws: `ws://${host}:${server.port}` };
}

const gone = (server: ApiServer) => until(() => server.subscribers === 0 && server.timers === 0, 10_000, 'no subscriber and no timer left');

t.test('Server-Sent Events: the subtree every interval, live, until the client goes', async (t) => {
  const { server, site, base } = await setup(t);
  const client = await EventSourceClient.open(`${base}/status/http/server_zones/site?interval=100`);
  t.equal(client.status, 200);
  t.match(client.headers['content-type'], /^text\/event-stream/);
  t.equal(client.headers['cache-control'], 'no-cache');
  await client.events.count(1);
  t.equal(server.subscribers, 1, 'one subscriber');
  t.equal(server.timers, 1, 'one timer');
  site.requestStarted();
  site.responseSent(200, 10, 20);
  // The next events show the request: the stream reads the zone again each tick.
  await until(() => client.json().some((z: any) => z.requests.total === 1), 5000, 'an event with the new request');
  const zones = client.json() as Array<{ requests: { total: number }; responses: unknown }>;
  t.equal(zones[0].requests.total, 0, 'the first event: the zone as it was');
  t.ok(zones.every((z) => typeof z.requests.total === 'number' && typeof z.responses === 'object'), 'every event is the zone, whole');
  t.ok(client.events.items.every((e) => !e.data.includes('\n')), 'compact JSON: one data line per event');

  // Events keep their pace: 100 ms apart, not bunched.
  const start = Date.now();
  const had = client.events.items.length;
  await client.events.count(had + 5);
  const took = Date.now() - start;
  t.ok(took >= 350 && took < 3000, `5 more events in ${took} ms at a 100 ms interval`);

  client.close();
  await gone(server);
  t.pass('the subscriber and its timer are gone once the client closed');
});

t.test('Server-Sent Events: the default interval is 1000 ms; pretty JSON spans data lines', async (t) => {
  const { server, base } = await setup(t);
  const client = await EventSourceClient.open(`${base}/status/http/server_zones/?pretty=on`);
  const start = Date.now();
  await client.events.count(2);
  const took = Date.now() - start;
  t.ok(took >= 800 && took < 3000, `the second event ${took} ms after the first`);
  const first = client.events.items[0];
  t.ok(first.data.includes('\n'), 'pretty JSON: several lines');
  t.same(Object.keys(JSON.parse(first.data)), ['site', 'other'], 'joined again, it is the JSON');
  client.close();
  // The text format streams too, a line of it per data line.
  const text = await EventSourceClient.open(`${base}/status/connections?format=prometheus&interval=100`);
  const [exposition] = await text.events.count(1);
  t.match(exposition.data, /^accepted \d+\ndropped \d+\n/, 'format=prometheus: the text, its lines joined again');
  text.close();
  await gone(server);
});

t.test('Server-Sent Events: bad requests get a JSON error and no stream', async (t) => {
  const { server, base } = await setup(t);
  for (const [query, what] of [
    ['interval=99', 'below the minimum'],
    ['interval=abc', 'not a number'],
    ['interval=1.5', 'not whole'],
    ['interval=', 'empty'],
    ['interval=100&interval=200', 'given twice'],
    ['interval=3600001', 'above an hour'],
  ]) {
    const client = await EventSourceClient.open(`${base}/status/connections?${query}`);
    t.equal(client.status, 400, `${what}: 400`);
    t.match(client.headers['content-type'], /^application\/json/);
    const body = JSON.parse(await client.body);
    t.equal(body.error, 'BadRequest', what);
    t.match(body.description, /interval/);
  }
  const missing = await EventSourceClient.open(`${base}/status/http/server_zones/nope`);
  t.equal(missing.status, 404);
  t.equal(JSON.parse(await missing.body).error, 'PathNotFound');
  const outside = await EventSourceClient.open(`${base}/elsewhere`);
  t.equal(outside.status, 404, 'a path no API mount takes: the JSON 404');
  t.equal(server.subscribers, 0, 'no error started a stream');
  t.equal(server.timers, 0);

  // Without the Accept header the same path is a plain read.
  const plain = await EventSourceClient.open(`${base}/status/connections?interval=100`, { accept: 'application/json' });
  t.equal(plain.status, 200);
  t.ok('accepted' in JSON.parse(await plain.body), 'a GET without text/event-stream reads once');
});

t.test('one timer and one render per tick for every subscriber of a stream', async (t) => {
  const { server, counted, base } = await setup(t);
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  t.teardown(() => agent.destroy());
  const clients = await Promise.all(Array.from({ length: 10 }, () => EventSourceClient.open(`${base}/status/http/server_zones/site?interval=100`, { agent })));
  const other = await EventSourceClient.open(`${base}/status/http/server_zones/site?interval=200`, { agent });
  await Promise.all([...clients, other].map((c) => c.events.count(1)));
  t.equal(server.subscribers, 11);
  t.equal(server.timers, 2, 'one timer per (path, interval)');
  const before = counted.reads;
  const had = clients.map((c) => c.events.items.length);
  await Promise.all(clients.map((c, i) => c.events.count(had[i] + 5)));
  const renders = counted.reads - before;
  t.ok(renders >= 5, `the ticks were rendered (${renders})`);
  // 10 subscribers, 5 ticks each: 50 renders if each had its own; about 5 (and the
  // 200 ms stream's 2 or 3) shared.
  t.ok(renders <= 12, `${renders} renders for 10 subscribers over 5 ticks`);
  for (const c of [...clients, other]) c.close();
  await gone(server);
});

t.test('a slow client (event stream or WebSocket) skips ticks and holds at most a frame; the others keep their pace', async (t) => {
  // A stream of large answers (2 MB each), numbered by tick.
  let tick = 0;
  const big = 'x'.repeat(2 * 1024 * 1024);
  const live = liveAnswers((req) => {
    if (!req.path.startsWith('/big')) return undefined;
    const body = JSON.stringify({ tick: tick++, big });
    return { status: 200, headers: { 'Content-Type': 'application/json' }, body };
  });
  const server = await serveApi({ host, port: 0, handler: (req) => (req.stream ? live(req) : undefined) });
  t.teardown(() => server.close());
  const url = `http://${host}:${server.port}/big?interval=100`;
  const agent = new Agent({ maxSockets: Infinity });
  t.teardown(() => agent.destroy());
  const slow = await EventSourceClient.open(url, { agent, paused: true });
  const slowSocket = await SocketClient.open(url.replace('http:', 'ws:'));
  slowSocket.ws.pause();
  const fast = await EventSourceClient.open(url, { agent });
  // The fast one reads 30 ticks while the slow one reads nothing.
  await fast.events.count(30, 20_000);
  const ticks = tick;
  slow.resume();
  // What the slow one gets now is what was in flight when it stopped reading: a few
  // frames the kernel's buffers held, and at most one in uWS's, not 30.
  await slow.events.count(1, 10_000);
  const numbers = () => slow.events.items.map((e) => (JSON.parse(e.data) as { tick: number }).tick);
  await until(() => numbers().some((n) => n > ticks), 10_000, 'the slow client catching up with a frame after the pause');
  const during = numbers().filter((n) => n <= ticks);
  t.ok(during.length <= 10, `the slow client got ${during.length} frames of the ${ticks} ticks it did not read`);
  slowSocket.ws.resume();
  await until(() => slowSocket.messages.items.some((m: { tick: number }) => m.tick > ticks), 10_000, 'the slow WebSocket catching up');
  const socketDuring = slowSocket.messages.items.filter((m: { tick: number }) => m.tick <= ticks).length;
  t.ok(socketDuring <= 10, `the slow WebSocket got ${socketDuring} messages of the ${ticks} ticks it did not read`);
  const fastNumbers = fast.json().map((v) => (v as { tick: number }).tick);
  t.ok(fastNumbers.length >= 30, 'the fast client got every tick meanwhile');
  t.ok(fastNumbers.every((n, i) => i === 0 || n > fastNumbers[i - 1]), 'in order');
  slow.close();
  slowSocket.close();
  fast.close();
  await gone(server);
});

t.test('WebSocket: the same JSON, and messages change the path and interval', async (t) => {
  const { server, site, ws } = await setup(t);
  const client = await SocketClient.open(`${ws}/status/http/server_zones/site?interval=100`);
  const first = (await client.messages.count(1))[0];
  t.ok('requests' in first && 'responses' in first, 'the zone');
  t.equal(server.subscribers, 1);
  site.requestStarted();
  await client.next(0, (m) => m.requests?.total === 1);
  t.pass('live: the next messages show a new request');

  // Another subtree.
  let seen = client.messages.items.length;
  client.send({ path: '/status/connections' });
  await client.next(seen, (m) => 'accepted' in m);
  t.pass('{"path"} moves it to /status/connections');

  // Another interval: 500 ms between messages from now on.
  client.send({ interval: 500 });
  await client.next(client.messages.items.length, () => true);
  seen = client.messages.items.length;
  const start = Date.now();
  await client.messages.count(seen + 2);
  const took = Date.now() - start;
  t.ok(took >= 700 && took < 3000, `two messages in ${took} ms at 500 ms`);
  t.equal(server.timers, 1, 'the old timer went with its last subscriber');

  // Bad messages: an error on the socket, and the stream goes on as it was.
  const bad: Array<[unknown, RegExp]> = [
    ['not json', /not JSON/],
    [[1, 2], /not a JSON object/],
    [{}, /changes nothing/],
    [{ path: '/status/', color: 'red' }, /"color" member is unknown/],
    [{ path: 42 }, /"path"/],
    [{ path: 'status/' }, /"path"/],
    [{ interval: 10 }, /interval/],
    [{ interval: '1000' }, /interval/],
    [{ interval: 100.5 }, /interval/],
    [{ path: '/status/nope' }, /doesn't exist/],
    [{ path: '/status/connections?interval=5' }, /interval/],
  ];
  for (const [message, description] of bad) {
    seen = client.messages.items.length;
    client.send(message);
    const error = await client.next(seen, (m) => 'error' in m);
    t.match(error, { error: /^(BadRequest|PathNotFound)$/, description }, `${JSON.stringify(message)}: ${error.error}`);
  }
  seen = client.messages.items.length;
  const after = await client.next(seen, () => true);
  t.ok('accepted' in after, 'still /status/connections after the bad messages');
  t.equal(server.subscribers, 1);

  // Both at once, with a query in the path.
  seen = client.messages.items.length;
  client.send({ path: '/status/http/server_zones/?pretty=on', interval: 100 });
  const zones = await client.next(seen, (m) => 'site' in m && 'other' in m);
  t.ok(zones.site.requests.total >= 1, 'the zones');

  client.close();
  await gone(server);
});

t.test('WebSocket: an upgrade the API refuses is an HTTP error, not a socket', async (t) => {
  const { server, ws } = await setup(t);
  for (const [path, status, error] of [
    ['/status/connections?interval=50', 400, 'BadRequest'],
    ['/status/nope', 404, 'PathNotFound'],
    ['/elsewhere', 404, 'PathNotFound'],
  ] as const) {
    const refused = await SocketClient.open(`${ws}${path}`).then(
      () => undefined,
      (e: { status?: number; body?: string }) => e,
    );
    t.equal(refused?.status, status, `${path}: ${status}`);
    t.equal(JSON.parse(refused?.body ?? '{}').error, error);
  }
  t.equal(server.subscribers, 0);
});

t.test('1,000 subscribers (500 Server-Sent Events, 500 WebSockets) all get data; none is left after', async (t) => {
  const { server, base, ws } = await setup(t);
  const agent = new Agent({ maxSockets: Infinity });
  t.teardown(() => agent.destroy());
  const paths = ['/status/http/server_zones/site', '/status/connections', '/status/http/server_zones/', '/status/'];
  const sse: EventSourceClient[] = [];
  const sockets: SocketClient[] = [];
  // Opened in batches: a thousand connects at once would only test the listen backlog.
  for (let i = 0; i < 500; i += 50) {
    sse.push(...(await Promise.all(Array.from({ length: 50 }, (_, j) => EventSourceClient.open(`${base}${paths[(i + j) % 4]}?interval=100`, { agent })))));
    sockets.push(...(await Promise.all(Array.from({ length: 50 }, (_, j) => SocketClient.open(`${ws}${paths[(i + j) % 4]}?interval=100`)))));
  }
  t.equal(sse.filter((c) => c.status === 200).length, 500, '500 event streams');
  await until(() => server.subscribers === 1000, 10_000, '1000 subscribers');
  t.equal(server.timers, 4, 'four streams, four timers');
  const heapBefore = process.memoryUsage().heapUsed;
  // Each gets three ticks more than it has: every one of them is pushed to.
  const sseHad = sse.map((c) => c.events.items.length);
  const wsHad = sockets.map((c) => c.messages.items.length);
  await Promise.all([...sse.map((c, i) => c.events.count(sseHad[i] + 3, 30_000)), ...sockets.map((c, i) => c.messages.count(wsHad[i] + 3, 30_000))]);
  t.pass('all 1000 received three more ticks');
  const grown = process.memoryUsage().heapUsed - heapBefore;
  t.ok(grown < 64 * 1024 * 1024, `the heap grew ${(grown / 1048576).toFixed(1)} MiB over three ticks of 1000 subscribers`);
  for (const c of sse) c.close();
  for (const c of sockets) c.close();
  await gone(server);
  t.pass('no subscriber and no timer left after they closed');
});

t.test('closing the listener ends every stream and stops every timer', async (t) => {
  const { server, base, ws } = await setup(t);
  const sse = await EventSourceClient.open(`${base}/status/connections?interval=100`);
  const socket = await SocketClient.open(`${ws}/status/connections?interval=100`);
  await sse.events.count(1);
  await socket.messages.count(1);
  server.close();
  t.equal(server.subscribers, 0);
  t.equal(server.timers, 0);
  await until(() => sse.events.ended && socket.closed, 10_000, 'both clients closed');
  t.pass('both clients saw the end');
});
