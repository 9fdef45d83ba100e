// The worker processes' start, nginx's core: their environment (`env`) and their fork.
//
// A worker is the longest part of the start: Node's own start, then its modules, then its
// listeners. So the first worker is forked as soon as the command line says the server is
// to run, before the configuration is read (cli.ts), and loads its modules while the
// primary reads the configuration, loads its own modules and creates the zones; it takes
// its configuration once it has loaded them (the `waiting` and `start` messages).
import cluster, { type Worker } from 'node:cluster';
import type { CoreConfig } from './config.js';

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

/** A worker forked before the primary takes it (Primary.start). */
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
 * Forks workers in `slots` for the primary to take. `core` is the configuration's core
 * settings, undefined before it is read: the environment is then the one a configuration
 * without `env` gives. `slotEnv` is the variable naming a worker's slot; the zones'
 * instance is in the primary's environment already (engine/identity.ts).
 */
export function prefork(slots: readonly number[], core: CoreConfig | undefined, slotEnv: string): Preforked[] {
  setupCluster();
  return slots.map((slot) => {
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

/** Workers forked early that will not serve (the configuration failed, or runs elsewhere). */
export function killPreforked(preforked: readonly Preforked[]): void {
  for (const p of preforked) if (!p.worker.isDead()) p.worker.process.kill('SIGKILL');
}

/**
 * The workers of the first start, in slots 0..count-1: those forked before the
 * configuration was read serve it when it names no `env` (their environment is then the
 * right one), and the others are forked now. A configuration with `env` gets all its
 * workers forked now: Node reads some variables at its own start (UV_THREADPOOL_SIZE,
 * OPENSSL_CONF), too early for a worker to take them from its configuration.
 */
export function workersFor(early: readonly Preforked[], count: number, core: CoreConfig, slotEnv: string): Preforked[] {
  const kept = core.env.length === 0 ? early.filter((p) => p.slot < count) : [];
  killPreforked(early.filter((p) => !kept.includes(p)));
  const missing = Array.from({ length: count }, (_, slot) => slot).filter((slot) => !kept.some((p) => p.slot === slot));
  return [...kept, ...prefork(missing, core, slotEnv)];
}
