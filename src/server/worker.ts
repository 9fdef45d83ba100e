// A worker process of the zonal server: it receives the configuration the primary read
// (as the files' text, parsed again here), attaches to the primary's zones, serves its
// listen addresses and records its traffic. On "drain" (a reload or a stop) it stops
// accepting, lets requests in flight finish, and exits.
//
// What only some configurations use (stream, the cache keeper, runtime metrics) is
// imported when one does: a worker's module loading is most of the server's start time.
import { Status } from '../metrics/status.js';
import type { RuntimeMetrics } from '../metrics/runtime.js';
import { RUNTIME_INTERVAL_MS } from './runtime/config.js';
import { loadConfig, formatConfigError } from './config/load.js';
import { HttpPlane } from './http/plane.js';
import type { CacheKeeper } from './cache/keeper.js';
import type { FromPrimary, ToPrimary } from './messages.js';
import { keepNextTickFast } from './next-tick.js';
import type { StreamPlane } from './stream/plane.js';
import { ConnectionBudget } from './core/events.js';
import { applyProcessLogs } from './log/process.js';
import { serverLog } from './log.js';

// A quarter of the CPU per request otherwise, once an idle GC has run (see next-tick.ts).
keepNextTickFast();

let plane: HttpPlane | undefined;
let stream: StreamPlane | undefined;
let keeper: CacheKeeper | undefined;
let runtime: RuntimeMetrics | undefined;
let draining = false;

function send(message: ToPrimary): void {
  process.send?.(message);
}

async function start(message: Extract<FromPrimary, { type: 'start' }>): Promise<void> {
  const { config, errors } = loadConfig(message.file, { files: message.files, ...(message.secrets ? { secrets: message.secrets } : {}), prefix: message.prefix, ...(message.globals !== undefined ? { globals: message.globals } : {}) });
  if (!config) throw new Error(errors.map(formatConfigError).join('\n'));
  applyProcessLogs(config);
  const status = Status.attach();
  // status_runtime on: this worker's runtime in /status/workers, sampled off the request path.
  if (config.statusRuntime) runtime = (await import('../metrics/runtime.js')).runtimeMetrics(status, { intervalMs: RUNTIME_INTERVAL_MS });
  const ticketKeys = Buffer.from(message.ticketKeys, 'base64');
  // One budget for both planes: worker_connections counts the worker's connections.
  const budget = new ConnectionBudget(config.core.workerConnections);
  plane = new HttpPlane(config, { status, ticketKeys, budget });
  if (config.stream) stream = new (await import('./stream/plane.js')).StreamPlane(config, { status, ticketKeys, budget });
  await plane.listen();
  await stream?.listen();
  // The cache loader and manager run in one worker of the server (the primary's choice).
  const caches = config.http?.caches ?? [];
  if (message.cacheKeeper && caches.length > 0) {
    keeper = new (await import('./cache/keeper.js')).CacheKeeper(caches, status);
    keeper.start().catch((e: Error) => serverLog('error', `cache loader: ${e.message}`));
  }
}

function drain(): void {
  if (draining) return;
  draining = true;
  keeper?.stop();
  // A draining worker still runs (its requests in flight): its member goes as it exits.
  const done = () => {
    runtime?.stop();
    process.exit(0);
  };
  if (!plane) done();
  else void Promise.all([plane.drain(), stream?.drain()]).then(done, done);
}

process.on('message', (message: FromPrimary) => {
  if (message.type === 'start')
    start(message).then(
      () => send({ type: 'ready' }),
      (e: Error) => {
        send({ type: 'failed', message: e.message });
        process.exit(1);
      },
    );
  else if (message.type === 'drain') drain();
  else if (message.type === 'exit') process.exit(0);
});
// The primary coordinates reloads; a signal sent to the whole process group (Ctrl-C in a
// terminal) stops this worker gracefully, and a lost primary too.
process.on('SIGHUP', () => {});
process.on('SIGINT', drain);
process.on('SIGTERM', drain);
process.on('SIGQUIT', drain);
// Log files are the primary's to reopen.
process.on('SIGUSR1', () => {});
process.on('disconnect', drain);
send({ type: 'waiting' });
