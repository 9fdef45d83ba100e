// The process model's pieces that are nginx's core: the pid file, `-s` signals sent
// through it, the workers' environment (`env`), what `worker_rlimit_nofile` can and cannot
// do under Node, and the early fork of the workers that makes the start fast.
import cluster, { type Worker } from 'node:cluster';
import fs from 'node:fs';
import os from 'node:os';
import type { CoreConfig } from './config.js';
import { openFilesLimit } from './config.js';

/** nginx's `-s` names and the signals they send. */
export const SIGNALS: Readonly<Record<string, NodeJS.Signals>> = { stop: 'SIGTERM', quit: 'SIGQUIT', reload: 'SIGHUP', reopen: 'SIGUSR1' };

/** nginx's `open() "<file>" failed (<errno>: <text>)`. */
function failed(call: string, file: string, e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  const errno = err.code ? (os.constants.errno as Record<string, number>)[err.code] : undefined;
  const text = /^[A-Z]+: ([^,]*)/.exec(err.message)?.[1] ?? err.message;
  return `${call}() "${file}" failed (${errno !== undefined ? `${errno}: ` : ''}${text})`;
}

/** Writes the pid file: nginx writes it once the listeners are open; the nginx test
 * harness starts its requests as soon as it appears. Throws with nginx's words. */
export function writePidFile(file: string, pid = process.pid): void {
  try {
    fs.writeFileSync(file, `${pid}\n`);
  } catch (e) {
    throw new Error(failed('open', file, e));
  }
}

/** Removes the pid file at exit, when it is still this process's. */
export function removePidFile(file: string, pid = process.pid): void {
  try {
    if (fs.readFileSync(file, 'utf8').trim() === String(pid)) fs.unlinkSync(file);
  } catch {
    // gone already
  }
}

/** `-s <name>`: the signal to the pid the pid file names; an error message or undefined. */
export function signalThroughPidFile(name: string, file: string | undefined): string | undefined {
  const signal = SIGNALS[name];
  if (!signal) return `invalid option: "-s ${name}"`;
  if (!file) return `no pid file to signal: the configuration has no "pid" directive`;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    return failed('open', file, e);
  }
  const pid = text.trim();
  if (!/^\d{1,10}$/.test(pid) || Number(pid) < 1) return `invalid PID number "${pid}" in "${file}"`;
  try {
    process.kill(Number(pid), signal);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const errno = err.code ? (os.constants.errno as Record<string, number>)[err.code] : undefined;
    return `kill(${pid}, ${os.constants.signals[signal]}) failed (${errno ?? err.code}: ${err.code === 'ESRCH' ? 'No such process' : err.message})`;
  }
  return undefined;
}

/**
 * The workers' environment, as nginx's: everything the primary has is removed except TZ
 * and the variables `env` names (with its value when it gives one). Kept besides: zonal's
 * own (ZONAL_*: the instance and slot the worker attaches with) and Node's (NODE_*: the
 * runtime's options, which are to Node what nginx's build options are to nginx).
 * cluster.fork() adds to the primary's environment; an undefined value removes a variable.
 */
export function workerEnv(core: CoreConfig | undefined, from: NodeJS.ProcessEnv = process.env): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  const named = new Map((core?.env ?? []).map((e) => [e.name, e.value]));
  for (const name of Object.keys(from)) if (name !== 'TZ' && !name.startsWith('ZONAL_') && !name.startsWith('NODE_') && !named.has(name)) env[name] = undefined;
  for (const [name, value] of named) if (value !== undefined) env[name] = value;
  return env;
}

/** What `worker_rlimit_nofile` gets: Node cannot call setrlimit(), so a limit other than
 * the one the process has is said at the start, with what to do instead. */
export function rlimitNotice(core: CoreConfig): string | undefined {
  const wanted = core.workerRlimitNofile;
  if (wanted === undefined) return undefined;
  const now = openFilesLimit();
  if (now === wanted) return undefined;
  return (
    `"worker_rlimit_nofile ${wanted}" cannot be applied: Node has no setrlimit(), and the workers keep the limit zonal was started with ` +
    `(${now === undefined ? 'unknown' : now === Infinity ? 'unlimited' : now}); set it where zonal is started ("ulimit -n ${wanted}", systemd's LimitNOFILE=${wanted})`
  );
}

/** A worker forked before the primary's own modules load: it loads its modules meanwhile. */
export interface Preforked {
  readonly worker: Worker;
  readonly slot: number;
  /** The worker said `waiting`: it takes its `start` message now. */
  waiting: boolean;
}

/** node:cluster as the primary runs it: each worker accepts on the shared listening
 * socket itself, with no hand-off through the primary for every connection. A worker runs
 * the command the primary runs (bin/zonal, node:cluster's default), which loads the
 * worker's code from the same build as the primary's: the bundle or dist/src. */
export function setupCluster(): void {
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  cluster.setupPrimary({ args: [] });
}

/**
 * Forks `count` workers in slots 0..count-1, the slots the primary gives its first workers.
 * A worker takes about as long to load its modules as the primary takes to load its own
 * and create the zones: done one after the other, they were most of the start time.
 * `slotEnv` is the variable naming a worker's slot, `instance` the zones' instance.
 */
export function prefork(count: number, core: CoreConfig, slotEnv: string): Preforked[] {
  setupCluster();
  return Array.from({ length: count }, (_, slot) => {
    const worker = cluster.fork({ ...workerEnv(core), [slotEnv]: String(slot) });
    const p: Preforked = { worker, slot, waiting: false };
    const onMessage = (m: { type?: string }) => {
      if (m?.type === 'waiting') {
        p.waiting = true;
        worker.off('message', onMessage);
      }
    };
    worker.on('message', onMessage);
    // Until the primary takes it: an EPIPE as it goes is its exit, seen there.
    worker.on('error', () => {});
    return p;
  });
}
