// One direction of a stream session: the bytes src reads go to dst, with backpressure
// (src is read only as fast as dst takes them), each read reported to `moved` before it
// is passed on.
//
// Between two plain TCP sockets (the fast path) a read never becomes a Buffer of its
// own. src reads into one buffer the whole worker shares (node's `onread` with a buffer
// of the caller's), and each read goes at once to dst's socket with a write(2), as nginx
// moves bytes; only what dst's socket does not take at once is copied into a Buffer
// and queued on dst as node would queue it (then src pauses until dst drains). So the
// shared buffer is free again when a read's callback returns, whichever socket is read
// next, and an idle session holds no buffer. node's own path allocates a 64 KiB buffer
// per read, emits it as 'data' through the stream machinery and writes it through a
// write request: the worker spent about 1.6 times nginx's CPU per MB that way, mostly
// in the kernel's copies into a fresh buffer every time, and about nginx's this way.
//
// A TLS socket on either side takes the general path ('data' events, node's writes):
// its bytes must go through node's TLS.
import { writeSync } from 'node:fs';
import type { Socket } from 'node:net';

/** How much one read of the fast path may take: a read of a bulk transfer's socket
 * usually fills it, so each write(2) moves this much. libuv reads a readable socket
 * up to 32 times in a row, so this also bounds a session's turn (8 MiB). */
const READ_SIZE = 256 * 1024;

/** Told the size of each read, before it is passed on. */
export type Moved = (bytes: number) => void;

/** What node's net.Socket keeps for `onread` (kBuffer, kBufferCb, kBufferGen): net.Server
 * has no `onread` option for the sockets it accepts, so the fast path sets the slots the
 * option sets, found by their names; a node without them takes the general path. */
interface Slots {
  readonly buffer: symbol;
  readonly callback: symbol;
  readonly generator: symbol;
}
let slots: Slots | null | undefined;

function slotsOf(socket: Socket): Slots | null {
  if (slots !== undefined) return slots;
  const own = Object.getOwnPropertySymbols(socket);
  const find = (name: string) => own.find((s) => s.description === name);
  const [buffer, callback, generator] = [find('kBuffer'), find('kBufferCb'), find('kBufferGen')];
  slots = buffer && callback && generator ? { buffer, callback, generator } : null;
  return slots;
}

interface Handle {
  readonly fd?: number;
  useUserBuffer?: (buffer: Buffer) => void;
}
const handleOf = (s: Socket) => (s as Socket & { _handle?: Handle | null })._handle;
const encrypted = (s: Socket) => (s as Socket & { encrypted?: boolean }).encrypted === true;

let shared: Buffer | undefined;

/** What the fast path wrote to a socket itself: node's bytesWritten does not see it. */
const DIRECT = Symbol('zonal.written_directly');
type Direct = Socket & { [DIRECT]?: number };

/** The bytes the fast path wrote to `socket` past node's count (its bytesWritten). */
export function writtenDirectly(socket: Socket): number {
  return (socket as Direct)[DIRECT] ?? 0;
}

export interface RelayOptions {
  /** Take node's path (a test compares the two). */
  readonly general?: boolean;
  /** Told when dst's queue is full and src waits for it to drain. */
  readonly full?: () => void;
}

/** Passes src's bytes on to dst; true when it took the fast path. */
export function relay(src: Socket, dst: Socket, moved: Moved, options: RelayOptions = {}): boolean {
  const fast = !options.general && !encrypted(src) && !encrypted(dst) && slotsOf(src) !== null;
  const handle = handleOf(src);
  const fd = handleOf(dst)?.fd;
  const full = options.full;
  if (fast && typeof handle?.useUserBuffer === 'function' && typeof fd === 'number' && fd >= 0) {
    relayFast(src, dst, moved, handle as Required<Handle>, fd, full);
    return true;
  }
  src.on('data', (chunk: Buffer) => {
    moved(chunk.length);
    if (dst.write(chunk)) return;
    src.pause();
    full?.();
  });
  dst.on('drain', () => src.resume());
  src.resume();
  return false;
}

function relayFast(src: Socket, dst: Socket, moved: Moved, handle: Required<Handle>, fd: number, full: (() => void) | undefined): void {
  const buffer = (shared ??= Buffer.allocUnsafeSlow(READ_SIZE));
  const { buffer: bufferSlot, callback, generator } = slots!;
  const target = src as unknown as Record<symbol, unknown>;
  // Returning false stops src's reads (node's readStop) until 'drain' resumes them.
  target[callback] = (n: number, read: Buffer): boolean => {
    moved(n);
    if (put(dst, fd, read, n)) return true;
    full?.();
    return false;
  };
  target[generator] = null;
  target[bufferSlot] = buffer;
  handle.useUserBuffer(buffer);
  dst.on('drain', () => src.resume());
  // What node read before (src was paused while the peer was reached, or the PROXY
  // protocol header's reader put back what followed the header) is in src's own
  // buffer still, and goes first; reading the last of it lets src's 'end' come.
  for (let chunk: Buffer | null; (chunk = src.read() as Buffer | null) !== null; ) {
    moved(chunk.length);
    dst.write(chunk);
  }
  src.resume();
}

/** Writes `buffer`'s first `n` bytes to dst: to its socket at once when node has
 * nothing queued on it (node's order is kept), the rest queued as a copy. False when
 * dst's queue is full: src then waits for 'drain'. */
function put(dst: Socket, fd: number, buffer: Buffer, n: number): boolean {
  // Ended or destroyed: the bytes have nowhere to go, as a write after end in node.
  if (!dst.writable) return true;
  let written = 0;
  if (dst.writableLength === 0) {
    try {
      written = writeSync(fd, buffer, 0, n);
    } catch (err) {
      // EAGAIN: the socket's buffer is full; anything else ends dst as a failed write.
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') {
        dst.destroy(err as Error);
        return true;
      }
    }
    if (written > 0) (dst as Direct)[DIRECT] = writtenDirectly(dst) + written;
    if (written === n) return true;
  }
  return dst.write(Buffer.from(buffer.subarray(written, n)));
}
