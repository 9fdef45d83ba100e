// Two connections joined both ways: a stream session's client and peer, or an HTTP
// connection a peer's `101 Switching Protocols` upgraded and the connection to that peer.
// Nothing here knows a protocol: bytes go each way through relay() with backpressure,
// the ends and the silences are nginx's.
//
// A side's end (FIN) closes both once what that side sent is passed on (nginx's stream
// default, and its upgraded HTTP connections'); with `halfClose` it is passed on instead
// and the tunnel lasts until both sides ended (stream's `proxy_half_close on`). A side
// that fails or closes closes the other. `timeout` is the longest silence in both
// directions at once: nginx's stream `proxy_timeout`, and its `proxy_read_timeout` of an
// upgraded connection (nginx sets the peer's read timer again on every event of the
// tunnel, whichever way it goes, and leaves it off while a write waits). A side whose
// writes wait with no progress for its
// `sendTimeout` (a reader that stopped reading) closes both: nginx's `send_timeout`
// toward the client and `proxy_send_timeout` toward the peer.
import type { Socket } from 'node:net';
import { relay, type Moved } from './relay.js';

export interface TunnelOptions {
  /** Milliseconds of silence both ways that close the tunnel. */
  readonly timeout: number;
  readonly halfClose: boolean;
  /** Told the size of each read of the client, and of the peer, before it is passed on. */
  readonly fromClient: Moved;
  readonly fromPeer: Moved;
  /** Milliseconds writes to the client, and to the peer, may wait without progress;
   * absent: as long as the silence allows. */
  readonly clientSendTimeout?: number;
  readonly peerSendTimeout?: number;
}

/** Joins `client` and `peer` until one of nginx's ends closes both. */
export function tunnel(client: Socket, peer: Socket, o: TunnelOptions): void {
  const timeout = o.timeout;
  const closeBoth = () => {
    peer.destroy();
    client.destroy();
  };
  // A socket's idle timer runs from its last read (the fast path's writes do not reach
  // node's timer), and when it fires the tunnel ends if nothing came either way for as
  // long. The socket read last is the one whose timer fires once all is silent; an
  // earlier one fires while the other side is busy and must leave its listener for
  // later (setTimeout's own callback is a `once`).
  let last = performance.now();
  const clientStalls = o.clientSendTimeout === undefined ? undefined : stallGuard(client, o.clientSendTimeout, closeBoth);
  const peerStalls = o.peerSendTimeout === undefined ? undefined : stallGuard(peer, o.peerSendTimeout, closeBoth);
  const pass = (src: Socket, dst: Socket, moved: Moved, stalls: StallGuard | undefined) => {
    const read = (n: number) => {
      last = performance.now();
      moved(n);
    };
    relay(src, dst, read, { full: stalls?.full });
  };
  pass(client, peer, o.fromClient, peerStalls);
  pass(peer, client, o.fromPeer, clientStalls);
  const passEnd = (to: Socket) => {
    if (o.halfClose) return void to.end();
    if (to.destroyed || to.writableFinished) return closeBoth();
    to.once('finish', closeBoth);
    to.end();
  };
  client.on('end', () => passEnd(peer));
  peer.on('end', () => passEnd(client));
  // A side that sent nothing and ended while the tunnel was being set up has had its
  // 'end' already: node emits it on a paused socket with nothing to read.
  if (client.readableEnded) passEnd(peer);
  if (peer.readableEnded) passEnd(client);
  client.on('close', closeBoth);
  peer.on('close', closeBoth);
  client.on('error', closeBoth);
  peer.on('error', closeBoth);
  let recheck: NodeJS.Timeout | undefined;
  const idle = () => {
    // A write waiting for a reader is its send timeout's to judge (nginx's read timer is
    // off while the peer has bytes it cannot pass on).
    if ((clientStalls && client.writableLength > 0) || (peerStalls && peer.writableLength > 0)) last = performance.now();
    const silent = performance.now() - last;
    if (silent >= timeout - 1) return closeBoth();
    // A socket's timer starts from the loop's cached clock, which lags under load: it
    // may fire before the tunnel was silent that long, and a fired one waits for new
    // activity (which may never come): a timer of our own waits for the rest.
    if (recheck) return;
    recheck = setTimeout(() => {
      recheck = undefined;
      if (!client.destroyed || !peer.destroyed) idle();
    }, timeout - silent);
    recheck.unref();
  };
  client.setTimeout(timeout);
  peer.setTimeout(timeout);
  client.on('timeout', idle);
  peer.on('timeout', idle);
  client.once('close', () => {
    clearTimeout(recheck);
    clientStalls?.stop();
    peerStalls?.stop();
  });
}

export interface StallGuard {
  /** dst's queue is full: the checks start, unless running. */
  full(): void;
  stop(): void;
}

/** node's count of the bytes handed to the socket's handle (bytesWritten less the queue). */
const dispatched = (s: Socket) => (s as Socket & { _bytesDispatched: number })._bytesDispatched;

/**
 * The send timeout of one side: `full` is called when its queue of writes is full (its
 * reader pauses), and from then a check every `ms` closes the tunnel when nothing of the
 * queue went out since the last one. A queue that empties ends the checks.
 */
export function stallGuard(dst: Socket, ms: number, expired: () => void): StallGuard {
  let timer: NodeJS.Timeout | undefined;
  let seen = 0;
  const check = () => {
    timer = undefined;
    if (dst.destroyed || dst.writableLength === 0) return;
    const now = dispatched(dst);
    if (now === seen) return expired();
    seen = now;
    timer = setTimeout(check, ms);
  };
  return {
    full() {
      if (timer !== undefined) return;
      seen = dispatched(dst);
      timer = setTimeout(check, ms);
    },
    stop: () => clearTimeout(timer),
  };
}
