// The process model's pieces that are nginx's core: the pid file, `-s` signals sent
// through it, and what `worker_rlimit_nofile` can and cannot do under Node. The workers'
// start (their environment, the early fork) is workers.ts.
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
