// Keyed limit tables in a zone (native/limit.h): one native call per decision, under the
// zone mutex, so that every process sees one state. Rates, bursts and excesses are in
// milli-requests, as nginx keeps them.
import type { NativeZone } from './native.js';

/** A limit key: a string counts by its UTF-8 bytes, a Uint8Array by its bytes. */
export type LimitKey = string | Uint8Array;

/** Table kinds, as native/limit.h numbers them. */
export const LimitKind = { Req: 1, Conn: 2 } as const;

/** How a request limit takes a request: `Charge` decides and records it; `Look` decides
 * only (a limit that is not the last of a request, as nginx's lookup with account=0);
 * `Account` records what `Look` passed, without checking the burst again. */
export const LimitReqMode = { Charge: 0, Look: 1, Account: 2 } as const;
export type LimitReqMode = (typeof LimitReqMode)[keyof typeof LimitReqMode];

/** limitReq's answers besides an excess (>= 0). */
export const LIMIT_BUSY = -1;
export const LIMIT_EXHAUSTED = -2;

/** nginx's leaky bucket per key. */
export class LimitReqTable {
  constructor(
    private readonly native: NativeZone,
    readonly offset: number,
  ) {}

  /** The key's excess after this request in milli-requests (>= 0), LIMIT_BUSY when it is
   * over `burst`, LIMIT_EXHAUSTED when the zone had no room for a new key. `nowMs` (a
   * test's clock) defaults to the monotonic clock. */
  take(key: LimitKey, rate: number, burst: number, mode: LimitReqMode = LimitReqMode.Charge, nowMs?: number): number {
    return this.native.limitReq(this.offset, key, rate, burst, mode, nowMs);
  }

  /** The key's excess as last recorded, -1 when the table has no entry for it. */
  peek(key: LimitKey): number {
    return this.native.limitPeek(this.offset, key);
  }

  get size(): number {
    return this.native.limitNodes(this.offset);
  }

  /** "" when the table's lists and counts agree. */
  check(): string {
    return this.native.limitCheck(this.offset);
  }
}

/** A count per key of what is in progress, with what each worker slot holds of it. */
export class LimitConnTable {
  constructor(
    private readonly native: NativeZone,
    readonly offset: number,
  ) {}

  /** 1 taken, 0 rejected (`limit` taken already; 0: no limit), -1 no room for the key. */
  acquire(key: LimitKey, limit: number, slot: number): number {
    return this.native.limitConnAcquire(this.offset, key, limit, slot);
  }

  /** False when `slot` holds nothing of the key. */
  release(key: LimitKey, slot: number): boolean {
    return this.native.limitConnRelease(this.offset, key, slot);
  }

  /** Gives back everything `slot` holds (its process died); returns how many keys'
   * holds ended. */
  repair(slot: number): number {
    let total = 0;
    // Each call ends a few holds (the undo log bounds a critical section); a slot holds
    // at most what fits in the zone.
    for (let i = 0; i < 1 << 24; i++) {
      const n = this.native.limitConnRepair(this.offset, slot);
      if (n === 0) break;
      total += n;
    }
    return total;
  }

  /** What all slots hold of the key, -1 when none. */
  peek(key: LimitKey): number {
    return this.native.limitPeek(this.offset, key);
  }

  get size(): number {
    return this.native.limitNodes(this.offset);
  }

  check(): string {
    return this.native.limitCheck(this.offset);
  }
}
