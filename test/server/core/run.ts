// Runs `bin/zonal` with any command line, as nginx's test harness runs nginx: in a folder
// of its own, started when its pid file appears. Every wait is bounded.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { eventually, spawnZonal, Watched } from '../zonal.js';

export class Run extends Watched {
  /** Writes `files` (names may have folders) into a new folder and runs `zonal <args>`
   * there (`%%DIR%%` in a file is the folder); does not wait. */
  static spawn(files: Record<string, string>, args: (dir: string) => string[], env: NodeJS.ProcessEnv = {}): Run {
    const dir = mkdtempSync(join(tmpdir(), 'zonal-core-'));
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text.replaceAll('%%DIR%%', dir));
    }
    const child = spawnZonal(args(dir), { cwd: dir, env: { ...process.env, ...env } });
    return new Run(dir, child);
  }

  /** Runs and waits for the pid file, as the harness does (it gives nginx 5 s; this
   * machine is shared, so more). */
  static async start(files: Record<string, string>, args: (dir: string) => string[], pidFile = 'zonal.pid', env: NodeJS.ProcessEnv = {}): Promise<Run> {
    const run = Run.spawn(files, args, env);
    const up = await eventually(async () => existsSync(join(run.dir, pidFile)) || run.exited !== undefined, 30_000);
    if (!up || run.exited) {
      run.child.kill('SIGKILL');
      throw new Error(`zonal did not start (${JSON.stringify(run.exited)}):\n${run.log}`);
    }
    return run;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The zone files of this server in /dev/shm. */
  zoneFiles(pid = this.pid): string[] {
    return readdirSync('/dev/shm').filter((f) => f.startsWith(`zonal.p${pid}.`));
  }
}
