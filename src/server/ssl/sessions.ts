// ssl_session_cache: the sessions a client may resume by id, through node's `newSession`
// and `resumeSession` events. `builtin` keeps them in the worker; `shared:name:size` in a
// shared-memory zone every worker maps, so a client resumes in whichever worker its next
// connection lands on.
//
// The shared cache is a table of fixed slots in one block of the zone, a slot chosen by
// the session id (random bytes): a new session takes its slot over, as a direct-mapped
// cache does, so the zone never fills. Each slot has a sequence number, odd while written:
// a writer that finds it odd or loses the race to make it odd skips the store (a cache
// may forget), and a reader that sees it move discards what it read. No lock, no call
// into the addon per handshake. A session larger than a slot is not kept (nginx's shared
// cache has such a limit too, 4 KiB).
import type { Server as TlsServer } from 'node:tls';
import type { Zone } from '../../engine/zone.js';
import type { SessionCache } from './config.js';
import { resumedId } from './client-hello.js';

/** Bytes a slot takes: room for a TLS 1.3 session with a client certificate in it. */
export const SESSION_SLOT = 2048;
const ID = 16;
const ID_MAX = 32;
const DATA = ID + ID_MAX + 4;

interface SessionStore {
  put(id: Buffer, data: Buffer, expires: number): void;
  get(id: Buffer, now: number): Buffer | undefined;
}

/** A worker's own cache (builtin:size): the oldest session goes first when it is full. */
class BuiltinSessions implements SessionStore {
  private readonly sessions = new Map<string, { data: Buffer; expires: number }>();
  constructor(private readonly size: number) {}

  put(id: Buffer, data: Buffer, expires: number): void {
    const key = id.toString('hex');
    this.sessions.delete(key);
    this.sessions.set(key, { data, expires });
    if (this.sessions.size > this.size) this.sessions.delete(this.sessions.keys().next().value!);
  }

  get(id: Buffer, now: number): Buffer | undefined {
    const key = id.toString('hex');
    const s = this.sessions.get(key);
    if (s && s.expires <= now) this.sessions.delete(key);
    return s && s.expires > now ? s.data : undefined;
  }
}

/** The slots of a shared cache, in a block of its zone. Slot layout: sequence (int32),
 * data length (int32), expiry (float64, ms since the epoch), id (up to 32 bytes, its
 * length at byte 48), data. */
export class SharedSessions implements SessionStore {
  private readonly seq: Int32Array;
  private readonly view: DataView;
  private readonly slots: number;

  constructor(private readonly bytes: Uint8Array) {
    this.slots = Math.floor(bytes.length / SESSION_SLOT);
    this.seq = new Int32Array(bytes.buffer, bytes.byteOffset, (this.slots * SESSION_SLOT) / 4);
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  }

  /** The slot of an id, as an offset. */
  private slot(id: Buffer): number {
    return ((id.length >= 4 ? id.readUInt32LE(0) : id[0] ?? 0) % this.slots) * SESSION_SLOT;
  }

  put(id: Buffer, data: Buffer, expires: number): void {
    if (id.length === 0 || id.length > ID_MAX || DATA + data.length > SESSION_SLOT) return;
    const at = this.slot(id);
    const i = at / 4;
    const before = Atomics.load(this.seq, i);
    if (before & 1 || Atomics.compareExchange(this.seq, i, before, before + 1) !== before) return;
    this.view.setInt32(at + 4, data.length, true);
    this.view.setFloat64(at + 8, expires, true);
    this.bytes.fill(0, at + ID, at + ID + ID_MAX);
    id.copy(this.bytes, at + ID);
    this.view.setInt32(at + ID + ID_MAX, id.length, true);
    data.copy(this.bytes, at + DATA);
    Atomics.store(this.seq, i, before + 2);
  }

  get(id: Buffer, now: number): Buffer | undefined {
    if (id.length === 0 || id.length > ID_MAX) return undefined;
    const at = this.slot(id);
    const i = at / 4;
    const before = Atomics.load(this.seq, i);
    if (before & 1 || before === 0) return undefined;
    const length = this.view.getInt32(at + 4, true);
    const expires = this.view.getFloat64(at + 8, true);
    const idLength = this.view.getInt32(at + ID + ID_MAX, true);
    if (idLength !== id.length || expires <= now || length <= 0 || DATA + length > SESSION_SLOT) return undefined;
    if (!id.equals(this.bytes.subarray(at + ID, at + ID + idLength))) return undefined;
    const data = Buffer.from(this.bytes.subarray(at + DATA, at + DATA + length));
    return Atomics.load(this.seq, i) === before ? data : undefined;
  }
}

/** The block of a shared cache's zone: most of the zone, in slots. */
export function sharedSessions(zone: Zone, size: number): SharedSessions {
  const slots = Math.max(1, Math.floor((size * 3) / 4 / SESSION_SLOT));
  return new SharedSessions(zone.block('ssl_session_cache', slots * SESSION_SLOT));
}

/** Keeps the sessions of `server` as `cache` says, for `timeout` seconds. `shared`: the
 * shared cache's store, made by the caller from the instance's zones. With `off` and
 * `none` no session is kept, and a client resumes by ticket only. */
export function keepSessions(server: TlsServer, cache: SessionCache, timeout: number, shared: (name: string, size: number) => SharedSessions | undefined): void {
  if (cache.mode !== 'cache') return;
  const store: SessionStore | undefined = cache.shared ? shared(cache.shared.name, cache.shared.size) : cache.builtin !== undefined ? new BuiltinSessions(cache.builtin) : undefined;
  if (!store) return;
  server.on('newSession', (id: Buffer, data: Buffer, done: () => void) => {
    store.put(id, data, Date.now() + timeout * 1000);
    done();
  });
  server.on('resumeSession', (id: Buffer, done: (err: Error | null, data: Buffer | null) => void) => done(null, store.get(resumedId(id), Date.now()) ?? null));
}
