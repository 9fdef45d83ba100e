// Runs `bin/zonal` with any command line, as nginx's test harness runs nginx: in a folder
// of its own, started when its pid file appears. Every wait is bounded.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { BIN, eventually } from '../zonal.js';

export class Run {
  log = '';
  exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private waiters: Array<() => void> = [];

  private constructor(
    readonly dir: string,
    readonly child: ChildProcess,
  ) {
    const add = (d: Buffer) => {
      this.log += d;
      this.wake();
    };
    child.stdout!.on('data', add);
    child.stderr!.on('data', add);
    child.on('exit', (code, signal) => {
      this.exited = { code, signal };
      this.wake();
    });
  }

  /** Writes `files` (names may have folders) into a new folder and runs `zonal <args>` there (`DIR` in an argument
   * is the folder); does not wait. */
  static spawn(files: Record<string, string>, args: (dir: string) => string[], env: NodeJS.ProcessEnv = {}): Run {
    const dir = mkdtempSync(join(tmpdir(), 'zonal-core-'));
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text.replaceAll('%%DIR%%', dir));
    }
    const plain = { ...process.env, ...env };
    delete plain.NODE_OPTIONS;
    const child = spawn(process.execPath, [BIN, ...args(dir)], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: plain });
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

  private wake(): void {
    this.waiters.splice(0).forEach((w) => w());
  }

  waitLog(re: RegExp, ms = 20_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${re} in the log within ${ms} ms:\n${this.log}`)), ms);
      const check = () => {
        if (re.test(this.log)) {
          clearTimeout(timer);
          resolve();
        } else if (this.exited) {
          clearTimeout(timer);
          reject(new Error(`zonal exited (${JSON.stringify(this.exited)}) before ${re}:\n${this.log}`));
        } else this.waiters.push(check);
      };
      check();
    });
  }

  waitExit(ms = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`zonal did not exit within ${ms} ms:\n${this.log}`)), ms);
      const check = () => {
        if (this.exited) {
          clearTimeout(timer);
          resolve(this.exited);
        } else this.waiters.push(check);
      };
      check();
    });
  }

  /** The zone files of this server in /dev/shm. */
  zoneFiles(pid = this.pid): string[] {
    return readdirSync('/dev/shm').filter((f) => f.startsWith(`zonal.p${pid}.`));
  }

  /** The primary's worker processes (its children, from /proc). */
  workers(pid = this.pid): number[] {
    const out: number[] = [];
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === pid) out.push(Number(name));
      } catch {
        // gone meanwhile
      }
    }
    return out;
  }

  /** Stops it if it runs (SIGKILL after a bound), removes the folder. */
  async close(): Promise<void> {
    if (!this.exited) {
      this.child.kill('SIGTERM');
      await this.waitExit(20_000).catch(() => {
        this.child.kill('SIGKILL');
        return this.waitExit(5000).catch(() => undefined);
      });
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
