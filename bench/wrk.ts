// wrk (Debian's package, installed with apt-get when it is missing and this runs as root)
// as a benchmark's load generator: one run of it against one URL, its report read back
// into numbers, and any error or non-2xx answer it saw made a Broken run. Not a
// benchmark: scripts/bench.mjs lists it among its HELPERS.
import { broken, cpuSecondsOfTree, debianCommand, finished, reapedChildrenCpuSeconds, runFor, start } from './processes.js';
import { nowNs } from './report.js';

/** The wrk command and its version line, or why there is none. */
export function wrkCommand(): { command: string; version: string; installed: boolean } | { reason: string } {
  const found = debianCommand('wrk');
  if ('reason' in found) return found;
  // `wrk -v` prints its version and then its usage, and exits 1.
  const version = runFor(found.command, ['-v'], 10).output.split('\n')[0].replace(/\s*Copyright.*$/, '').trim();
  if (!version.startsWith('wrk')) return { reason: `${found.command} -v did not say it is wrk: ${version}` };
  return { ...found, version };
}

export interface WrkLoad {
  threads: number;
  connections: number;
  /** Whole seconds. */
  seconds: number;
}

/** What one run of wrk measured. */
export interface WrkMeasured {
  /** Requests answered (wrk's "N requests in"). */
  requests: number;
  rps: number;
  bytesPerResponse: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** wrk's own CPU, % of one core. */
  wrkCpu: number;
}

const TIME_UNITS: Record<string, number> = { us: 1e-3, ms: 1, s: 1e3, m: 60e3, h: 3600e3 };
const BYTE_UNITS: Record<string, number> = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 };

/** A number of wrk's report with its unit (`1.23ms`, `15.00MB`), in ms or bytes. */
function withUnit(value: string, unit: string, units: Record<string, number>, what: string, report: string): number {
  const scale = units[unit];
  if (scale === undefined) broken(`wrk's report has ${what} in an unknown unit "${unit}":\n${report}`);
  return Number(value) * scale;
}

/** Reads wrk's report (run with --latency); Broken when it shows a socket error or a
 * non-2xx/3xx answer, or no answer at all. `side` names the server in messages. */
function parseWrk(side: string, report: string): Omit<WrkMeasured, 'wrkCpu'> {
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(report);
  if (errors && errors.slice(1).some((n) => Number(n) > 0)) broken(`${side}: wrk saw socket errors (${errors[0]}):\n${report}`);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(report);
  if (non2xx && Number(non2xx[1]) > 0) broken(`${side}: ${non2xx[1]} answers were not 2xx or 3xx:\n${report}`);
  const total = /(\d+) requests in ([\d.]+)(\w+), ([\d.]+)(\w+) read/.exec(report);
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(report);
  const p50 = /^\s+50%\s+([\d.]+)(\w+)/m.exec(report);
  const p99 = /^\s+99%\s+([\d.]+)(\w+)/m.exec(report);
  if (!total || !rps || !p50 || !p99) broken(`${side}: wrk's report is not as expected:\n${report}`);
  const requests = Number(total[1]);
  if (requests === 0) broken(`${side}: wrk had no answer:\n${report}`);
  return {
    requests,
    rps: Number(rps[1]),
    bytesPerResponse: withUnit(total[4], total[5], BYTE_UNITS, 'bytes read', report) / requests,
    latencyP50Ms: withUnit(p50[1], p50[2], TIME_UNITS, 'a latency', report),
    latencyP99Ms: withUnit(p99[1], p99[2], TIME_UNITS, 'a latency', report),
  };
}

/** One run of wrk (`command`) on `url`, with the CPU seconds each process tree of `trees`
 * used meanwhile (in their order) and the run's wall time. wrk is a child like the
 * servers (stopped with them if this process ends first) and has 30 s more than its
 * duration to end; its CPU is what this process's reaped children gained meanwhile.
 * `extra` goes on wrk's command line before the URL (`['-s', script]`). */
export async function wrk(command: string, side: string, url: string, load: WrkLoad, trees: readonly (readonly number[])[], extra: readonly string[] = []): Promise<{ measured: WrkMeasured; wall: number; cpu: number[] }> {
  const before = trees.map((pids) => cpuSecondsOfTree(pids));
  const reapedBefore = reapedChildrenCpuSeconds();
  const startNs = nowNs();
  const run = start(`wrk (${side})`, command, [`-t${load.threads}`, `-c${load.connections}`, `-d${load.seconds}s`, '--latency', ...extra, url]);
  const code = await finished(run, load.seconds + 30);
  const wall = (nowNs() - startNs) / 1e9;
  const cpu = trees.map((pids, i) => cpuSecondsOfTree(pids) - before[i]);
  const wrkCpu = ((reapedChildrenCpuSeconds() - reapedBefore) / wall) * 100;
  if (code !== 0) broken(`${side}: wrk exited with code ${code}:\n${run.output}`);
  return { measured: { ...parseWrk(side, run.output), wrkCpu }, wall, cpu };
}
