// limit_req and limit_conn in the zonal server, with two workers on one zone: what the
// client counted is what the status counts, the bucket is exact across workers, delays
// are timers of the predicted length, and limit_conn counts are given back however a
// request ends, a worker's death included.
import t from 'tap';
import { Agent, request } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Status } from '../../../src/metrics/status.js';
import { freePorts, getJson, Zonal } from '../zonal.js';

interface Answer {
  status: number;
  /** Milliseconds from the send to the end of the response. */
  ms: number;
  end: number;
}

function get(port: number, path: string, headers: Record<string, string> = {}, agent?: Agent): Promise<Answer> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: agent ?? false }, (res) => {
      res.resume();
      res.on('end', () => {
        const end = performance.now();
        resolve({ status: res.statusCode ?? 0, ms: end - start, end });
      });
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${path} timed out`)));
    req.end();
  });
}

const count = (answers: Answer[], status: number) => answers.filter((a) => a.status === status).length;

const [port, admin] = await freePorts(2);
const conf = `worker_processes 2;
http {
  limit_req_zone $binary_remote_addr zone=rate:64k rate=10r/s;
  limit_req_zone $binary_remote_addr zone=burst:64k rate=10r/s;
  limit_req_zone $http_x_key zone=nodelay:64k rate=1r/s;
  limit_req_zone $http_x_key zone=partial:64k rate=10r/s;
  limit_req_zone $http_x_key zone=dry:64k rate=1r/s;
  limit_req_zone $http_x_key zone=teapot:64k rate=1r/s;
  limit_req_zone $http_x_key zone=small:32k rate=1r/s;
  server {
    listen 127.0.0.1:${port};
    root .;
    location /rate/ { limit_req zone=rate; }
    location /burst/ { limit_req zone=burst burst=5; }
    location /nodelay/ { limit_req zone=nodelay burst=3 nodelay; }
    location /partial/ { limit_req zone=partial burst=4 delay=2; }
    location /dry/ { limit_req zone=dry; limit_req_dry_run on; }
    location /teapot/ { limit_req zone=teapot; limit_req_status 429; }
    location /small/ { limit_req zone=small; }
    location /free/ { }
  }
  server {
    listen 127.0.0.1:${admin} admin;
    location /status/ { api /status/; }
  }
}
`;
const zonal = await Zonal.start({ 'zonal.conf': conf });
// Locations serve the files of the configuration's directory: /rate/f is <dir>/rate/f.
for (const dir of ['rate', 'burst', 'nodelay', 'partial', 'dry', 'teapot', 'small', 'free']) {
  mkdirSync(join(zonal.dir, dir));
  writeFileSync(join(zonal.dir, dir, 'f'), 'x');
}
t.teardown(() => zonal.stop());
const status = (path: string) => getJson(`http://127.0.0.1:${admin}/status/http/limit_reqs/${path}`).then((r) => r.body);

t.test('rate=10r/s, no burst, concurrent requests over both workers: 1 + 10 per second pass', async (t) => {
  const answers: Answer[] = [];
  const started = performance.now();
  let lastSent = started;
  // 8 requests in flight at all times, each on a new connection (spread over the workers
  // by the kernel), for 1.5 s.
  const lanes = Array.from({ length: 8 }, async () => {
    for (let i = 0; i < 2000 && performance.now() - started < 1500; i++) {
      lastSent = performance.now();
      answers.push(await get(port, '/rate/f'));
    }
  });
  await Promise.all(lanes);
  const firstEnd = Math.min(...answers.map((a) => a.end));
  const lastEnd = Math.max(...answers.map((a) => a.end));
  const passed = count(answers, 200);
  const most = 1 + Math.floor((10 * (lastEnd - started)) / 1000);
  const least = Math.floor((10 * (lastSent - firstEnd)) / 1000);
  t.ok(passed <= most + 1 && passed >= least - 1, `${passed} passed of ${answers.length} in ${Math.round(lastEnd - started)} ms: from ${least} to ${most} (±1)`);
  t.equal(count(answers, 503), answers.length - passed, 'the others were refused with 503');
  t.same(await status('rate'), { passed, skipped: 0, delayed: 0, rejected: answers.length - passed, exhausted: 0 }, 'the status counts what the client counted');
  // Both workers decided: each writes its own shard of the zone's counters.
  const reader = Status.attach({ instance: `p${zonal.child.pid}`, writer: false });
  const block = reader.gauges('rate', 'http/limit_reqs', 5);
  const deciders = Array.from({ length: reader.zoneNamed('rate').workerSlots }, (_, s) => block.shardValue(s, 0) + block.shardValue(s, 3)).filter((n) => n > 0);
  t.equal(deciders.length, 2, `both workers decided on the one bucket: ${deciders.join(' + ')}`);
  reader.zone.detach();
});

t.test('burst=5: the excess waits 100 ms per request (±20 ms), by timers', async (t) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 6 });
  t.teardown(() => agent.destroy());
  // Six connections open beforehand, so that the six requests go out together.
  await Promise.all(Array.from({ length: 6 }, () => get(port, '/free/f', {}, agent)));
  const answers = await Promise.all(Array.from({ length: 7 }, () => get(port, '/burst/f', {}, new Agent({ keepAlive: false }))));
  const ok = answers.filter((a) => a.status === 200).map((a) => a.end).sort((a, b) => a - b);
  t.equal(ok.length, 6, 'one at once and five within the burst');
  t.equal(count(answers, 503), 1, 'the seventh is over the burst');
  const waits = ok.map((end) => Math.round(end - ok[0]));
  for (let i = 1; i < 6; i++) t.ok(Math.abs(waits[i] - i * 100) <= 20, `request ${i} of the burst came ${waits[i]} ms after the first (expected ${i * 100})`);
  t.same(await status('burst'), { passed: 1, skipped: 0, delayed: 5, rejected: 1, exhausted: 0 });
});

t.test('nodelay, delay=, dry run, limit_req_status, skipped keys', async (t) => {
  const burst = (path: string, n: number, key = 'k') => Promise.all(Array.from({ length: n }, () => get(port, path, key ? { 'X-Key': key } : {})));
  const nodelay = await burst('/nodelay/f', 5);
  t.same([count(nodelay, 200), count(nodelay, 503)], [4, 1], 'nodelay: the burst passes at once');
  t.ok(nodelay.every((a) => a.ms < 80), 'and none waits');
  const partial = (await burst('/partial/f', 6)).sort((a, b) => a.end - b.end);
  t.same([count(partial, 200), count(partial, 503)], [5, 1], 'delay=2 of burst=4');
  const ends = partial.filter((a) => a.status === 200).map((a) => a.end - partial[0].end);
  t.ok(ends[2] < 50 && Math.abs(ends[3] - 100) <= 20 && Math.abs(ends[4] - 200) <= 20, `three at once, then 100 and 200 ms: ${ends.map(Math.round)}`);
  const dry = await burst('/dry/f', 5);
  t.equal(count(dry, 200), 5, 'dry run: all pass');
  const teapot = await burst('/teapot/f', 2);
  t.same(teapot.map((a) => a.status).sort(), [200, 429], 'limit_req_status 429');
  const unkeyed = await burst('/nodelay/f', 3, '');
  t.equal(count(unkeyed, 200), 3, 'no key: not limited');

  t.same(await status('nodelay'), { passed: 4, skipped: 3, delayed: 0, rejected: 1, exhausted: 0 });
  t.same(await status('partial'), { passed: 3, skipped: 0, delayed: 2, rejected: 1, exhausted: 0 });
  t.same(await status('dry'), { passed: 1, skipped: 0, delayed: 0, rejected: 4, exhausted: 0 }, 'dry run counts what it would have refused');
  t.same(await status('teapot'), { passed: 1, skipped: 0, delayed: 0, rejected: 1, exhausted: 0 });
  t.match(zonal.log, /\[error\] limiting requests by zone "nodelay", client: 127\.0\.0\.1, request: "GET \/nodelay\/f HTTP\/1\.1"/, 'refusals are logged');
  t.match(zonal.log, /\[warn\] delaying request \d+ ms by zone "partial"/, 'delays are logged one level lower');
});

t.test('a full zone evicts the least recently used keys; a key with no room is exhausted', async (t) => {
  const answers: Answer[] = [];
  const lanes = Array.from({ length: 8 }, async (_, lane) => {
    for (let i = lane; i < 600; i += 8) answers.push(await get(port, '/small/f', { 'X-Key': `k${String(i).padStart(3, '0')}` }));
  });
  await Promise.all(lanes);
  t.equal(count(answers, 200), 600, 'every new key passes: the oldest make room');
  const slabs = (await getJson(`http://127.0.0.1:${admin}/status/slabs/small`)).body;
  t.equal(slabs.pages.free, 0, 'the zone is full, as /status/slabs shows');
  // A key of another slot size needs a page that evicting a few small keys cannot free.
  const big = await get(port, '/small/f', { 'X-Key': 'x'.repeat(1500) });
  t.equal(big.status, 503);
  t.same(await status('small'), { passed: 600, skipped: 0, delayed: 0, rejected: 0, exhausted: 1 });
  t.match(zonal.log, /limiting requests, no room for the key, by zone "small"/);
});
