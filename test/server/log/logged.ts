// A bin/zonal whose configuration names its own error logs: the test helper's Zonal waits
// for zonal's default log lines on stderr, which a configuration with `error_log` replaces
// by nginx's (`2026/11/28 13:05:31 [notice] 1234#0: started ...`). This one waits for those.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnZonal, Watched } from '../zonal.js';

export class Logged extends Watched {
  /** Starts `conf` (written as zonal.conf in a folder of its own); it must log to stderr
   * at notice. Resolves once the workers listen. */
  static async start(conf: string): Promise<Logged> {
    const dir = mkdtempSync(join(tmpdir(), 'zonal-log-'));
    writeFileSync(join(dir, 'zonal.conf'), conf);
    const child = spawnZonal(['-c', join(dir, 'zonal.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    const z = new Logged(dir, child);
    try {
      await z.waitLog(/\[notice\] \d+#0: started \d+ worker/, 20_000);
    } catch (e) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    return z;
  }
}
