// `$connection`: the serial number of a connection, for the http and stream modules and
// the `*N` of error log lines.
import type { Socket } from 'node:net';
import { addon, WORKER_SLOT_ENV } from '../../engine/index.js';

const CONNECTION = Symbol('zonal.connectionNumber');
/** `$connection`, and when the connection was accepted (performance.now()). */
interface Serial {
  readonly n: number;
  readonly openedAt: number;
}
type Numbered = Socket & { [CONNECTION]?: Serial };

/** Connections no plane numbered (none should be), numbered by this process alone,
 * interleaved with the other workers' by its worker slot so they stay unique. */
let unnumbered = 0;
const SLOTS = addon.maxWorkerSlots;
const SLOT = Number(process.env[WORKER_SLOT_ENV] ?? 0) || 0;

/** The planes number each connection they accept with the serial number Connections'
 * accepted() gives: one counter of all the workers, as nginx's. */
export function numberConnection(socket: Socket, n: number): void {
  (socket as Numbered)[CONNECTION] = { n, openedAt: performance.now() };
}

/** A TLS socket is the connection its raw socket is. */
export function sameConnection(tls: Socket, raw: Socket): void {
  (tls as Numbered)[CONNECTION] = serial(raw);
}

const serial = (socket: Socket): Serial => ((socket as Numbered)[CONNECTION] ??= { n: unnumbered++ * SLOTS + SLOT + 1, openedAt: performance.now() });

/** `$connection` of a request's or a session's connection. */
export const connectionNumber = (socket: Socket): number => serial(socket).n;

/** `$connection_time`: milliseconds since the connection was accepted. */
export const connectionTime = (socket: Socket): number => performance.now() - serial(socket).openedAt;

const REQUESTS = Symbol('zonal.connectionRequests');
type Counted = Socket & { [REQUESTS]?: number };

/** A request came on `socket`: its `$connection_requests`. */
export function countRequest(socket: Socket): number {
  return ((socket as Counted)[REQUESTS] = ((socket as Counted)[REQUESTS] ?? 0) + 1);
}

/** `$connection_requests` of the connection's current request. */
export const requestsOf = (socket: Socket): number => (socket as Counted)[REQUESTS] ?? 0;
