// npm run bench -- server [--rounds N] [--seconds S] (by default 12 rounds of 2 s each):
// what the zonal server costs on the simplest request it serves, `return 200 "hello\n"`
// with metrics on (a server zone and a location zone recording every request), next to
// the same node:http server without zonal. Both sides have the same process structure: a
// node:cluster primary and one worker accepting on the shared listening socket itself
// (SCHED_NONE, as zonal's primary sets), answering 200 with `Content-Type: text/plain`,
// `Content-Length: 6` and `hello\n`, with node:http's default options.
//
// Both servers run as child processes of this one for the whole run; autocannon runs here,
// on loopback, and loads one side at a time: a warm-up round each, then rounds that
// alternate plain, zonal, plain, zonal... so that the machine's drift over the run (these
// 2-core machines move by 20–30 %) falls on both sides alike. Many short rounds rather
// than a few long ones: the drift is slow, so neighbouring rounds see the same machine,
// and a median over 12 outlasts a few rounds that lose their core. Each side's figure is
// the median of its rounds; overhead_pct = (rps_plain - rps_zonal) / rps_plain * 100.
// On 2 cores the load generator and the server's worker compete for CPU: that is fine,
// both sides suffer the same, and the CPU each used is shown (the server's CPU time per
// request is the figure the machine's noise moves least).
//
// After the load, zonal's own API (a `/status/` location in the same server) must show at
// least as many requests in the server zone as autocannon had answered by zonal: fewer
// would mean the metrics were not on, and the run fails.
//
// Every wait is bounded in tries and time; every child is stopped with SIGTERM (SIGKILL
// after 10 s) at the end, and sent SIGTERM when this process exits in any other way.
// Everything listens on 127.0.0.1 only.
import cluster from 'node:cluster';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, get as httpGet, type IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail, finish, fmt, median, nowNs, table } from './report.js';

const SCRIPT = fileURLToPath(import.meta.url);

/** A measured thing turned out wrong: the run fails with this message, after the
 * children are stopped. */
class Broken extends Error {}
function broken(message: string): never {
  throw new Broken(message);
}
/** The zonal command of this checkout (this file runs as dist/bench/server.js). */
const ZONAL = fileURLToPath(new URL('../../bin/zonal', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const HOST = '127.0.0.1';
const BODY = 'hello\n';

// ---- The plain server (a child: `server.js --plain <port>`) ------------------------------

/** The primary: one worker, which accepts on the shared socket itself, as zonal's does.
 * Stops on SIGTERM or SIGINT; exits 1 if its worker dies on its own. */
function plainPrimary(): void {
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  const worker = cluster.fork();
  let stopping = false;
  worker.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`plain server: the worker exited (${signal ?? `code ${code}`})\n`);
    process.exit(stopping ? 0 : 1);
  });
  const stop = () => {
    if (stopping) process.exit(1);
    stopping = true;
    worker.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** The worker: node:http with its default options, the same answer as zonal's `return`
 * (whose headers and body are also built once). */
function plainWorker(port: number): void {
  const body = Buffer.from(BODY);
  const headers = { 'Content-Type': 'text/plain', 'Content-Length': body.length };
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, headers);
    res.end(body);
  });
  server.listen(port, HOST);
  // Stopped by the primary (an exit, not death by signal: --cpu-prof writes its profile),
  // or a lost primary: nothing to serve for.
  process.on('SIGTERM', () => process.exit(0));
  process.on('disconnect', () => process.exit(0));
}

// ---- Children ----------------------------------------------------------------------------

interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  /** The end of what it wrote, shown when it fails. */
  output: string;
}

const children: Child[] = [];

const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

function start(name: string, args: string[]): Child {
  const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: false });
  const child: Child = { name, process: proc, output: '' };
  const keep = (chunk: Buffer) => (child.output = (child.output + chunk.toString('utf8')).slice(-4000));
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  children.push(child);
  return child;
}

/** SIGTERM, then SIGKILL if it has not exited within 10 s; resolves on its exit. */
function stop(child: Child): Promise<void> {
  const proc = child.process;
  return new Promise((resolve) => {
    if (!running(proc)) return resolve();
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    proc.kill('SIGTERM');
  });
}

// Whatever way this process ends, its servers do not outlive it. (A zonal primary stopped
// with SIGTERM drains its worker and removes its shared-memory zones itself.)
let tmp: string | undefined;
process.on('exit', () => {
  for (const c of children) if (running(c.process)) c.process.kill('SIGTERM');
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** A port free on 127.0.0.1 a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One GET on a fresh connection, with a 2 s timeout. */
function getOnce(port: number, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpGet({ host: HOST, port, path, agent: false, timeout: 2000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} on port ${port} took over 2 s`)));
    req.on('error', reject);
  });
}

const START_TRIES = 200;
const START_DELAY_MS = 100;

/** Resolves with the first answer to GET / once the child's server answers; rejects if
 * the child exits first or nothing answers within START_TRIES tries (about 20 s and at
 * most 200 × 2 s when every try times out). */
async function ready(child: Child, port: number): Promise<Answer> {
  let last: unknown;
  for (let i = 0; i < START_TRIES; i++) {
    if (!running(child.process)) throw new Error(`the ${child.name} server exited (${child.process.signalCode ?? `code ${child.process.exitCode}`}):\n${child.output}`);
    try {
      return await getOnce(port, '/');
    } catch (e) {
      last = e;
    }
    await new Promise((resolve) => setTimeout(resolve, START_DELAY_MS));
  }
  throw new Error(`the ${child.name} server did not answer on port ${port} in ${START_TRIES} tries (last: ${(last as Error)?.message}):\n${child.output}`);
}

// ---- CPU of a process tree (Linux /proc, as zonal is Linux-only) ------------------------

function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** The pids of a process's children: its cluster workers. */
function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // ppid is field 4 of the line, 2 after the name and state.
    if (Number(statFields(Number(entry))?.[1]) === pid) out.push(Number(entry));
  }
  return out;
}

/** CPU seconds (user + system) a process and its children have used so far: clock
 * ticks of 1/100 s, utime and stime being fields 14 and 15 (12 and 13 after the name). */
function cpuSecondsOfTree(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const f = statFields(pid);
    if (f) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks / 100;
}

// ---- Load ----------------------------------------------------------------------------------

// autocannon 8 has no typings; what this file uses of it.
interface AutocannonResult {
  /** Seconds. */
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
  /** `sent` also counts the requests in flight when the run stopped. */
  requests: { total: number; sent: number };
  /** Response bytes read. */
  throughput: { total: number };
  latency: { p50: number; p99: number };
}
type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const CONNECTIONS = 50;

type Side = 'plain' | 'zonal';

interface Round {
  side: Side;
  rps: number;
  requests: number;
  sent: number;
  bytesPerResponse: number;
  latencyP50: number;
  latencyP99: number;
  /** Server processes (primary + worker) CPU over the round's wall time, % of one core. */
  serverCpu: number;
  /** Server CPU microseconds per answered request. */
  cpuUsPerRequest: number;
  /** This process's (autocannon's) CPU, % of one core. */
  generatorCpu: number;
}

interface Target {
  side: Side;
  port: number;
  pids: number[];
}

async function loadRound(target: Target, seconds: number): Promise<Round> {
  const serverBefore = cpuSecondsOfTree(target.pids);
  const ownBefore = process.cpuUsage();
  const start = nowNs();
  const r = await autocannon({ url: `http://${HOST}:${target.port}/`, connections: CONNECTIONS, pipelining: 1, duration: seconds });
  const wall = (nowNs() - start) / 1e9;
  const own = process.cpuUsage(ownBefore);
  const server = cpuSecondsOfTree(target.pids) - serverBefore;
  if (r.errors || r.timeouts || r.non2xx || r['2xx'] !== r.requests.total || r.requests.total === 0)
    broken(`${target.side}: ${r.errors} errors, ${r.timeouts} timeouts, ${r.non2xx} non-2xx of ${r.requests.total} requests`);
  return {
    side: target.side,
    rps: r.requests.total / r.duration,
    requests: r.requests.total,
    sent: r.requests.sent,
    bytesPerResponse: r.throughput.total / r.requests.total,
    latencyP50: r.latency.p50,
    latencyP99: r.latency.p99,
    serverCpu: (server / wall) * 100,
    cpuUsPerRequest: (server * 1e6) / r.requests.total,
    generatorCpu: ((own.user + own.system) / 1e6 / wall) * 100,
  };
}

// ---- Run -----------------------------------------------------------------------------------

function zonalConfig(port: number): string {
  return `# written by bench/server.ts
worker_processes 1;
http {
    server {
        listen ${HOST}:${port};
        status_zone bench;
        location / {
            status_zone root;
            return 200 "hello\\n";
        }
        location /status/ {
            api /status/;
        }
    }
}
`;
}

/** Reads one number of zonal's status tree through its API location. */
async function statusNumber(port: number, path: string): Promise<number> {
  const a = await getOnce(port, `/status/${path}`);
  const value: unknown = a.status === 200 ? JSON.parse(a.body) : undefined;
  if (typeof value !== 'number') broken(`GET /status/${path} answered ${a.status}: ${a.body.slice(0, 300)}`);
  return value;
}

/** The headers a side answers with, without the date's value. */
const headerLine = (a: Answer) =>
  Object.entries(a.headers)
    .map(([k, v]) => (k === 'date' ? k : `${k}: ${v}`))
    .join(', ');

function options(): { rounds: number; seconds: number; warmupSeconds: number } {
  const args = process.argv.slice(2);
  const value = (name: string, fallback: number) => {
    const i = args.indexOf(name);
    if (i < 0) return fallback;
    const v = Number(args[i + 1]);
    if (!Number.isInteger(v) || v < 1 || v > 60) fail(`${name} takes a whole number from 1 to 60, not "${args[i + 1]}"`);
    return v;
  };
  return { rounds: value('--rounds', 12), seconds: value('--seconds', 2), warmupSeconds: 2 };
}

async function main(): Promise<void> {
  const { rounds, seconds, warmupSeconds } = options();
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => process.exit(130));
  const dir = (tmp = mkdtempSync(join(tmpdir(), 'zonal-bench-server-')));
  let error: unknown;
  try {
    const zonalPort = await freePort();
    const plainPort = await freePort();
    const conf = join(dir, 'zonal.conf');
    writeFileSync(conf, zonalConfig(zonalPort));

    const zonal = start('zonal', [ZONAL, '-c', conf]);
    const plain = start('plain', [SCRIPT, '--plain', String(plainPort)]);
    const [zonalFirst, plainFirst] = await Promise.all([ready(zonal, zonalPort), ready(plain, plainPort)]);
    for (const [side, a] of [['zonal', zonalFirst], ['plain', plainFirst]] as const)
      if (a.status !== 200 || a.body !== BODY || a.headers['content-type'] !== 'text/plain')
        broken(`${side} answered GET / with ${a.status}, ${a.headers['content-type']}: ${JSON.stringify(a.body.slice(0, 200))}`);
    const targets: Record<Side, Target> = {
      plain: { side: 'plain', port: plainPort, pids: [plain.process.pid!, ...childPids(plain.process.pid!)] },
      zonal: { side: 'zonal', port: zonalPort, pids: [zonal.process.pid!, ...childPids(zonal.process.pid!)] },
    };
    for (const t of Object.values(targets)) if (t.pids.length !== 2) broken(`the ${t.side} server runs ${t.pids.length} processes, not a primary and a worker`);

    // Warm-up (both sides' JIT, connections, the zones' first pages), then the rounds.
    let zonalAnswered = 1; // the GET / above
    for (const side of ['plain', 'zonal'] as const) {
      const r = await loadRound(targets[side], warmupSeconds);
      if (side === 'zonal') zonalAnswered += r.requests;
    }
    const timed: Round[] = [];
    for (let i = 0; i < rounds; i++)
      for (const side of ['plain', 'zonal'] as const) {
        const r = await loadRound(targets[side], seconds);
        if (side === 'zonal') zonalAnswered += r.requests;
        timed.push(r);
      }

    // The metrics were on: every request autocannon saw answered was counted (requests
    // in flight when a round stopped were counted too, unanswered: hence "at least").
    const counted = await statusNumber(zonalPort, 'http/server_zones/bench/requests/total');
    const countedRoot = await statusNumber(zonalPort, 'http/location_zones/root/requests/total');

    const plainRounds = timed.filter((r) => r.side === 'plain');
    const zonalRounds = timed.filter((r) => r.side === 'zonal');
    const rpsPlain = median(plainRounds.map((r) => r.rps));
    const rpsZonal = median(zonalRounds.map((r) => r.rps));
    const overhead = ((rpsPlain - rpsZonal) / rpsPlain) * 100;
    // Each zonal round against the plain round just before it: drift between pairs cancels.
    const paired = median(zonalRounds.map((z, i) => ((plainRounds[i].rps - z.rps) / plainRounds[i].rps) * 100));
    const cpuPlain = median(plainRounds.map((r) => r.cpuUsPerRequest));
    const cpuZonal = median(zonalRounds.map((r) => r.cpuUsPerRequest));
    const cpuOverhead = ((cpuZonal - cpuPlain) / cpuPlain) * 100;

    table(
      `return 200 under autocannon: ${CONNECTIONS} connections, pipelining 1, ${rounds} rounds of ${seconds} s each side, alternating, after ${warmupSeconds} s of warm-up each`,
      ['round', 'plain req/s', 'zonal req/s', 'zonal / plain', 'plain CPU us/req', 'zonal CPU us/req'],
      plainRounds.map((p, i) => {
        const z = zonalRounds[i];
        return [i + 1, Math.round(p.rps), Math.round(z.rps), Math.round((z.rps / p.rps) * 1000) / 1000, p.cpuUsPerRequest, z.cpuUsPerRequest];
      }),
    );
    const sideRow = (name: string, rs: Round[]): Array<string | number> => [
      name,
      Math.round(median(rs.map((r) => r.rps))),
      Math.round(Math.min(...rs.map((r) => r.rps))),
      Math.round(Math.max(...rs.map((r) => r.rps))),
      median(rs.map((r) => r.latencyP50)),
      median(rs.map((r) => r.latencyP99)),
      median(rs.map((r) => r.bytesPerResponse)),
      median(rs.map((r) => r.serverCpu)),
      median(rs.map((r) => r.cpuUsPerRequest)),
      median(rs.map((r) => r.generatorCpu)),
    ];
    table(
      'Medians over the rounds (CPU in % of one core; the server is its primary and worker)',
      ['side', 'req/s', 'min', 'max', 'p50 ms', 'p99 ms', 'bytes/resp', 'server CPU %', 'CPU us/req', 'autocannon CPU %'],
      [sideRow('plain node:http', plainRounds), sideRow('zonal, metrics on', zonalRounds)],
    );
    table("First GET / of each side, on a connection of its own (the date header's value left out)", ['side', 'headers'], [
      ['plain', headerLine(plainFirst)],
      ['zonal', headerLine(zonalFirst)],
    ]);
    table(
      "zonal's own count, read through its API after the load",
      ['what', 'requests'],
      [
        ['answered to autocannon and the first GET', zonalAnswered],
        ['server zone bench: requests.total', counted],
        ['location zone root: requests.total', countedRoot],
      ],
    );
    if (counted < zonalAnswered) broken(`zonal's server zone counted ${counted} requests, fewer than the ${zonalAnswered} answered: the metrics were not on`);
    const met = overhead <= 5 ? 'met' : 'MISSED';
    table('Target (shown, not asserted)', ['target', 'measured', 'status'], [['overhead_pct <= 5', `${fmt(Math.round(overhead * 10) / 10, 1)} %`, met]]);

    finish('server', {
      rps_zonal: Math.round(rpsZonal),
      rps_plain: Math.round(rpsPlain),
      overhead_pct: Math.round(overhead * 10) / 10,
      overhead_pct_paired: Math.round(paired * 10) / 10,
      cpu_us_per_req_plain: cpuPlain,
      cpu_us_per_req_zonal: cpuZonal,
      cpu_overhead_pct: Math.round(cpuOverhead * 10) / 10,
      rounds,
      round_seconds: seconds,
      requests_answered: zonalAnswered,
      requests_counted: counted,
    });
  } catch (e) {
    error = e;
  } finally {
    await Promise.all(children.map(stop));
    rmSync(dir, { recursive: true, force: true });
    tmp = undefined;
  }
  if (error) fail(error instanceof Broken ? error.message : ((error as Error).stack ?? String(error)));
}

if (process.argv[2] === '--plain') {
  if (cluster.isPrimary) plainPrimary();
  else plainWorker(Number(process.argv[3]));
} else await main();
