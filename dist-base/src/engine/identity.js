// Who this process is to the zones: which instance's zones it sees, and which worker
// slot (shard) it writes. Both travel to child processes in the environment, which is
// how node:cluster workers and child_process children inherit them.
import { addon } from './native.js';
export const INSTANCE_ENV = 'ZONAL_INSTANCE';
export const WORKER_SLOT_ENV = 'ZONAL_WORKER_SLOT';
/** The instance of a process that creates zones: inherited, or named after itself. The
 * name is put in the environment so that children started from now on attach to it. */
export function creatorInstance() {
    const inherited = process.env[INSTANCE_ENV];
    if (inherited)
        return inherited;
    const own = `p${process.pid}`;
    process.env[INSTANCE_ENV] = own;
    return own;
}
export function attachInstance() {
    const name = process.env[INSTANCE_ENV];
    if (!name)
        throw new Error(`no zonal instance to attach to: pass { instance } or set ${INSTANCE_ENV} (the creating process sets it for its children)`);
    return name;
}
let chosenSlot;
/** Fixes the worker slot this process writes in every zone it attaches from now on.
 * Without it, ZONAL_WORKER_SLOT is used, and without that a free slot is claimed. */
export function setWorkerSlot(slot) {
    if (!Number.isInteger(slot) || slot < 0 || slot >= addon.maxWorkerSlots)
        throw new RangeError(`worker slot must be a whole number from 0 to ${addon.maxWorkerSlots - 1}, not ${slot}`);
    chosenSlot = slot;
}
/** The slot asked for, or undefined to claim any free one. */
export function requestedWorkerSlot() {
    if (chosenSlot !== undefined)
        return chosenSlot;
    const env = process.env[WORKER_SLOT_ENV];
    if (env === undefined || env === '')
        return undefined;
    const slot = Number(env);
    if (!Number.isInteger(slot) || slot < 0 || slot >= addon.maxWorkerSlots)
        throw new RangeError(`${WORKER_SLOT_ENV} must be a whole number from 0 to ${addon.maxWorkerSlots - 1}, not "${env}"`);
    return slot;
}
//# sourceMappingURL=identity.js.map