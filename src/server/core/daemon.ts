// `daemon on`: the server goes on in a detached process and the command returns, as
// nginx's does. The command waits until the detached server has started (its pid file
// written), so that its exit status says whether the server runs.
import { spawn } from 'node:child_process';
import fs from 'node:fs';

/** Starts this same command again, detached; resolves with the exit status to return. */
export function daemonize(errorLog: string | undefined): Promise<number> {
  // What the detached server writes goes to the error log file (`-e`): it has no terminal.
  const err = errorLog !== undefined ? fs.openSync(errorLog, 'a') : 'ignore';
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    detached: true,
    stdio: ['ignore', 'ignore', err, 'ipc'],
    env: { ...process.env, ZONAL_DAEMON: 'child' },
  });
  if (typeof err === 'number') fs.closeSync(err);
  return new Promise((resolve) => {
    child.once('message', (m: { type?: string }) => {
      if (m?.type !== 'started') return;
      child.disconnect();
      child.unref();
      resolve(0);
    });
    child.once('exit', (code, signal) => {
      process.stderr.write(`zonal: [emerg] the server exited (${signal ?? `code ${code}`}) before it started${errorLog !== undefined ? `: see ${errorLog}` : ''}\n`);
      resolve(1);
    });
  });
}
