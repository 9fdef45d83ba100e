// A bin/zonal whose configuration names its own error logs: the test helper's Zonal waits
// for zonal's default log lines on stderr, which a configuration with `error_log` replaces
// by nginx's (`2026/11/28 13:05:31 [notice] 1234#0: started ...`). This one waits for those.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN } from '../zonal.js';

export class Logged {
  /** What the server wrote on stderr. */
  err = '';
  exited = false;
  private waiters: Array<() => void> = [];

  private constructor(
    readonly dir: string,
    readonly child: ChildProcess,
  ) {
    child.stderr!.on('data', (d) => {
      this.err += d;
      this.wake();
    });
    child.on('exit', () => {
      this.exited = true;
      this.wake();
    });
  }

  /** Starts `conf` (written as zonal.conf in a folder of its own); it must log to stderr
   * at notice. Resolves once the workers listen. */
  static async start(conf: string): Promise<Logged> {
    const dir = mkdtempSync(join(tmpdir(), 'zonal-log-'));
    writeFileSync(join(dir, 'zonal.conf'), conf);
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const child = spawn(process.execPath, [BIN, '-c', join(dir, 'zonal.conf')], { stdio: ['ignore', 'ignore', 'pipe'], env });
    const z = new Logged(dir, child);
    try {
      await z.wait(/\[notice\] \d+#0: started \d+ worker/, 20_000);
    } catch (e) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    return z;
  }

  private wake(): void {
    this.waiters.splice(0).forEach((w) => w());
  }

  /** Resolves when stderr (from `from` on) matches `re`. */
  wait(re: RegExp, ms: number, from = 0): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${re} within ${ms} ms:\n${this.err}`)), ms);
      const check = () => {
        if (re.test(this.err.slice(from))) {
          clearTimeout(timer);
          resolve();
        } else if (this.exited) {
          clearTimeout(timer);
          reject(new Error(`zonal exited before ${re}:\n${this.err}`));
        } else this.waiters.push(check);
      };
      check();
    });
  }

  async stop(): Promise<void> {
    if (!this.exited) {
      this.child.kill('SIGTERM');
      const gone = new Promise<void>((resolve) => (this.exited ? resolve() : this.child.once('exit', () => resolve())));
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
      await gone;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
