// `$connection`: the serial number of a connection, for the http and stream modules and
// the `*N` of error log lines.
import type { Socket } from 'node:net';
import { addon, WORKER_SLOT_ENV } from '../../engine/index.js';

const CONNECTION = Symbol('zonal.connectionNumber');
type Numbered = Socket & { [CONNECTION]?: number };

/** Connections of this process, counted as they are first numbered. */
let connections = 0;
/** nginx numbers connections with one counter of all workers; a worker here numbers its
 * own, interleaved with the others' by its worker slot: unique across the workers and
 * increasing, spaced by the number of slots there can be. */
const SLOTS = addon.maxWorkerSlots;
const SLOT = Number(process.env[WORKER_SLOT_ENV] ?? 0) || 0;

/** `$connection` of a request's or a session's connection. */
export function connectionNumber(socket: Socket): number {
  return ((socket as Numbered)[CONNECTION] ??= connections++ * SLOTS + SLOT + 1);
}

const REQUESTS = Symbol('zonal.connectionRequests');
type Counted = Socket & { [REQUESTS]?: number };

/** A request came on `socket`: its `$connection_requests`. */
export function countRequest(socket: Socket): number {
  return ((socket as Counted)[REQUESTS] = ((socket as Counted)[REQUESTS] ?? 0) + 1);
}

/** `$connection_requests` of the connection's current request. */
export const requestsOf = (socket: Socket): number => (socket as Counted)[REQUESTS] ?? 0;
