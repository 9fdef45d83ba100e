// The start_time row of `bench side`, and `npm run bench -- start-time` alone: how long a
// one-server configuration takes from the spawn of the command to its first 200 answer,
// zonal (`zonal -c`, one worker) beside nginx (`nginx -p -c -e -g 'daemon off;'`, a master
// and one worker), each started several times, alternating, in the same run. The figures
// are the median and the minimum of the wall time, and the CPU time (user + system) the
// server's processes had used by their first answer, which another engineer's load on the
// machine disturbs less. The machine's load average is shown beside them: a wall time
// measured under load says little. The goal: zonal answers within 0.5 s of its
// start (bin/zonal running its bundle, dist/bundle/, which `npm run bench` builds).
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { broken, childPids, cpuSecondsOfTree, freePort, getOnce, runBench, start, startNginx, ZONAL, nginxCommand, type Child } from './processes.js';
import { median, table } from './report.js';

/** Starts of each side. */
const STARTS = 9;
/** A try every this often, and at most this many: 20 s. */
const TRY_EVERY_MS = 2;
const TRIES = 10_000;

const HELLO = 'location / { return 200 "hello\\n"; }';

interface Start {
  /** Milliseconds from the spawn to the first 200. */
  readonly wallMs: number;
  /** CPU milliseconds the server's processes (the primary or master and its workers) had
   * used by then. */
  readonly cpuMs: number;
}

/** The first 200 on `port` of a child spawned at `began`; the child is stopped after. */
async function firstAnswer(child: Child, port: number, began: number): Promise<Start> {
  try {
    for (let i = 0; i < TRIES; i++) {
      if (child.process.exitCode !== null || child.process.signalCode !== null) broken(`${child.name} exited before it answered:\n${child.output}`);
      try {
        const a = await getOnce(port, '/');
        if (a.status === 200) {
          const wallMs = performance.now() - began;
          const pid = child.process.pid!;
          return { wallMs, cpuMs: cpuSecondsOfTree([pid, ...childPids(pid)]) * 1000 };
        }
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, TRY_EVERY_MS));
    }
    broken(`${child.name} did not answer within ${(TRIES * TRY_EVERY_MS) / 1000} s:\n${child.output}`);
  } finally {
    await new Promise<void>((resolve) => {
      const proc = child.process;
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      proc.once('exit', () => (clearTimeout(timer), resolve()));
      proc.kill('SIGTERM');
    });
  }
}

const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

export async function startTimeRow(dir: string, nginx: string): Promise<Record<string, unknown>> {
  const zonal: Start[] = [];
  const ref: Start[] = [];
  const loadBefore = load();
  for (let i = 0; i < STARTS; i++) {
    const zonalPort = await freePort();
    const zonalDir = join(dir, `start-zonal-${i}`);
    mkdirSync(zonalDir, { recursive: true });
    writeFileSync(join(zonalDir, 'zonal.conf'), `worker_processes 1;\nhttp {\n    server {\n        listen 127.0.0.1:${zonalPort};\n        ${HELLO}\n    }\n}\n`);
    let began = performance.now();
    zonal.push(await firstAnswer(start('zonal (start time)', process.execPath, [ZONAL, '-c', join(zonalDir, 'zonal.conf')]), zonalPort, began));

    const nginxPort = await freePort();
    began = performance.now();
    ref.push(await firstAnswer(startNginx('nginx (start time)', nginx, join(dir, `start-nginx-${i}`), `server {\n    listen 127.0.0.1:${nginxPort};\n    ${HELLO}\n}`), nginxPort, began));
  }
  const loadAfter = load();
  const wall = (s: Start[]) => s.map((x) => x.wallMs);
  const cpu = (s: Start[]) => s.map((x) => x.cpuMs);
  const z = Math.round(median(wall(zonal)));
  const n = Math.round(median(wall(ref)));
  const row = (side: string, s: Start[]) => [
    side,
    Math.round(median(wall(s))),
    Math.round(Math.min(...wall(s))),
    Math.round(Math.max(...wall(s))),
    Math.round(median(cpu(s))),
    Math.round(Math.min(...cpu(s))),
  ];
  table(
    `start_time: from the spawn to the first 200 of a one-server configuration, ${STARTS} starts a side, alternating (goal: zonal within 500 ms); load average ${loadBefore} before, ${loadAfter} after`,
    ['side', 'median ms', 'min ms', 'max ms', 'CPU median ms', 'CPU min ms'],
    [row('zonal', zonal), row('nginx', ref)],
  );
  return {
    zonal_ms: z,
    zonal_min_ms: Math.round(Math.min(...wall(zonal))),
    zonal_cpu_ms: Math.round(median(cpu(zonal))),
    nginx_ms: n,
    nginx_min_ms: Math.round(Math.min(...wall(ref))),
    nginx_cpu_ms: Math.round(median(cpu(ref))),
    zonal_runs_ms: wall(zonal).map(Math.round),
    nginx_runs_ms: wall(ref).map(Math.round),
    load_average_before: loadBefore,
    load_average_after: loadAfter,
    within_goal: z <= 500,
  };
}

// `npm run bench -- start-time`: the row alone, without the rest of `bench side`.
if (process.argv[1] === fileURLToPath(import.meta.url))
  await runBench('start-time', async (dir) => {
    const nginx = nginxCommand();
    if ('reason' in nginx) broken(`start_time needs nginx beside zonal: ${nginx.reason}`);
    console.log(JSON.stringify({ start_time: await startTimeRow(dir, nginx.command) }));
  });
