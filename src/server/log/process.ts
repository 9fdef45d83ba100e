// The logs of a process once its configuration is read: the main context's error logs
// for its own messages, and USR1, nginx's "reopen the log files", wired here so that the
// command line and the primary need one call each. The primary reopens its files and
// tells its workers, which reopen theirs: logrotate's `postrotate kill -USR1 <pid>`.
import cluster from 'node:cluster';
import type { ServerConfig } from '../config/model.js';
import { mainErrorLog, useMainErrorLogs } from './error-log.js';
import { reopenLogFiles } from './files.js';

/** What the primary sends its workers on USR1. */
export const REOPEN = { type: 'reopen' } as const;

let wired = false;

function reopenInPrimary(): void {
  reopenLogFiles();
  mainErrorLog().log('notice', 'signal 10 (SIGUSR1) received, reopening logs');
  for (const worker of Object.values(cluster.workers ?? {})) if (worker?.isConnected()) worker.send(REOPEN);
}

function wire(): void {
  if (wired) return;
  wired = true;
  if (cluster.isPrimary) process.on('SIGUSR1', reopenInPrimary);
  else {
    process.on('message', (m: { type?: string } | null) => {
      if (m?.type === REOPEN.type) reopenLogFiles();
    });
    // A USR1 sent to the whole process group is the primary's to act on; without a
    // listener Node would open its inspector.
    process.on('SIGUSR1', () => {});
  }
}

/** A configuration took effect in this process (the primary at start and reload, a worker
 * at start): its messages go to the configuration's main `error_log`s from now on. */
export function applyProcessLogs(config: ServerConfig): void {
  useMainErrorLogs(config.errorLogs);
  wire();
}
