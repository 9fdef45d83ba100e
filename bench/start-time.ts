// The start_time row of `bench side`: how long a one-server configuration takes from the
// spawn of the command to its first 200 answer, zonal (`zonal -c`, one worker) beside
// nginx (`nginx -p -c -e -g 'daemon off;'`, a master and one worker), each started several
// times, alternating, in the same run. The figure is the median. The goal: zonal
// answers within 0.5 s of its start.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { broken, freePort, getOnce, start, startNginx, ZONAL, type Child } from './processes.js';
import { median, table } from './report.js';

/** Starts of each side. */
const STARTS = 7;
/** A try every this often, and at most this many: 20 s. */
const TRY_EVERY_MS = 5;
const TRIES = 4000;

const HELLO = 'location / { return 200 "hello\\n"; }';

/** Milliseconds from now to the first 200 on `port`; the child is stopped after. */
async function firstAnswer(child: Child, port: number, began: number): Promise<number> {
  try {
    for (let i = 0; i < TRIES; i++) {
      if (child.process.exitCode !== null || child.process.signalCode !== null) broken(`${child.name} exited before it answered:\n${child.output}`);
      try {
        const a = await getOnce(port, '/');
        if (a.status === 200) return performance.now() - began;
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

export async function startTimeRow(dir: string, nginx: string): Promise<Record<string, unknown>> {
  const zonal: number[] = [];
  const ref: number[] = [];
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
  const z = Math.round(median(zonal));
  const n = Math.round(median(ref));
  table(`start_time: from the spawn to the first 200 of a one-server configuration, ${STARTS} starts a side, alternating, medians (goal: zonal within 500 ms)`, ['side', 'median ms', 'min ms', 'max ms', 'zonal / side'], [
    ['zonal', z, Math.round(Math.min(...zonal)), Math.round(Math.max(...zonal)), 1],
    ['nginx', n, Math.round(Math.min(...ref)), Math.round(Math.max(...ref)), Math.round((z / n) * 100) / 100],
  ]);
  return { zonal_ms: z, nginx_ms: n, zonal_runs_ms: zonal.map(Math.round), nginx_runs_ms: ref.map(Math.round), within_goal: z <= 500 };
}
