// limit_conn in the zonal server: a count per key of requests in progress, given back
// when the request ends however it ends: finished, client abort, upstream error, or the
// worker killed (the primary gives back what the dead worker held).
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, request, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Status } from '../../../src/metrics/status.js';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';

const [port, admin, backendPort, closedPort] = await freePorts(4);

// A backend that holds every request until told to answer.
const held: ServerResponse[] = [];
let arrived = 0;
const backend = createServer((req: IncomingMessage, res: ServerResponse) => {
  arrived++;
  held.push(res);
});
await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => backend.close(() => resolve())));
const answerAll = () => {
  for (const res of held.splice(0)) if (!res.destroyed) res.end('done');
};

/** Answers by location and status, as the client saw them. */
const tally = new Map<string, number>();
const seen = (location: string, code: number) => tally.get(`${location} ${code}`) ?? 0;

/** A request whose answer is awaited separately; abort() ends it from the client side. */
function send(path: string, headers: Record<string, string> = {}): { answer: Promise<number>; abort(): void; req: ClientRequest } {
  let req!: ClientRequest;
  const answer = new Promise<number>((resolve) => {
    req = request({ host: '127.0.0.1', port, path, agent: false, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(-1));
    });
    req.on('error', () => resolve(-1));
    req.end();
  });
  const location = path.split('/')[1];
  void answer.then((code) => tally.set(`${location} ${code}`, seen(location, code) + 1));
  return { answer, abort: () => req.destroy(), req };
}

const status = (zone: string) => getJson(`http://127.0.0.1:${admin}/status/http/limit_conns/${zone}`).then((r) => r.body);
const until = (probe: () => boolean) => eventually(async () => probe(), 5000);

async function start(workers: number): Promise<Zonal> {
  const conf = `worker_processes ${workers};
http {
  limit_conn_zone $remote_addr zone=held:32k;
  limit_conn_zone $remote_addr zone=failing:32k;
  limit_conn_zone $binary_remote_addr zone=first:32k;
  limit_conn_zone $http_x_pair zone=second:32k;
  server {
    listen 127.0.0.1:${port};
    root .;
    location /hold/ { limit_conn held 2; proxy_pass http://127.0.0.1:${backendPort}; }
    location /probe/ { limit_conn held 2; }
    location /pair/ { limit_conn first 5; limit_conn second 1; proxy_pass http://127.0.0.1:${backendPort}; }
    location /down/ { limit_conn failing 1; proxy_pass http://127.0.0.1:${closedPort}; }
  }
  server {
    listen 127.0.0.1:${admin} admin;
    location /status/ { api /status/; }
  }
}
`;
  const zonal = await Zonal.start({ 'zonal.conf': conf });
  mkdirSync(join(zonal.dir, 'probe'));
  writeFileSync(join(zonal.dir, 'probe', 'f'), 'x');
  return zonal;
}

t.test('released when the response ends, when the client aborts, on an upstream error', async (t) => {
  const zonal = await start(2);
  t.teardown(() => zonal.stop());
  arrived = 0;
  const a = send('/hold/a');
  const b = send('/hold/b');
  t.ok(await until(() => arrived === 2), 'two requests held at the backend');
  const over = await send('/hold/c').answer;
  t.equal(over, 503, 'a third from the same address is over the limit');
  t.equal((await send('/probe/f').answer), 503, 'the zone is shared by locations (and workers)');

  a.abort();
  t.equal(await a.answer, -1);
  // The abort reaches the worker as the connection closes: the count goes back then.
  t.ok(await eventually(async () => (await send('/probe/f').answer) === 200, 5000), 'the aborted request gave its count back');
  // A file's count goes back when its stream ends the response, which can be just after
  // the client has read the last byte: wait until only b holds one, as the zone says.
  const reader = Status.attach({ instance: `p${zonal.child.pid}`, writer: false });
  const table = reader.zoneNamed('held').limitConnTable('http/limit_conns/keys');
  t.ok(await eventually(async () => table.peek('127.0.0.1') === 1, 5000), 'one count held: b');
  reader.zone.detach();
  const c = send('/hold/c');
  t.ok(await until(() => arrived === 3), 'a new request takes the freed count');
  answerAll();
  t.same([await b.answer, await c.answer], [200, 200]);
  t.equal(await send('/probe/f').answer, 200);

  // One after another at limit 1: each one's count must be back before the next.
  const down: number[] = [];
  for (let i = 0; i < 4; i++) down.push(await send('/down/f').answer);
  t.same(down, [502, 502, 502, 502], 'a failed upstream gives its count back: never 503 at limit 1');

  // What the client counted: passed are the requests the backend got and the probes
  // answered; rejected, the 503s.
  t.same(await status('held'), { passed: arrived + seen('probe', 200), skipped: 0, rejected: seen('hold', 503) + seen('probe', 503), exhausted: 0 });
  t.equal(seen('hold', 503), 1, 'the over-limit /hold');
  // The probes until the abort reached the worker were refused too: the first, and maybe more.
  t.ok(seen('probe', 503) >= 1, `refused probes: ${seen('probe', 503)}`);
  t.same(await status('failing'), { passed: 4, skipped: 0, rejected: 0, exhausted: 0 });
});

t.test('two limit_conn, the second refusing: the first gives back what it took; both given back at the end', async (t) => {
  const zonal = await start(1);
  t.teardown(() => zonal.stop());
  arrived = 0;
  held.length = 0;
  const a = send('/pair/a', { 'X-Pair': 'p' });
  t.ok(await until(() => arrived === 1), 'one request holds a count of each zone');
  t.equal(await send('/pair/b', { 'X-Pair': 'p' }).answer, 503, 'the second zone refuses another of its key');
  const reader = Status.attach({ instance: `p${zonal.child.pid}`, writer: false });
  t.teardown(() => reader.zone.detach());
  const first = reader.zoneNamed('first').limitConnTable('http/limit_conns/keys');
  const second = reader.zoneNamed('second').limitConnTable('http/limit_conns/keys');
  const address = Buffer.from([127, 0, 0, 1]);
  t.equal(first.peek(address), 1, 'the refused request gave back the count the first zone had given it');
  t.equal(second.peek('p'), 1);
  const c = send('/pair/c', { 'X-Pair': 'q' });
  t.ok(await until(() => arrived === 2), 'another key of the second zone passes both');
  t.equal(first.peek(address), 2);
  answerAll();
  t.same([await a.answer, await c.answer], [200, 200]);
  t.ok(await eventually(async () => first.peek(address) <= 0 && second.peek('p') <= 0 && second.peek('q') <= 0, 5000), 'every count given back once the responses ended');
  t.same(await status('first'), { passed: 3, skipped: 0, rejected: 0, exhausted: 0 });
  t.same(await status('second'), { passed: 2, skipped: 0, rejected: 1, exhausted: 0 });
});

t.test('a worker SIGKILLed while it holds a count: the primary gives it back', async (t) => {
  const zonal = await start(1);
  t.teardown(() => zonal.stop());
  arrived = 0;
  held.length = 0;
  const a = send('/hold/a');
  const b = send('/hold/b');
  t.ok(await until(() => arrived === 2), 'the limit is reached by two requests held in the worker');
  t.equal(await send('/probe/f').answer, 503);
  const [worker] = zonal.workers();
  const from = zonal.log.length;
  process.kill(worker, 'SIGKILL');
  await zonal.waitLog(/exited \(SIGKILL\): starting another/, 10_000, from);
  t.same([await a.answer, await b.answer], [-1, -1], 'the held requests died with their worker');
  t.ok(await eventually(async () => (await send('/probe/f').answer.catch(() => 0)) === 200, 10_000), "the dead worker's counts were given back");
  t.equal((await status('held')).rejected, 1, 'the one probe refused: counts of the new instance');
  held.length = 0;
});
