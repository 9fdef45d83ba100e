export declare const INSTANCE_ENV = "ZONAL_INSTANCE";
export declare const WORKER_SLOT_ENV = "ZONAL_WORKER_SLOT";
/** The instance of a process that creates zones: inherited, or named after itself. The
 * name is put in the environment so that children started from now on attach to it. */
export declare function creatorInstance(): string;
export declare function attachInstance(): string;
/** Fixes the worker slot this process writes in every zone it attaches from now on.
 * Without it, ZONAL_WORKER_SLOT is used, and without that a free slot is claimed. */
export declare function setWorkerSlot(slot: number): void;
/** The slot asked for, or undefined to claim any free one. */
export declare function requestedWorkerSlot(): number | undefined;
