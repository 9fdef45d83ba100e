// A real Prometheus (Debian's prometheus package) for the tests that scrape zonal with it:
// started on a loopback port with a scrape configuration the test gives, asked through its
// HTTP API, stopped with SIGTERM (SIGKILL after 10 s) and its folder removed. Every wait is
// bounded in tries and time.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Whether `prometheus` is on the PATH (.ci/run installs it). */
export const prometheusInstalled = (): boolean => !spawnSync('prometheus', ['--version']).error;

/** One element of an instant vector. */
export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

export class Prometheus {
  log = '';
  private readonly exit: Promise<void>;

  private constructor(
    private readonly dir: string,
    readonly port: number,
    private readonly child: ChildProcess,
  ) {
    child.stdout!.on('data', (d) => (this.log += d));
    child.stderr!.on('data', (d) => (this.log += d));
    this.exit = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  /** Starts Prometheus on 127.0.0.1:`port` with `config` as its prometheus.yml. */
  static start(config: string, port: number): Prometheus {
    const dir = mkdtempSync(join(tmpdir(), 'zonal-prometheus-'));
    writeFileSync(join(dir, 'prometheus.yml'), config);
    const child = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    return new Prometheus(dir, port, child);
  }

  /** A PromQL instant query's vector, through the HTTP API. */
  async query(promql: string): Promise<Sample[]> {
    const res = await fetch(`http://127.0.0.1:${this.port}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await res.json()) as { status: string; data?: { result: Sample[] }; error?: string };
    if (body.status !== 'success') throw new Error(`${promql}: ${body.error}`);
    return body.data!.result;
  }

  /** Asks `promql` every 250 ms until `ok` holds of its vector, for at most `ms`; the last
   * vector it answered (empty if it never did). */
  async untilVector(promql: string, ok: (v: Sample[]) => boolean, ms = 45_000): Promise<Sample[]> {
    const deadline = Date.now() + ms;
    let last: Sample[] = [];
    for (let i = 0; i < 1000 && Date.now() < deadline; i++) {
      try {
        last = await this.query(promql);
        if (ok(last)) return last;
      } catch {
        // not up yet
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    return last;
  }

  /** untilVector() on the value of the vector's first element. */
  async until(promql: string, ok: (v: number) => boolean, ms = 45_000): Promise<number | undefined> {
    const first = (v: Sample[]) => (v.length ? Number(v[0].value[1]) : undefined);
    return first(await this.untilVector(promql, (v) => first(v) !== undefined && ok(first(v)!), ms));
  }

  async stop(): Promise<void> {
    this.child.kill('SIGTERM');
    const killed = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exit;
    clearTimeout(killed);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
