// What the benchmarks that run servers as child processes and load them with autocannon
// or wrk (bench/server.ts, bench/proxy.ts, bench/side.ts) share, kept in one place so that
// they start, wait for, measure, load and stop their servers the same way, and a fix to
// one is a fix to all: nginx (found, or installed, and started), zonal's counts read
// through its API, and the plain Node proxies' header handling included.
// Not a benchmark: scripts/bench.mjs lists it among its HELPERS.
//
// Every wait here is bounded in tries and time; every child started here is stopped with
// SIGTERM (SIGKILL after 10 s) when runBench()'s body ends, and sent SIGTERM when the
// process exits in any other way. Everything listens on 127.0.0.1 only.
import cluster from 'node:cluster';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpGet, type IncomingHttpHeaders } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { autocannon, fail, fmt, nowNs, table, type Cell } from './report.js';

/** The zonal command of this checkout (this file runs as dist/bench/processes.js, next to
 * the benchmarks). */
export const ZONAL = fileURLToPath(new URL('../../bin/zonal', import.meta.url));
/** The checkout: every child's working directory. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const HOST = '127.0.0.1';

/** A measured thing turned out wrong: the run fails with this message, after the
 * children are stopped. */
export class Broken extends Error {}
export function broken(message: string): never {
  throw new Broken(message);
}

// ---- A node:cluster primary of one worker (in a child: the plain side) -----------------

/** The primary: one worker, which accepts on the shared socket itself, as zonal's does.
 * Stops on SIGTERM or SIGINT; exits 1 if its worker dies on its own. `what` names it in
 * that message ("plain server", "plain proxy"). */
export function oneWorkerPrimary(what: string): void {
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  const worker = cluster.fork();
  let stopping = false;
  worker.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`${what}: the worker exited (${signal ?? `code ${code}`})\n`);
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

// ---- Children ----------------------------------------------------------------------------

export interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  /** The end of what it wrote, shown when it fails. */
  output: string;
}

/** Every child start() made: stopped by runBench(), or on this process's exit. */
const children: Child[] = [];

const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

/** Starts `command` (process.execPath for a node script) in the checkout, keeping the end
 * of its output. */
export function start(name: string, command: string, args: string[]): Child {
  const proc = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: false });
  const child: Child = { name, process: proc, output: '' };
  const keep = (chunk: Buffer) => (child.output = (child.output + chunk.toString('utf8')).slice(-4000));
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  // A command that cannot be started: shown by ready() as an exit.
  proc.on('error', (e) => keep(Buffer.from(`${e.message}\n`)));
  children.push(child);
  return child;
}

/** SIGTERM, then SIGKILL if it has not exited within 10 s; resolves on its exit. */
function stop(child: Child): Promise<void> {
  const proc = child.process;
  return new Promise((resolve) => {
    if (!running(proc) || proc.pid === undefined) return resolve();
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    proc.kill('SIGTERM');
  });
}

/** Resolves with the exit code of a command start() has just started (in the same tick)
 * once it has ended and its output is all read (`output`); SIGKILL if it has not ended
 * within `seconds`, which is then Broken. */
export function finished(child: Child, seconds: number): Promise<number> {
  const proc = child.process;
  return new Promise((resolve, reject) => {
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      proc.kill('SIGKILL');
    }, seconds * 1000);
    // 'close' comes after 'exit' and the end of both pipes; a command that could not be
    // started has 'error' (kept in its output by start()) and then 'close' too.
    proc.once('close', (code) => {
      clearTimeout(timer);
      if (late) reject(new Broken(`${child.name} did not end within ${seconds} s:\n${child.output}`));
      else resolve(code ?? -1);
    });
  });
}

/** A child forked with an IPC channel (a benchmark's own worker): disconnecting lets it
 * finish and exit by itself; SIGKILL if it has not within 5 s. Resolves on its exit. */
export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    if (child.connected) child.disconnect();
    else child.kill();
  });
}

// Whatever way this process ends, its servers do not outlive it, nor does its temporary
// directory. (A zonal primary, a cluster primary and an nginx master stopped with SIGTERM
// stop their workers; a zonal primary also removes its shared-memory zones itself.)
let tmp: string | undefined;
process.on('exit', () => {
  for (const c of children) if (running(c.process)) c.process.kill('SIGTERM');
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** A benchmark's run: `body` with a fresh temporary directory (zonal-bench-<name>-...),
 * after which every child is stopped and the directory removed, whether it succeeded or
 * not; a failure then ends the run through report.ts's fail(), with the message of a
 * Broken and the stack of anything else. SIGINT, SIGTERM and SIGHUP exit with 130 (the
 * exit hook above still stops the children). */
export async function runBench(name: string, body: (dir: string) => Promise<void>): Promise<void> {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => process.exit(130));
  const dir = (tmp = mkdtempSync(join(tmpdir(), `zonal-bench-${name}-`)));
  let error: unknown;
  try {
    await body(dir);
  } catch (e) {
    error = e;
  } finally {
    await Promise.all(children.map(stop));
    rmSync(dir, { recursive: true, force: true });
    tmp = undefined;
  }
  if (error) fail(error instanceof Broken ? error.message : ((error as Error).stack ?? String(error)));
}

// Ports handed out by freePort in this process: the kernel may pick a port again once its
// probe is closed, and two servers given one port, the second failing to bind, had a run
// measure nginx as if it were the bare node:http server.
const handedOut = new Set<number>();

/** A port free on 127.0.0.1 a moment ago, and not handed out before by this process. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createNetServer();
      server.once('error', reject);
      server.listen(0, HOST, () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body as it came (a compressed one is no text). */
  bytes: Buffer;
}

/** One GET on a fresh connection, with a 2 s timeout; `headers`: the request's. */
export function getOnce(port: number, path: string, headers?: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpGet({ host: HOST, port, path, agent: false, timeout: 2000, ...(headers ? { headers } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: bytes.toString('utf8'), bytes });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} on port ${port} took over 2 s`)));
    req.on('error', reject);
  });
}

const START_TRIES = 200;
const START_DELAY_MS = 100;

/** Resolves with the first answer to GET / once the child's server answers; rejects (a
 * Broken: its message and the child's output say it all) if the child exits first or
 * nothing answers within START_TRIES tries (about 20 s and at most 200 × 2 s when every
 * try times out). */
export async function ready(child: Child, port: number): Promise<Answer> {
  let last: unknown;
  for (let i = 0; i < START_TRIES; i++) {
    if (!running(child.process)) throw new Broken(`the ${child.name} server exited (${child.process.signalCode ?? `code ${child.process.exitCode}`}):\n${child.output}`);
    try {
      return await getOnce(port, '/');
    } catch (e) {
      last = e;
    }
    await new Promise((resolve) => setTimeout(resolve, START_DELAY_MS));
  }
  throw new Broken(`the ${child.name} server did not answer on port ${port} in ${START_TRIES} tries (last: ${(last as Error)?.message}):\n${child.output}`);
}

/** The headers an answer came with, without the date's value: to show side by side. */
export const headerLine = (a: Answer) =>
  Object.entries(a.headers)
    .map(([k, v]) => (k === 'date' ? k : `${k}: ${v}`))
    .join(', ');

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

/** The pids of a process's children: its cluster workers, or nginx's worker. */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // ppid is field 4 of the line, 2 after the name and state.
    if (Number(statFields(Number(entry))?.[1]) === pid) out.push(Number(entry));
  }
  return out;
}

/** CPU seconds (user + system) processes have used so far: clock ticks of 1/100 s,
 * utime and stime being fields 14 and 15 (12 and 13 after the name). */
export function cpuSecondsOfTree(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const f = statFields(pid);
    if (f) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks / 100;
}

/** CPU seconds (user + system) of this process's children that have exited and been
 * waited for, cutime and cstime (fields 16 and 17): the difference across a command run
 * to its end (a load generator) is what that command used. */
export function reapedChildrenCpuSeconds(): number {
  const f = statFields(process.pid);
  return f ? (Number(f[13]) + Number(f[14])) / 100 : 0;
}

// ---- Load ----------------------------------------------------------------------------------


/** autocannon's connections, pipelining 1: the load every side gets. */
export const CONNECTIONS = 50;

/** What one round of load measured on any side. */
export interface Measured {
  rps: number;
  requests: number;
  sent: number;
  bytesPerResponse: number;
  latencyP50: number;
  latencyP99: number;
  /** This process's (autocannon's) CPU, % of one core. */
  generatorCpu: number;
}

/** One round of autocannon on GET / of `port` for `duration` seconds, with the CPU
 * seconds each process tree of `trees` used meanwhile (in their order) and the round's
 * wall time, for per-side CPU figures. Any error, timeout or non-2xx answer is Broken:
 * `side` names it in the message. */
export async function load(side: string, port: number, duration: number, trees: readonly (readonly number[])[]): Promise<{ measured: Measured; wall: number; cpu: number[] }> {
  const before = trees.map((pids) => cpuSecondsOfTree(pids));
  const ownBefore = process.cpuUsage();
  const start = nowNs();
  const r = await autocannon({ url: `http://${HOST}:${port}/`, connections: CONNECTIONS, pipelining: 1, duration });
  const wall = (nowNs() - start) / 1e9;
  const own = process.cpuUsage(ownBefore);
  const cpu = trees.map((pids, i) => cpuSecondsOfTree(pids) - before[i]);
  if (r.errors || r.timeouts || r.non2xx || r['2xx'] !== r.requests.total || r.requests.total === 0)
    broken(`${side}: ${r.errors} errors, ${r.timeouts} timeouts, ${r.non2xx} non-2xx of ${r.requests.total} requests`);
  const measured: Measured = {
    rps: r.requests.total / r.duration,
    requests: r.requests.total,
    sent: r.requests.sent,
    bytesPerResponse: r.throughput.total / r.requests.total,
    latencyP50: r.latency.p50,
    latencyP99: r.latency.p99,
    generatorCpu: ((own.user + own.system) / 1e6 / wall) * 100,
  };
  return { measured, wall, cpu };
}

/** A warm-up round of each side, then `rounds` rounds that alternate the sides in their
 * order (a, b, a, b...), so that the machine's drift over the run falls on every side
 * alike. The timed rounds, in the order they ran, and the requests each side answered in
 * all its rounds, warm-up included. */
export async function alternate<S extends string, R extends { requests: number }>(
  sides: readonly S[],
  rounds: number,
  warmupSeconds: number,
  seconds: number,
  round: (side: S, seconds: number) => Promise<R>,
): Promise<{ timed: R[]; answered: Record<S, number> }> {
  const answered = Object.fromEntries(sides.map((s) => [s, 0])) as Record<S, number>;
  for (const side of sides) answered[side] += (await round(side, warmupSeconds)).requests;
  const timed: R[] = [];
  for (let i = 0; i < rounds; i++)
    for (const side of sides) {
      const r = await round(side, seconds);
      answered[side] += r.requests;
      timed.push(r);
    }
  return { timed, answered };
}

// ---- Results ---------------------------------------------------------------------------

/** zonal's own count next to what autocannon had answered by zonal (`answered`, the first
 * GET included), with `more` rows of the benchmark's own; the run fails if the server zone
 * counted fewer: the metrics were not on. (Requests in flight when a round stopped were
 * counted too, unanswered: hence "at least".) */
export function checkZonalCount(answered: number, counted: number, countedRoot: number, more: readonly (readonly Cell[])[] = []): void {
  table(
    "zonal's own count, read through its API after the load",
    ['what', 'requests'],
    [
      ['answered to autocannon and the first GET', answered],
      ['server zone bench: requests.total', counted],
      ['location zone root: requests.total', countedRoot],
      ...more,
    ],
  );
  if (counted < answered) broken(`zonal's server zone counted ${counted} requests, fewer than the ${answered} answered: the metrics were not on`);
}

/** The target both benchmarks show (and do not assert): zonal within 5 % of the plain
 * Node side's requests/s. */
export function showTarget(overheadPct: number): void {
  const met = overheadPct <= 5 ? 'met' : 'MISSED';
  table('Target (shown, not asserted)', ['target', 'measured', 'status'], [['overhead_pct <= 5', `${fmt(Math.round(overheadPct * 10) / 10, 1)} %`, met]]);
}

// ---- Commands of Debian's packages (nginx, wrk) ------------------------------------------

/** A command on PATH, or in the sbin folders a non-root PATH may lack. */
function findCommand(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin'];
  for (const dir of dirs) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), fsConstants.X_OK);
      return join(dir, name);
    } catch {
      // not there
    }
  }
  return undefined;
}

/** Runs a command to its end, for at most `seconds`; its output when it fails. */
export function runFor(command: string, args: string[], seconds: number): { ok: boolean; output: string } {
  const r = spawnSync(command, args, {
    encoding: 'utf8',
    timeout: seconds * 1000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = `${r.error ? `${r.error.message}\n` : ''}${r.stdout ?? ''}${r.stderr ?? ''}`.trim().slice(-1000);
  return { ok: r.status === 0, output };
}

export type Command = { command: string; installed: boolean } | { reason: string };

/** The command `name` of Debian's package `pkg`, or why there is none. Installs the
 * package when the command is missing and this runs as root: from the package lists as
 * they are, and after `apt-get update` if that fails (each step at most 60 s). */
export function debianCommand(name: string, pkg = name): Command {
  let command = findCommand(name);
  if (command) return { command, installed: false };
  if (process.getuid?.() !== 0) return { reason: `${name} is not installed, and this is not root to install it` };
  if (!findCommand('apt-get')) return { reason: `${name} is not installed, and there is no apt-get to install it` };
  console.error(`${name} is not installed: apt-get install ${pkg} ...`);
  const install = ['install', '-y', '-qq', '--no-install-recommends', pkg];
  let r = runFor('apt-get', install, 60);
  if (!r.ok) {
    const update = runFor('apt-get', ['update', '-qq'], 60);
    r = update.ok ? runFor('apt-get', install, 60) : update;
  }
  command = findCommand(name);
  if (!r.ok || !command) return { reason: `apt-get could not install ${pkg}: ${r.output}` };
  return { command, installed: true };
}

/** nginx (installed if need be, as debianCommand() says) and its version, or why there is
 * none. */
export function nginxCommand(): { command: string; version: string; installed: boolean } | { reason: string } {
  const found = debianCommand('nginx');
  if ('reason' in found) return found;
  const v = runFor(found.command, ['-v'], 10);
  if (!v.ok) return { reason: `${found.command} -v failed: ${v.output}` };
  return { ...found, version: v.output.replace(/^nginx version:\s*/, '') };
}

/** Starts nginx (`command`) as a child, in the foreground, with its configuration, logs,
 * pid and temporary paths in `dir` (made here): a master and one worker, the access log
 * off, keep-alive connections not limited to nginx's 1000 requests (node:http has no such
 * limit), and `http` inside the `http {}` block. `name` names it in messages. */
export function startNginx(name: string, command: string, dir: string, http: string): Child {
  mkdirSync(dir, { recursive: true });
  const indented = http.trim().replace(/^/gm, '    ');
  const conf = `# written by zonal's bench/
worker_processes 1;
error_log ${dir}/error.log;
pid ${dir}/nginx.pid;
events {
    worker_connections 4096;
}
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path ${dir}/client_body;
    proxy_temp_path ${dir}/proxy;
    fastcgi_temp_path ${dir}/fastcgi;
    uwsgi_temp_path ${dir}/uwsgi;
    scgi_temp_path ${dir}/scgi;
${indented}
}
`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  // -e: the error log from the start, before the configuration is read.
  return start(name, command, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', 'daemon off;']);
}

// ---- zonal's API -------------------------------------------------------------------------

/** Reads one number of zonal's status tree through an API mounted at /status/ on `port`
 * (a location or an admin listener); undefined when the path is not found. */
export async function statusNumber(port: number, path: string): Promise<number | undefined> {
  const a = await getOnce(port, `/status/${path}`);
  if (a.status === 404) return undefined;
  const value: unknown = a.status === 200 ? JSON.parse(a.body) : undefined;
  if (typeof value !== 'number') broken(`GET /status/${path} answered ${a.status}: ${a.body.slice(0, 300)}`);
  return value;
}

/** The requests forwarded to the peer `127.0.0.1:<peerPort>` of `upstream`: its name as
 * it is in a path, or with the ':' percent-encoded; the path it was read at. */
export async function peerSelected(port: number, upstream: string, peerPort: number): Promise<{ path: string; value: number }> {
  const paths = [`${HOST}:${peerPort}`, `${HOST}%3A${peerPort}`].map((peer) => `http/upstreams/${upstream}/peers/${peer}/selected/total`);
  for (const path of paths) {
    const value = await statusNumber(port, path);
    if (value !== undefined) return { path, value };
  }
  const a = await getOnce(port, `/status/http/upstreams/${upstream}/peers`);
  broken(`zonal shows no peer ${HOST}:${peerPort} in upstream ${upstream} (GET ${paths.join(' and ')}: 404); its peers: ${a.status} ${a.body.slice(0, 300)}`);
}

/** zonal's own counts, each next to the requests the load generator had answered by that
 * part of zonal (`answered`): printed, and the run fails if any counted fewer (the
 * metrics were not on). Requests in flight when a round stopped were counted too,
 * unanswered: hence "at least". */
export function checkCounted(title: string, checks: readonly { what: string; answered: number; counted: number }[]): void {
  table(title, ['what', 'answered', 'counted'], checks.map((c) => [c.what, c.answered, c.counted]));
  for (const c of checks) if (c.counted < c.answered) broken(`zonal counted ${c.counted} for ${c.what}, fewer than the ${c.answered} requests answered: the metrics were not on`);
}

// ---- Plain Node proxies ------------------------------------------------------------------

/** Headers meant for one connection only (RFC 9110 7.6.1), which a proxy does not pass on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** The end-to-end headers of a message: without the hop-by-hop ones, those its
 * `Connection` header names, and `also` (`host`, when the backend is told its own). */
export function endToEnd(headers: IncomingHttpHeaders, also: readonly string[] = []): Record<string, string | string[]> {
  const connection = headers.connection;
  const named = connection ? connection.toLowerCase().split(',').map((t) => t.trim()) : [];
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.includes(name) || also.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

// ---- Options -----------------------------------------------------------------------------

/** `<name> N` among this process's arguments: a whole number from 1 to `max`, or the run
 * fails; `fallback` without it. */
export function wholeOption(name: string, fallback: number, max = 60): number {
  const args = process.argv.slice(2);
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const v = Number(args[i + 1]);
  if (!Number.isInteger(v) || v < 1 || v > max) fail(`${name} takes a whole number from 1 to ${max}, not "${args[i + 1]}"`);
  return v;
}

/** `--rounds N` (12 by default) and `--seconds S` (2), and the 2 s of warm-up each side
 * gets before them. */
export function roundOptions(): { rounds: number; seconds: number; warmupSeconds: number } {
  return { rounds: wholeOption('--rounds', 12), seconds: wholeOption('--seconds', 2), warmupSeconds: 2 };
}
