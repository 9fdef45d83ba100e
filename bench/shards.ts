// npm run bench -- shards: what rendering /status/ costs in one process when the zones
// have more worker slots than processes ever wrote, as the zonal server makes them
// (2 * max(workers, CPUs) + 1: 5 on a 2-CPU machine with one or two workers).
//
// Two trees: the example configuration's (conf/zonal.conf) and bench/api.ts's (1,000
// upstreams of 10 peers, 100 server zones). Each is created with 5 slots, and 1, 2 or
// all 5 slots are claimed by child processes that attach as writers, render the tree
// once (which makes every block, in their slot) and exit, as a worker that died would.
// All 5 written is the baseline: every shard must be read then. No load generator runs;
// the renders are timed in this process through the API handler.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createApi, type ApiHandler, type ApiRequest } from '../src/api/index.js';
import { INSTANCE_ENV, WORKER_SLOT_ENV } from '../src/engine/index.js';
import type { StatusConfig } from '../src/metrics/catalog.js';
import { Status } from '../src/metrics/status.js';
import { statusConfigOf } from '../src/server/catalog.js';
import { loadConfig } from '../src/server/config/load.js';
import { fail, finish, fmt, median, table, timeNs } from './report.js';

const SCRIPT = fileURLToPath(import.meta.url);
const EXAMPLE = fileURLToPath(new URL('../../conf/zonal.conf', import.meta.url));
const SLOTS = 5;
const WRITTEN = [1, 2, SLOTS];

function exampleConfig(): StatusConfig {
  const { config, errors } = loadConfig(EXAMPLE);
  if (!config) fail(`${EXAMPLE}: ${errors.map((e) => e.message).join('; ')}`);
  return statusConfigOf(config);
}

function bigConfig(): StatusConfig {
  return {
    http: {
      serverZones: Array.from({ length: 100 }, (_, z) => ({ name: `site-${z}` })),
      upstreams: Array.from({ length: 1000 }, (_, u) => ({
        name: `backend-${u}`,
        peers: Array.from({ length: 10 }, (_, p) => ({ server: `10.${(u >> 8) & 255}.${u & 255}.${p + 1}:8080` })),
      })),
    },
  };
}

const request = (path: string): ApiRequest => ({ method: 'GET', path, query: '', address: '127.0.0.1' });

function render(handler: ApiHandler): void {
  const res = handler(request('/status/'));
  if (!res || res.status !== 200) fail(`/status/ answered ${res?.status}`);
  res.release?.();
}

/** The child: attach as a writer in its slot, make every block by rendering, exit. */
function writeChild(): void {
  const status = Status.attach({ writer: true });
  render(createApi({ status }));
  process.exit(0);
}

function claimSlots(count: number): Promise<void[]> {
  return Promise.all(
    Array.from(
      { length: count },
      (_, slot) =>
        new Promise<void>((resolve, reject) => {
          const child = fork(SCRIPT, ['write'], { env: { ...process.env, [WORKER_SLOT_ENV]: String(slot) } });
          child.once('error', reject);
          child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer in slot ${slot} exited with ${code}`))));
        }),
    ),
  );
}

/** The tree with `written` of its slots claimed, and a handler that renders it. */
async function prepare(name: string, config: StatusConfig, written: number): Promise<{ status: Status; handler: ApiHandler }> {
  const instance = `bench-shards-${process.pid}-${name}-${written}`;
  process.env[INSTANCE_ENV] = instance;
  const status = Status.create(config, { workers: SLOTS, instance, writer: false });
  try {
    await claimSlots(written);
  } catch (e) {
    status.remove();
    throw e;
  }
  return { status, handler: createApi({ status }) };
}

/** Median microseconds of one render of each tree, their rounds interleaved so that the
 * machine's other load weighs on all of them alike. */
function interleaved(handlers: ApiHandler[], rounds: number): number[] {
  const times = handlers.map(() => [] as number[]);
  for (let r = 0; r < rounds + WARMUP; r++)
    handlers.forEach((h, i) => {
      const ns = timeNs(() => render(h));
      if (r >= WARMUP) times[i].push(ns);
    });
  return times.map((t) => median(t) / 1e3);
}

const WARMUP = 10;

async function main(): Promise<void> {
  const results: Record<string, number> = {};
  const rows: (string | number)[][] = [];
  for (const [name, config, rounds] of [
    ['example', exampleConfig(), 3001],
    ['10k_peers', bigConfig(), 41],
  ] as const) {
    const trees: { status: Status; handler: ApiHandler }[] = [];
    try {
      for (const w of WRITTEN) trees.push(await prepare(name, config, w));
      const us = interleaved(
        trees.map((t) => t.handler),
        rounds,
      );
      const base = us[us.length - 1];
      const ms = base >= 1000;
      WRITTEN.forEach((w, i) => {
        rows.push([name, `${w} of ${SLOTS}`, ms ? fmt(us[i] / 1e3) : fmt(us[i]), ms ? 'ms' : 'us', fmt(base / us[i]), rounds]);
        results[`${name}_${w}_of_${SLOTS}_us`] = us[i];
      });
    } finally {
      for (const t of trees) t.status.remove();
    }
  }
  table('GET /status/ rendered in one process', ['tree', 'slots written', 'median', 'unit', `speed-up over ${SLOTS} of ${SLOTS}`, 'runs'], rows);
  finish('shards', results);
}

if (process.argv[2] === 'write') writeChild();
else await main();
