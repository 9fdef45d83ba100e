// Child processes for multi-process tests: fixtures are TypeScript files forked with
// this process's loader flags, and every wait is bounded.
import { execFileSync, fork, spawn, type ChildProcess, type ForkOptions, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const fixtures = join(fileURLToPath(new URL('.', import.meta.url)), 'fixtures');

// tap loads its process tracker (@tapjs/processinfo) into every test file, and its hook on
// child_process writes the tracker into the NODE_OPTIONS of every process the test starts,
// whatever environment the test passes; a server's workers inherit it. In each process it
// is a loader thread, and every module loaded is reported to it: a node process's start
// takes two to three times the CPU (a bin/zonal with 2 workers: 5-7 s against 2 s, loaded
// machine), for records that only coverage reads, and coverage is off. Children run
// through `env -u NODE_OPTIONS`, which drops it after the hook has run; env execs the
// command, so the child's pid is the command's.
const UNTRACKED = ['/usr/bin/env', '-u', 'NODE_OPTIONS'];

/** This process's node flags without tap's own imports (its mock and its tracker): the
 * TypeScript loader, for a child that runs TypeScript. */
export const TS_ARGV = process.execArgv.filter((arg) => !arg.includes('/@tapjs/'));

/** Runs `command <args>` without tap's tracker (found on `options.env`'s PATH). */
export function spawnUntracked(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  return spawn(UNTRACKED[0], [...UNTRACKED.slice(1), command, ...args], options);
}

/** Runs `node <args>` without tap's tracker. */
export function spawnNode(args: readonly string[], options: SpawnOptions): ChildProcess {
  return spawnUntracked(process.execPath, args, options);
}

/** fork() without tap's tracker, so without NODE_OPTIONS; node flags `options.execArgv`,
 * TS_ARGV by default. */
export function forkNode(module: string, args: readonly string[], options: ForkOptions = {}): ChildProcess {
  return fork(module, args, { ...options, execPath: UNTRACKED[0], execArgv: [...UNTRACKED.slice(1), process.execPath, ...(options.execArgv ?? TS_ARGV)] });
}

export interface Child {
  proc: ChildProcess;
  /** Resolves with the first stdout line that matches, within `ms`. */
  line(match: RegExp, ms?: number): Promise<string>;
  /** Resolves when stderr has a line that matches, within `ms`. */
  stderrLine(match: RegExp, ms?: number): Promise<string>;
  /** Resolves with the exit code (or signal name) within `ms`. */
  exit(ms?: number): Promise<number | string>;
  stdout(): string;
  stderr(): string;
}

/** Forks a fixture; `flags` are node's (NODE_OPTIONS is not passed on: see forkNode). */
export function start(fixture: string, args: string[] = [], env: NodeJS.ProcessEnv = {}, flags: string[] = []): Child {
  // Plain .mjs fixtures drive the addon directly and start without the TS loader, which
  // makes a fork ten times cheaper: the crash sweeps start hundreds of them.
  const proc = forkNode(join(fixtures, fixture), args, {
    env: { ...process.env, ...env },
    execArgv: [...(fixture.endsWith('.mjs') ? [] : TS_ARGV), ...flags],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  let err = '';
  const waiters: Array<() => void> = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  proc.stdout!.on('data', (d) => ((out += d), wake()));
  proc.stderr!.on('data', (d) => ((err += d), wake()));
  let exited: number | string | undefined;
  proc.on('exit', (code, signal) => ((exited = code ?? signal ?? -1), wake()));

  const until = <T>(what: string, ms: number, probe: () => T | undefined): Promise<T> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${fixture}: no ${what} within ${ms} ms; stderr: ${err}`)), ms);
      const check = () => {
        const v = probe();
        if (v !== undefined) {
          clearTimeout(timer);
          resolve(v);
        } else if (exited !== undefined && what !== 'exit') {
          clearTimeout(timer);
          reject(new Error(`${fixture} exited (${exited}) before ${what}; stderr: ${err}`));
        } else waiters.push(check);
      };
      check();
    });

  const find = (text: string, match: RegExp) => text.split('\n').find((l) => match.test(l));
  return {
    proc,
    line: (match, ms = 60_000) => until(`line ${match}`, ms, () => find(out, match)),
    stderrLine: (match, ms = 60_000) => until(`stderr line ${match}`, ms, () => find(err, match)),
    exit: (ms = 60_000) => until('exit', ms, () => exited),
    stdout: () => out,
    stderr: () => err,
  };
}

/** A zone name no other test uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A self-signed certificate and its key (PEM) for `cn`, made with openssl for this run. */
export function selfSigned(cn: string): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-cert-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'k.pem', '-out', 'c.pem', '-days', '1', '-subj', `/CN=${cn}`], { cwd: dir, stdio: 'ignore' });
    return { cert: readFileSync(join(dir, 'c.pem'), 'utf8'), key: readFileSync(join(dir, 'k.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
