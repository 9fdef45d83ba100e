// Runs the zonal server as an operator does (`node bin/zonal -c <file>`, built code) on a
// configuration written into a temporary directory, and reads its API. Every wait is
// bounded.
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/server/cli.js';
import { spawnNode } from '../helpers.js';

export const BIN = fileURLToPath(new URL('../../bin/zonal', import.meta.url));

/** `bin/zonal <args>`, run as an operator runs it: without tap's loaders (spawnNode). */
export function spawnZonal(args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  return spawnNode([BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...options });
}

/** Free loopback ports, found by binding port 0. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<import('node:net').Server>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

let checking = Promise.resolve();

/** What `zonal -t -c <file>` says, without a process: the command's own code (cli.ts's
 * main) run in this process, what it writes to stderr captured (test/server/core/cli
 * compares the two). The check is the same, the shared memory tried included, in some
 * 20 ms against a process's 300-900 ms. For what a configuration gets; runZonal(['-t',
 * ...]) where the command line is the subject. Calls run one at a time, each capturing
 * stderr alone. */
export function checkFile(file: string): Promise<{ code: number; err: string }> {
  const run = async () => {
    let err = '';
    const write = process.stderr.write;
    process.stderr.write = (chunk: string | Uint8Array) => ((err += chunk), true);
    try {
      return { code: await main(['-t', '-c', file]), err };
    } finally {
      process.stderr.write = write;
    }
  };
  const result = checking.then(run);
  checking = result.then(
    () => undefined,
    () => undefined,
  );
  return result;
}

/** checkFile() on a configuration file of `text`, in a folder of its own (removed after):
 * the exit code, and what `-t` wrote with the folder's path written `<dir>`. */
export async function checkConfig(text: string): Promise<{ code: number; err: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-t-'));
  try {
    writeFileSync(join(dir, 'zonal.conf'), text);
    const r = await checkFile(join(dir, 'zonal.conf'));
    return { code: r.code, err: r.err.replaceAll(dir, '<dir>') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `bin/zonal` with arguments to completion (for -t and -v). */
export function runZonal(args: string[], ms = 20_000): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawnZonal(args);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.on('exit', (code) => (clearTimeout(timer), resolve({ code, out, err })));
  });
}

/** A server process a test started: what it printed (stdout and stderr, where piped) in
 * `log`, bounded waits on it, its workers, and a stop that removes its folder. */
export class Watched {
  log = '';
  exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private waiters: Array<() => void> = [];

  constructor(
    readonly dir: string,
    readonly child: ChildProcess,
  ) {
    const add = (d: Buffer) => {
      this.log += d;
      this.wake();
    };
    child.stdout?.on('data', add);
    child.stderr?.on('data', add);
    child.on('exit', (code, signal) => {
      this.exited = { code, signal };
      this.wake();
    });
  }

  private wake(): void {
    this.waiters.splice(0).forEach((w) => w());
  }

  /** Resolves when the log matches `re` (counting matches from `from`, a log offset). */
  waitLog(re: RegExp, ms = 20_000, from = 0): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${re} in the log within ${ms} ms:\n${this.log}`)), ms);
      const check = () => {
        if (re.test(this.log.slice(from))) {
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

  /** The worker processes of `pid` (the primary by default) now: its children, from /proc. */
  workers(pid = this.child.pid): number[] {
    const out: number[] = [];
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        // pid (comm) state ppid ...: comm may hold spaces, so read after its ')'.
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === pid) out.push(Number(name));
      } catch {
        // gone meanwhile
      }
    }
    return out.sort((a, b) => a - b);
  }

  /** SIGTERM and wait; SIGKILL if it does not stop. Removes the folder. */
  async stop(): Promise<void> {
    if (!this.exited) {
      this.child.kill('SIGTERM');
      try {
        await this.waitExit(30_000);
      } catch {
        this.child.kill('SIGKILL');
        await this.waitExit(5000).catch(() => {});
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export class Zonal extends Watched {
  private constructor(
    dir: string,
    readonly file: string,
    child: ChildProcess,
  ) {
    super(dir, child);
  }

  /** Writes `files` (name -> text; `zonal.conf` is the main one) and starts the server;
   * resolves once its workers listen. */
  static async start(files: Record<string, string>, ms = 20_000): Promise<Zonal> {
    const dir = mkdtempSync(join(tmpdir(), 'zonal-server-'));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const file = join(dir, 'zonal.conf');
    const child = spawnZonal(['-c', file]);
    const z = new Zonal(dir, file, child);
    try {
      await z.waitLog(/\[notice\] started \d+ worker/, ms);
    } catch (e) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    return z;
  }

  /** SIGHUP, resolved with whether the reload happened (by the primary's log). */
  async reload(text?: string, ms = 20_000): Promise<boolean> {
    if (text !== undefined) writeFileSync(this.file, text);
    const from = this.log.length;
    this.child.kill('SIGHUP');
    await this.waitLog(/reloaded: generation|reload refused|reload failed/, ms, from);
    return /reloaded: generation/.test(this.log.slice(from));
  }
}

/** GETs JSON from `url`. */
export async function getJson(url: string, init?: RequestInit): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the text itself
  }
  return { status: res.status, body, headers: res.headers };
}

/** Polls `probe` until it returns true, at most `ms` (what a worker records lands in
 * shared memory as the response goes out, and a client may read the status first). */
export async function eventually(probe: () => Promise<boolean>, ms = 3000): Promise<boolean> {
  const until = Date.now() + ms;
  for (let i = 0; i < 1000; i++) {
    if (await probe()) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}
