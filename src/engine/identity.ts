// Who this process is to the zones: which instance's zones it sees, and which worker
// slot (shard) it writes. Both travel to child processes in the environment, which is
// how node:cluster workers and child_process children inherit them.
//
// A worker thread inherits the environment too, ZONAL_WORKER_SLOT included: that is its
// process's slot, not its own, and two threads writing one shard lose counts (their
// plain stores race). So a worker thread ignores ZONAL_WORKER_SLOT and claims a free slot
// of its own, unless setWorkerSlot() in the thread names one; a slot is claimed by a
// thread (native/store.cc), and a second live writer asking for a held slot gets an error
// that names the slot. A thread's slots are given up when it ends.
import { isMainThread } from 'node:worker_threads';
import { addon } from './native.js';

export const INSTANCE_ENV = 'ZONAL_INSTANCE';
export const WORKER_SLOT_ENV = 'ZONAL_WORKER_SLOT';

/** The instance of a process that creates zones: inherited, or named after itself. The
 * name is put in the environment so that children started from now on attach to it. */
export function creatorInstance(): string {
  const inherited = process.env[INSTANCE_ENV];
  if (inherited) return inherited;
  const own = `p${process.pid}`;
  process.env[INSTANCE_ENV] = own;
  return own;
}

export function attachInstance(): string {
  const name = process.env[INSTANCE_ENV];
  if (!name)
    throw new Error(`no zonal instance to attach to: pass { instance } or set ${INSTANCE_ENV} (the creating process sets it for its children)`);
  return name;
}

let chosenSlot: number | undefined;

/** Fixes the worker slot this process (or, called in a worker thread, this thread)
 * writes in every zone it attaches from now on. Without it, ZONAL_WORKER_SLOT is used in
 * a process's main thread, and otherwise a free slot is claimed. */
export function setWorkerSlot(slot: number): void {
  if (!Number.isInteger(slot) || slot < 0 || slot >= addon.maxWorkerSlots)
    throw new RangeError(`worker slot must be a whole number from 0 to ${addon.maxWorkerSlots - 1}, not ${slot}`);
  chosenSlot = slot;
}

/** The slot asked for, or undefined to claim any free one. */
export function requestedWorkerSlot(): number | undefined {
  if (chosenSlot !== undefined) return chosenSlot;
  // The environment's slot is the process's: a worker thread claims one of its own.
  if (!isMainThread) return undefined;
  const env = process.env[WORKER_SLOT_ENV];
  if (env === undefined || env === '') return undefined;
  const slot = Number(env);
  if (!Number.isInteger(slot) || slot < 0 || slot >= addon.maxWorkerSlots)
    throw new RangeError(`${WORKER_SLOT_ENV} must be a whole number from 0 to ${addon.maxWorkerSlots - 1}, not "${env}"`);
  return slot;
}
