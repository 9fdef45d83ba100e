// npm run bench -- limits [--rounds N]: what one limit decision costs, in ns, for zonal's
// limit_req (one key, and 100,000 keys) and limit_conn (acquire + release), in one
// process and in two processes deciding on the same zone at once, side by side with
// rate-limiter-flexible's RateLimiterMemory (one process only: its state is the
// process's) and RateLimiterCluster (the primary keeps the state; workers ask it over
// node:cluster's IPC), the way Node cluster users limit across workers today.
//
// Every decision is a real one and is checked: the limits are configured never to refuse
// (zonal: 10^9 r/s with a burst of 10^6 nodelay; rate-limiter-flexible: 10^9 points per second), and the run fails if
// any was refused, or if zonal's status did not count each decision. Each figure is the
// median of N rounds (default 5), each round timing a loop of decisions.
//
// Two processes: two node:cluster workers each run the same loop at the same moment, on
// the same key (the worst case: one mutex and one bucket for both) or on the 100k keys;
// the figure is each worker's wall time per decision (its own cost under contention), and
// the decisions per second of both together.
import cluster from 'node:cluster';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { WORKER_SLOT_ENV } from '../src/engine/index.js';
import { Status } from '../src/metrics/status.js';
import { fail, finish, median, table } from './report.js';

interface RateLimiterLike {
  consume(key: string, points?: number): Promise<unknown>;
}
const rlf = createRequire(import.meta.url)('rate-limiter-flexible') as {
  RateLimiterMemory: new (o: Record<string, unknown>) => RateLimiterLike;
  RateLimiterCluster: new (o: Record<string, unknown>) => RateLimiterLike;
  RateLimiterClusterMaster: new () => unknown;
};

const KEYS = 100_000;
const keys = Array.from({ length: KEYS }, (_, i) => `client-${i}`);
const NEVER = 1e9;
const rlfOptions = (prefix: string) => ({ keyPrefix: prefix, points: NEVER, duration: 1 });

type Task = 'zonal_req_one' | 'zonal_req_100k' | 'zonal_conn' | 'memory_one' | 'memory_100k' | 'cluster_one' | 'cluster_100k';

/** Decisions per round of each task: enough to take some tens of ms. */
const LOOP: Record<Task, number> = {
  zonal_req_one: 200_000,
  zonal_req_100k: 200_000,
  zonal_conn: 200_000,
  memory_one: 100_000,
  memory_100k: 100_000,
  cluster_one: 5_000,
  cluster_100k: 5_000,
};

/** What a process runs its tasks with. */
interface Deciders {
  status: Status;
  memory: RateLimiterLike;
  cluster?: RateLimiterLike;
}

function deciders(status: Status, inWorker: boolean): Deciders {
  return {
    status,
    memory: new rlf.RateLimiterMemory(rlfOptions('memory')),
    ...(inWorker ? { cluster: new rlf.RateLimiterCluster({ ...rlfOptions('cluster'), timeoutMs: 10_000 }) } : {}),
  };
}

/** Runs `n` decisions of a task; returns ns per decision. */
async function run(d: Deciders, task: Task, n: number): Promise<number> {
  // A million a millisecond leak away; as many may come within one (nginx leaks only
  // between milliseconds): never refused.
  const one = d.status.limitReq('one', { burst: 1_000_000, nodelay: true });
  const many = d.status.limitReq('many', { burst: 1_000_000, nodelay: true });
  const conn = d.status.limitConn('conns', { limit: 1000 });
  let refused = 0;
  const start = process.hrtime.bigint();
  switch (task) {
    case 'zonal_req_one':
      for (let i = 0; i < n; i++) if (one.take('one key').result !== 'passed') refused++;
      break;
    case 'zonal_req_100k':
      for (let i = 0; i < n; i++) if (many.take(keys[i % KEYS]).result !== 'passed') refused++;
      break;
    case 'zonal_conn':
      for (let i = 0; i < n; i++) {
        const release = conn.acquire('one key');
        if (release) release();
        else refused++;
      }
      break;
    case 'memory_one':
      for (let i = 0; i < n; i++) await d.memory.consume('one key');
      break;
    case 'memory_100k':
      for (let i = 0; i < n; i++) await d.memory.consume(keys[i % KEYS]);
      break;
    case 'cluster_one':
      for (let i = 0; i < n; i++) await d.cluster!.consume('one key');
      break;
    case 'cluster_100k':
      for (let i = 0; i < n; i++) await d.cluster!.consume(keys[i % KEYS]);
      break;
  }
  const ns = Number(process.hrtime.bigint() - start) / n;
  if (refused > 0) fail(`${task}: ${refused} of ${n} decisions refused a limit configured never to refuse`);
  return ns;
}

/** The status of the run: its three limit zones, sized for 100k keys. */
function createStatus(): Status {
  return Status.create(
    {
      http: {
        limitReqs: [
          { name: 'one', rate: NEVER, zoneSize: 1 << 20 },
          { name: 'many', rate: NEVER, zoneSize: 32 << 20 },
        ],
        limitConns: [{ name: 'conns', zoneSize: 1 << 20 }],
      },
    },
    { workers: 4, writer: true },
  );
}

function counted(status: Status, zone: string, conn = false): number {
  const block = status.gauges(zone, conn ? 'http/limit_conns' : 'http/limit_reqs', conn ? 4 : 5);
  return block.value(0); // passed
}

async function primary(): Promise<void> {
  const rounds = Math.max(1, Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 5);
  new rlf.RateLimiterClusterMaster();
  const status = createStatus();
  const own = deciders(status, false);
  const single: Record<string, number[]> = {};
  const singleTasks: Task[] = ['zonal_req_one', 'zonal_req_100k', 'zonal_conn', 'memory_one', 'memory_100k'];
  for (const task of singleTasks) {
    await run(own, task, LOOP[task]); // warm-up: V8 optimises, the 100k keys go in
    single[task] = [];
    for (let r = 0; r < rounds; r++) single[task].push(await run(own, task, LOOP[task]));
  }

  // Two workers on the same zones.
  const workers = [1, 2].map((slot) => cluster.fork({ [WORKER_SLOT_ENV]: String(slot) }));
  const next = (w: (typeof workers)[number]) =>
    new Promise<{ ns?: number }>((resolve) => {
      const listener = (m: { bench?: boolean; ns?: number }) => {
        if (!m?.bench) return;
        w.off('message', listener);
        resolve(m);
      };
      w.on('message', listener);
    });
  await Promise.all(workers.map(next));
  const ask = (w: (typeof workers)[number], task: Task) => {
    const answer = next(w).then((m) => m.ns!);
    w.send({ bench: true, task, n: LOOP[task] });
    return answer;
  };
  const pair: Record<string, number[]> = {};
  const pairTasks: Task[] = ['zonal_req_one', 'zonal_req_100k', 'zonal_conn', 'cluster_one', 'cluster_100k'];
  for (const task of pairTasks) {
    await Promise.all(workers.map((w) => ask(w, task)));
    pair[task] = [];
    for (let r = 0; r < rounds; r++) pair[task].push(...(await Promise.all(workers.map((w) => ask(w, task)))));
  }
  // The cluster limiter alone in one worker, for its single-process figure.
  for (const task of ['cluster_one', 'cluster_100k'] as const) {
    await ask(workers[0], task);
    single[task] = [];
    for (let r = 0; r < rounds; r++) single[task].push(await ask(workers[0], task));
  }
  for (const w of workers) w.kill();

  // Every decision counted in the status: warm-up and rounds, here and in both workers.
  const expect = (task: Task, processes: number) => (1 + rounds) * LOOP[task] * processes;
  const checks: Array<[string, number, number]> = [
    ['one', counted(status, 'one'), expect('zonal_req_one', 1) + expect('zonal_req_one', 2)],
    ['many', counted(status, 'many'), expect('zonal_req_100k', 1) + expect('zonal_req_100k', 2)],
    ['conns', counted(status, 'conns', true), expect('zonal_conn', 1) + expect('zonal_conn', 2)],
  ];
  for (const [zone, got, want] of checks) if (got !== want) fail(`zone ${zone} counted ${got} passed decisions, the loops made ${want}`);

  const m = (list: number[] | undefined) => (list ? median(list) : NaN);
  const rows = [
    ['limit_req, one key', 'zonal_req_one', 'memory_one', 'cluster_one'],
    ['limit_req, 100k keys', 'zonal_req_100k', 'memory_100k', 'cluster_100k'],
  ] as const;
  table(
    `ns per decision, median of ${rounds} rounds (one process; rate-limiter-flexible awaited per decision, as a request handler does)`,
    ['limit', 'zonal', 'RateLimiterMemory', 'RateLimiterCluster', 'Cluster / zonal'],
    [
      ...rows.map(([name, z, mem, cl]) => [name, Math.round(m(single[z])), Math.round(m(single[mem])), Math.round(m(single[cl])), Math.round(m(single[cl]) / m(single[z]))]),
      ['limit_conn, acquire + release', Math.round(m(single.zonal_conn)), '-', '-', '-'],
    ],
  );
  table(
    `Two worker processes deciding at once on the same zone (one key: one bucket for both): ns per decision in each worker, decisions/s of both`,
    ['limit', 'zonal ns', 'zonal decisions/s', 'RateLimiterCluster ns', 'RateLimiterCluster decisions/s', 'Cluster / zonal'],
    [
      ...rows.map(([name, z, , cl]) => [name, Math.round(m(pair[z])), Math.round(2e9 / m(pair[z])), Math.round(m(pair[cl])), Math.round(2e9 / m(pair[cl])), Math.round(m(pair[cl]) / m(pair[z]))]),
      ['limit_conn, acquire + release', Math.round(m(pair.zonal_conn)), Math.round(2e9 / m(pair.zonal_conn)), '-', '-', '-'],
    ],
  );
  console.log(`\n${availableParallelism()} CPUs; targets: a decision <= 250 ns, >= 20x faster than RateLimiterCluster`);
  status.remove();
  const results: Record<string, number> = {};
  for (const [k, v] of Object.entries(single)) results[`${k}_ns`] = m(v);
  for (const [k, v] of Object.entries(pair)) results[`two_processes_${k}_ns`] = m(v);
  results.cluster_over_zonal_one_key = m(single.cluster_one) / m(single.zonal_req_one);
  results.two_processes_cluster_over_zonal_one_key = m(pair.cluster_one) / m(pair.zonal_req_one);
  finish('limits', results);
  process.exit(0);
}

async function worker(): Promise<void> {
  const own = deciders(Status.attach(), true);
  // RateLimiterCluster answers once the primary has made its limiter.
  await own.cluster!.consume('warm');
  // rate-limiter-flexible talks over the same channel: the bench's messages say so.
  process.on('message', async (m: { bench?: boolean; task: Task; n: number }) => {
    if (m?.bench) process.send!({ bench: true, ns: await run(own, m.task, m.n) });
  });
  process.send!({ bench: true, ready: true });
}

if (cluster.isPrimary) await primary();
else await worker();
