// A request that asks to switch protocols (`Connection: upgrade` with `Upgrade`, as every
// WebSocket handshake is): node:http hands its connection over, with the bytes that came
// after the request's head. The plane answers it as any request; a proxied one whose
// peer answers `101 Switching Protocols` takes the connection (nginx's upgraded
// connection: a tunnel between the client and the peer until either closes), any other
// answer gives it back to node:http for the requests that follow.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** The client's connection of an upgrade request, while it is offered and once taken. */
export interface ClientUpgrade {
  readonly socket: Socket;
  /** What the client sent after the request's head (the new protocol's first bytes). */
  readonly head: Buffer;
  taken: boolean;
}

const UPGRADE = Symbol('zonal.upgrade');
type Offering = IncomingMessage & { [UPGRADE]?: ClientUpgrade };

/** `req` came with its connection to take over. */
export function offerUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
  (req as Offering)[UPGRADE] = { socket, head, taken: false };
}

/** The connection `req` offers, when it offers one (taken or not). */
export function upgradeOf(req: IncomingMessage): ClientUpgrade | undefined {
  return (req as Offering)[UPGRADE];
}

/** A response node:http did not make emits its 'close' itself, once: when it is written
 * out, or when the tunnel its 101 opened has closed. */
export function closeResponse(res: ServerResponse): void {
  const internal = res as ServerResponse & { _closed?: boolean };
  if (internal._closed) return;
  internal._closed = true;
  internal.destroyed = true;
  res.emit('close');
}
