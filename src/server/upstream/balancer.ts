// A worker's balancer over one upstream: nginx's round robin (smooth weighted),
// least_conn, random [two], hash [consistent] and ip_hash, Angie's least_time, and
// Angie's sticky binding before any of them, over the upstream's live peer set, with
// everything the workers must agree on in the peers' shared cells (PeerCell in
// metrics/upstreams.ts): live connections against max_conns, failures and availability,
// the one request that checks an unavailable peer, and when slow start began.
//
// What stays per worker, as in nginx's workers: the smooth round robin's current weights
// and effective weights (so each worker alone gives the exact ratio), and the random
// number generator.
//
// Per request: one atomic load to learn whether the live set changed (the local
// structures are rebuilt only when it did, keeping each staying peer's weights), then one
// pass over the peers (one or two atomic loads each), one atomic add or compare-and-swap
// to take a max_conns slot. Nothing is allocated but the number Date.now() returns, once
// per pick (selected.last needs it anyway), and with least_time inflight the pick itself
// (it carries its request's start to release()); a release reads the clock only on a failure
// or at the end of a check. Random numbers come from a xorshift32 generator of each
// balancer, seeded from Math.random(): compiled code boxes every Math.random() result.
//
// Times in the shared cells are wrapped int32 milliseconds (`Date.now() | 0`), compared
// as `((a - b) | 0)`: right for intervals under 2^31 ms (24.8 days). A failure window
// last touched more than 24.8 days ago may read as recent once in a while (one failure
// counted in a window long closed); fail_timeout and slow_start must stay below 24.8 days.
//
// Passive health (max_fails, fail_timeout), per peer, in shared cells:
// - A failed attempt opens a window of fail_timeout (unless one is open) and counts in
//   it; max_fails failures in it make the peer unavailable (metrics.becameUnavailable():
//   a compare-and-swap, so only one worker counts it). Successes between them change
//   nothing, as in nginx, whose count a success resets only once fail_timeout has passed.
// - fail_timeout after it became unavailable, one request (across all workers: a
//   compare-and-swap on the `checking` cell) may check it. Its success makes the peer
//   available again (recovering first, with slow_start); its failure keeps it
//   unavailable for another fail_timeout. A checking request still running after
//   fail_timeout is taken for lost (its worker may have died): another may check.
// - health.unavailable counts outages: each time the peer goes from up (or recovering)
//   to unavailable. A failed check is not one: the peer never came back, and /status
//   showed it unavailable throughout. Its outage goes on: downstart stays when the
//   outage began, and downtime runs from downstart through every failed check to the
//   successful one, which adds it to the total (metrics.becameAvailable()). So a peer
//   whose backend stays down for 14 minutes shows unavailable 1 (and fails, selected
//   growing by one check per fail_timeout) and a downtime of 14 minutes. This is Angie's
//   accounting (ngx_http_upstream_stat() and ngx_stream_upstream_stat() in its
//   *_upstream_round_robin.c): `unavailable++` and downstart only when
//   `peer->fails == max_fails`, which a failed check, taking fails past max_fails, never
//   meets; downtime added and downstart cleared only on a success (zonal keeps showing
//   downstart after that, DESIGN.md: it appears once the peer has been unavailable).
//   nginx keeps no count: its free_peer logs "upstream server temporarily disabled" on
//   every failure with fails >= max_fails, each failed check included.
// - Differences from nginx: nginx forgets every failure once no peer at all is left
//   ("all peers failed, mark them as live for quick recovery"); here a peer comes back
//   only through its checking request, so `unavailable` means what /status shows.
//   consistent hash walks the ring past peers it already rejected without counting
//   them against its 20 tries.
//
// least_time (Angie's): the least average time × (active connections + 1) / weight, the
// average being the one /status shows (each worker's moving average, weighted by its
// samples: metrics/upstreams.ts Peer.timing()), read from the zone at each pick; ties by
// round robin. A peer without a sample yet has the average 0, so it is tried first.
// `inflight`: the mean time the peer's incomplete requests (every worker's) have taken
// so far counts when it exceeds the average, so a peer that stops answering, and so
// stops adding samples, does not keep the average it had.
//
// sticky (Angie's): a request that names a server id goes to the peer with that id
// (its `sid=`, else the MD5 of its address; salted by sticky_secret) when the peer can
// take it; else to the peer the method picks, or with sticky_strict, to none.
import type { AtomicCells, SeqRecord } from '../../engine/index.js';
import { peerAddress, type UpstreamConfig } from '../../metrics/catalog.js';
import { hasPeerSet, peerGeneration, peerSet, peerSetRecord, type PeerEntry } from '../../metrics/peers.js';
import type { Status } from '../../metrics/status.js';
import { PeerCell, PeerState, peerHandles, repairSlot, type Peer, type Protocol, type TimeAverage } from '../../metrics/upstreams.js';
import type { BalancingMethod, LeastTime } from '../config/model.js';
import { CRC_INIT, crc32, crcByte, crcDecimal, crcFinal, crcString, crcWord, ipHashBytes } from './hash.js';
import { defaultSid, saltedSid } from './sticky.js';

export { repairSlot };
export { PeerCell };

export interface Chosen {
  readonly id: number;
  readonly entry: PeerEntry;
  readonly host: string;
  readonly port: number;
  /** The canonical `ip:port` name. */
  readonly address: string;
  readonly metrics: Peer;
  /** Its server id (sticky): `sid=`, else the MD5 of its address. */
  readonly sid: string;
}

/** A request's sticky binding: the id it names (empty: none), and the sticky_secret
 * value that salts ids (empty: none). */
export interface StickyHint {
  readonly id: string;
  readonly salt: string;
}

export type NoPeer = 'busy' /* every selectable peer is at max_conns: a queue may wait */ | 'unavailable' /* none is up */;

export interface BalancerOptions {
  /** Epoch milliseconds (Date.now by default): tests inject a clock. */
  now?: () => number;
  /** A number in [0, 1) (a xorshift32 generator seeded from Math.random by default). */
  random?: () => number;
  /** The upstream's protocol, when the catalog entry may be ambiguous. */
  protocol?: Protocol;
  /** sticky_strict: a request whose bound peer cannot take it gets none. */
  stickyStrict?: boolean;
}

/** The average /status shows that each least_time mode balances on. */
const LEAST_TIME_AVERAGES: Readonly<Record<Protocol, Partial<Record<LeastTime, TimeAverage>>>> = {
  http: { header: 'header_time', last_byte: 'response_time' },
  stream: { connect: 'connect_time', first_byte: 'first_byte_time', last_byte: 'last_byte_time' },
};

/**
 * The balancing method of a catalog entry (metrics/catalog.ts UpstreamConfig.method, a
 * kind only), for a balancer made outside the server's configuration (src/embed): the
 * server passes its parsed `BalancingMethod` instead. What a kind cannot say takes
 * nginx's default: `random` without `two`, `hash` not consistent (its key, a variable
 * expression in the server, is what the caller hands pick()), `least_time` on the
 * header time.
 */
export function balancingMethodOf(kind: UpstreamConfig['method']): BalancingMethod {
  switch (kind ?? 'round_robin') {
    case 'round_robin':
      return { kind: 'round_robin' };
    case 'least_conn':
      return { kind: 'least_conn' };
    case 'random':
      return { kind: 'random', two: false };
    case 'hash':
      return { kind: 'hash', key: '', consistent: false };
    case 'ip_hash':
      return { kind: 'ip_hash' };
    case 'least_time':
      return { kind: 'least_time', time: 'header', inflight: false };
    default:
      throw new Error(`balancing method "${kind}" is not one zonal's balancer has (round_robin, least_conn, least_time, random, hash, ip_hash)`);
  }
}

/** Points of the consistent hash ring per unit of weight (nginx's and ketama's 160). */
export const RING_POINTS = 160;
/** Tries of hash and ip_hash before they fall back to round robin (nginx's 20). */
const HASH_TRIES = 20;
/** Where slow start begins, as a fraction of the weight: near zero, never zero. */
const SLOW_START_FLOOR = 0.01;

// What check() says of a peer.
const OK = 0;
const TRIAL = 1;
const SKIP = 2;
const BUSY = 3;

const { state: STATE, conns: CONNS, fails: FAILS, failStart: FAIL_START, downAt: DOWN_AT, checking: CHECKING, recoveredAt: RECOVERED_AT } = PeerCell;

/** What pick() returns: one for ordinary requests and one for the checking request,
 * made once per peer. */
class Pick implements Chosen {
  /** The checking request's mark in the `checking` cell. */
  token = 0;
  /** least_time inflight: when its request began (a Pick of its own per request). */
  startedAt = 0;
  constructor(
    readonly member: Member,
    readonly trial: boolean,
  ) {}
  get id(): number {
    return this.member.id;
  }
  get entry(): PeerEntry {
    return this.member.entry;
  }
  get host(): string {
    return this.member.host;
  }
  get port(): number {
    return this.member.port;
  }
  get address(): string {
    return this.member.address;
  }
  get metrics(): Peer {
    return this.member.metrics;
  }
  get sid(): string {
    return this.member.sid;
  }
}

/** A peer as this worker's balancer knows it. */
class Member {
  entry!: PeerEntry;
  address = '';
  host = '';
  port = 0;
  weight = 1;
  maxConns = 0;
  maxFails = 1;
  failMs = 10_000;
  slowMs = 0;
  down = false;
  backup = false;
  /** Server id (sticky), and the last salt it was hashed with and the result. */
  sid = '';
  salt = '';
  salted = '';
  /** least_time: reads the average it balances on. */
  time: (() => number) | undefined;
  /** What least_conn and least_time compare in this pick: load per unit of weight. */
  load = 0;
  // Smooth weighted round robin, per worker: nginx's current_weight and effective_weight.
  cw = 0;
  ew = 1;
  // What check() found in this pick.
  /** Weight after slow start. */
  rw = 1;
  /** Weight for round robin: rw, or less after failures (ew). */
  w = 1;
  conns = 0;
  kind = OK;
  seenToken = 0;
  /** The attempt in which it was found selectable. */
  okAt = 0;
  /** The attempt in which it was ruled out for the rest of its pick. */
  excludedAt = 0;
  excludedBusy = false;
  readonly normal: Pick;
  readonly trial: Pick;

  constructor(
    readonly id: number,
    readonly metrics: Peer,
    readonly cells: AtomicCells,
    entry: PeerEntry,
  ) {
    this.normal = new Pick(this, false);
    this.trial = new Pick(this, true);
    this.update(entry);
    this.ew = this.weight;
  }

  update(entry: PeerEntry): void {
    this.entry = entry;
    const weight = entry.weight ?? 1;
    if (weight !== this.weight) this.ew = weight;
    this.weight = weight;
    this.maxConns = entry.maxConns ?? 0;
    this.maxFails = entry.maxFails ?? 1;
    this.failMs = (entry.failTimeout ?? 10) * 1000;
    this.slowMs = (entry.slowStart ?? 0) * 1000;
    this.down = !!entry.down;
    this.backup = !!entry.backup;
    const address = peerAddress(entry);
    if (address !== this.address) {
      this.address = address;
      [this.host, this.port] = splitAddress(address);
    }
    // A /config write of `sid` comes here in every worker, with the new set.
    const sid = entry.sid || defaultSid(address);
    if (sid !== this.sid) {
      this.sid = sid;
      this.salt = '';
      this.salted = sid;
    }
  }

  /** The id a request names it by, with sticky_secret's value `salt`. */
  stickyId(salt: string): string {
    if (salt !== this.salt) {
      this.salt = salt;
      this.salted = saltedSid(this.sid, salt);
    }
    return this.salted;
  }
}

/** `ip:port`, `[v6]:port`, a bare host (port 80), or `unix:<path>` (no port). */
function splitAddress(address: string): [string, number] {
  if (address.startsWith('unix:')) return [address, 0];
  if (address.startsWith('[')) {
    const close = address.indexOf(']');
    const port = address.charCodeAt(close + 1) === 0x3a ? Number(address.slice(close + 2)) : 80;
    return [address.slice(1, close), port];
  }
  const colon = address.lastIndexOf(':');
  if (colon < 0 || address.indexOf(':') !== colon) return [address, 80];
  return [address.slice(0, colon), Number(address.slice(colon + 1))];
}

/** Wrapped milliseconds from b to a (PeerCell times), valid under 24.8 days. */
const since = (a: number, b: number): number => (a - b) | 0;

export class Balancer {
  /** The injected clock and random numbers, if any. */
  private readonly clock: (() => number) | undefined;
  private readonly draw: (() => number) | undefined;
  /** Else a xorshift32 generator's state, seeded from Math.random(): compiled code
   * calls Math.random() through a builtin that allocates each number it returns. */
  private seed = ((Math.random() * 0x7fffffff) | 0) || 1;
  private readonly protocol: Protocol | undefined;
  /** The peer set's record, read with one atomic load per pick. */
  private readonly record: SeqRecord | undefined;
  private generation = -1;
  private readonly members = new Map<number, Member>();
  private primaries: Member[] = [];
  /** One peer in all (nginx's `peers->single`). */
  private single = false;
  private backups: Member[] = [];
  /** Configured weights of the primary peers, down ones included (hash, ip_hash). */
  private totalWeight = 0;
  /** The consistent hash ring: point hashes, ascending, and the primary each belongs to. */
  private ringHashes = new Uint32Array(0);
  private ringMembers = new Int32Array(0);
  private readonly consistent: boolean;
  /** Whether picks read every peer's connections (least_conn, least_time, random two). */
  private readonly needConns: boolean;
  /** least_time: the average it balances on, and whether incomplete requests count. */
  private readonly timeAverage: TimeAverage | undefined;
  private readonly inflight: boolean;
  private readonly stickyStrict: boolean;
  /** Whether failures lower a peer's round robin weight for a while (nginx's
   * effective_weight): the methods that use round robin. */
  private readonly usesEw: boolean;
  /** Attempts so far: marks which peers an attempt found selectable. */
  private stamp = 0;
  /** The first attempt of the current pick. */
  private pickStart = 0;
  /** The current pick's time, whole. */
  private pickNow = 0;
  /** Whether the current pick skipped a peer at max_conns. */
  private busy = false;
  private readonly listeners: Array<() => void> = [];
  private readonly ip = new Uint8Array(16);

  constructor(
    private readonly status: Status,
    private readonly upstream: UpstreamConfig,
    private readonly method: BalancingMethod,
    options: BalancerOptions = {},
  ) {
    this.clock = options.now;
    this.draw = options.random;
    this.protocol = options.protocol;
    this.stickyStrict = !!options.stickyStrict;
    this.consistent = method.kind === 'hash' && method.consistent;
    this.needConns = method.kind === 'least_conn' || method.kind === 'least_time' || (method.kind === 'random' && method.two);
    const protocol = options.protocol ?? (status.catalog().stream?.upstreams?.includes(upstream) ? 'stream' : 'http');
    this.timeAverage = method.kind === 'least_time' ? LEAST_TIME_AVERAGES[protocol][method.time] : undefined;
    if (method.kind === 'least_time' && !this.timeAverage) throw new Error(`least_time ${method.time} is not a mode of ${protocol} upstreams`);
    this.inflight = method.kind === 'least_time' && method.inflight;
    this.usesEw = method.kind === 'round_robin' || method.kind === 'least_conn';
    // The record peers.ts keeps the set in, held here so that the generation check is
    // one atomic load (peerGeneration() looks the record up by name each time).
    this.record = hasPeerSet(status, upstream) ? peerSetRecord(status, upstream) : undefined;
    this.refresh();
  }

  /** Chooses a peer and counts it taken (a max_conns slot acquired atomically across
   * workers, metrics.selected()). `key`: the evaluated hash key (hash) or the client
   * address (ip_hash); ignored otherwise. `tried`: ids already tried for this request
   * (proxy_next_upstream), never chosen again. `sticky`: the server id the request
   * names (sticky), tried before the method. */
  pick(key?: string, tried?: ReadonlySet<number>, sticky?: StickyHint): Chosen | NoPeer {
    this.refresh();
    // The one reading of the clock per pick (Date.now() allocates its result): kept
    // whole for selected.last, and as wrapped int32 milliseconds (a small integer to
    // V8, passed around without boxing) for the shared cells.
    const now = this.now();
    this.pickNow = now;
    const t = now | 0;
    this.pickStart = ++this.stamp;
    this.busy = false;
    let chosen: Pick | undefined;
    if (sticky !== undefined && sticky.id !== '') {
      chosen = this.stickyPick(sticky, tried, t);
      if (chosen) return chosen;
      if (this.stickyStrict) return 'unavailable';
    }
    switch (this.method.kind) {
      case 'round_robin':
        chosen = this.roundRobin(this.primaries, tried, t);
        break;
      case 'least_conn':
      case 'least_time':
        chosen = this.least(this.primaries, tried, t);
        break;
      case 'random':
        chosen = this.randomPick(this.primaries, this.method.two, tried, t);
        break;
      case 'hash':
        // An empty key has no peer of its own: nginx balances it round robin.
        if (!key) chosen = this.roundRobin(this.primaries, tried, t);
        else chosen = this.consistent ? this.ringPick(key, tried, t) : this.hashPick(key, tried, t);
        break;
      case 'ip_hash':
        chosen = this.ipHashPick(key ?? '', tried, t);
        break;
    }
    if (!chosen && this.backups.length > 0)
      chosen = this.method.kind === 'least_conn' || this.method.kind === 'least_time' ? this.least(this.backups, tried, t) : this.roundRobin(this.backups, tried, t);
    return chosen ?? (this.busy ? 'busy' : 'unavailable');
  }

  /** The request to the chosen peer ended. `failed`: it counts as an unsuccessful
   * attempt (passive health; metrics.failed() is called here); otherwise a success
   * (which ends a check). Always releases the max_conns slot and calls
   * metrics.released(). */
  release(chosen: Chosen, failed: boolean): void {
    if (!(chosen instanceof Pick)) throw new TypeError('release() takes what pick() returned');
    const m = chosen.member;
    m.cells.release(CONNS);
    m.metrics.released();
    if (chosen.startedAt !== 0) m.metrics.inflightEnded(chosen.startedAt);
    // The clock only when the peer's health may change: a success outside a check
    // needs none.
    if (failed) this.failed(m, chosen, this.now() | 0);
    else if (chosen.trial) this.checked(m, chosen, this.now() | 0);
    const listeners = this.listeners;
    for (let i = 0; i < listeners.length; i++) listeners[i]();
  }

  /** A stream session reached the chosen peer: a check it was is over, and succeeded,
   * as nginx's stream proxy takes an established connection for the peer's health (a
   * session may last hours; the peer should not wait for its end to count as up). */
  connected(chosen: Chosen): void {
    // Its release checks again, which then changes nothing (the peer is up, the check's
    // mark gone).
    if (chosen instanceof Pick && chosen.trial) this.checked(chosen.member, chosen, this.now() | 0);
  }

  private now(): number {
    return this.clock ? this.clock() : Date.now();
  }

  private random(): number {
    if (this.draw) return this.draw();
    let x = this.seed;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.seed = x;
    return (x >>> 0) / 0x1_0000_0000;
  }

  /** Called after each release, which may let a waiting request through (the queue). */
  onRelease(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Peers of the live set as this balancer knows them, in order (for tests and logs). */
  get peers(): readonly Chosen[] {
    this.refresh();
    return [...this.primaries, ...this.backups].map((m) => m.normal);
  }

  // ---- The live set -------------------------------------------------------------------

  private refresh(): void {
    const generation = this.record ? this.record.generation : peerGeneration(this.status, this.upstream);
    if (generation !== this.generation) this.rebuild(generation);
  }

  private rebuild(generation: number): void {
    // The generation first: a set read after it is as new or newer, and a newer one
    // makes the next pick rebuild again.
    this.generation = generation;
    const set = peerSet(this.status, this.upstream);
    const seen = new Set<number>();
    const primaries: Member[] = [];
    const backups: Member[] = [];
    for (const entry of set.peers) {
      let m = this.members.get(entry.id);
      if (m) m.update(entry);
      else {
        const h = peerHandles(this.status, this.upstream, entry.id, this.protocol);
        m = new Member(entry.id, h.metrics, h.cells, entry);
        if (this.timeAverage) m.time = h.metrics.timing(this.timeAverage);
        this.members.set(entry.id, m);
      }
      seen.add(entry.id);
      (m.backup ? backups : primaries).push(m);
    }
    // A removed peer is never picked again; what pick() returned for it still works.
    for (const id of this.members.keys()) if (!seen.has(id)) this.members.delete(id);
    this.primaries = primaries;
    this.backups = backups;
    this.single = primaries.length + backups.length === 1;
    this.totalWeight = primaries.reduce((sum, m) => sum + m.weight, 0);
    if (this.consistent) this.buildRing();
  }

  /** nginx's ketama ring (ngx_http_upstream_init_chash): RING_POINTS points per unit of
   * weight for each primary, the first the CRC-32 of host, "\0", port and 0 as four
   * bytes, each next one of host, "\0", port and the previous point. Down peers keep
   * their points, so that marking one down moves only its own keys. */
  private buildRing(): void {
    let count = 0;
    for (const m of this.primaries) count += m.weight * RING_POINTS;
    // hash * 2^20 + primary index: sorts by hash, exact below 2^52.
    const keys = new Float64Array(count);
    let n = 0;
    this.primaries.forEach((m, index) => {
      const [host, port] = ringName(m.address);
      let base = crcString(CRC_INIT, host);
      base = crcByte(base, 0);
      base = crcString(base, port);
      let prev = 0;
      for (let j = 0; j < m.weight * RING_POINTS; j++) {
        const hash = crcFinal(crcWord(base, prev));
        keys[n++] = hash * 0x100000 + index;
        prev = hash;
      }
    });
    keys.sort();
    const hashes = new Uint32Array(count);
    const members = new Int32Array(count);
    let unique = 0;
    for (let i = 0; i < count; i++) {
      const hash = Math.floor(keys[i] / 0x100000);
      if (unique > 0 && hashes[unique - 1] === hash) continue;
      hashes[unique] = hash;
      members[unique++] = keys[i] - hash * 0x100000;
    }
    this.ringHashes = hashes.subarray(0, unique);
    this.ringMembers = members.subarray(0, unique);
  }

  // ---- Selection ----------------------------------------------------------------------

  /** Whether m may be chosen now: OK, TRIAL (an unavailable peer whose check is due),
   * SKIP or BUSY (at max_conns). Sets m's weights and connections for the pick. */
  private check(m: Member, tried: ReadonlySet<number> | undefined, t: number): number {
    if (m.down) return SKIP;
    if (m.excludedAt >= this.pickStart) {
      if (m.excludedBusy) this.busy = true;
      return m.excludedBusy ? BUSY : SKIP;
    }
    if (tried !== undefined && tried.has(m.id)) return SKIP;
    const c = m.cells;
    const state = c.load(STATE);
    let kind = OK;
    let rw = m.weight;
    if (state !== PeerState.up) {
      if (state === PeerState.recovering) {
        const elapsed = since(t, c.load(RECOVERED_AT));
        if (elapsed >= 0 && elapsed < m.slowMs) rw = m.weight * Math.max(elapsed / m.slowMs, SLOW_START_FLOOR);
        else m.metrics.recovered();
      } else if (state === PeerState.unavailable) {
        const down = since(t, c.load(DOWN_AT));
        if (down >= 0 && down < m.failMs) return SKIP;
        const token = c.load(CHECKING);
        if (token !== 0) {
          const age = since(t, token);
          if (age >= 0 && age < m.failMs) return SKIP;
        }
        m.seenToken = token;
        kind = TRIAL;
      } else return SKIP; // unhealthy, or not probed yet (probes)
    }
    if (m.maxConns > 0 || this.needConns) {
      const conns = c.load(CONNS);
      if (m.maxConns > 0 && conns >= m.maxConns) {
        this.busy = true;
        return BUSY;
      }
      m.conns = conns;
    }
    m.kind = kind;
    m.rw = rw;
    m.w = this.usesEw && m.ew < rw ? m.ew : rw;
    return kind;
  }

  private exclude(m: Member, busy: boolean): void {
    m.excludedAt = this.stamp;
    m.excludedBusy = busy;
    if (busy) this.busy = true;
  }

  /** Takes m for a request: its max_conns slot, and the right to check it when it is
   * unavailable. Undefined when another worker came first: m is then excluded. */
  private take(m: Member, t: number): Pick | undefined {
    const c = m.cells;
    if (!c.acquire(CONNS, m.maxConns)) {
      this.exclude(m, true);
      return undefined;
    }
    // With inflight, each request's own start goes with it to release().
    let pick = this.inflight ? new Pick(m, m.kind === TRIAL) : m.kind === TRIAL ? m.trial : m.normal;
    if (m.kind === TRIAL) {
      const token = t || 1;
      if (c.compareExchange(CHECKING, m.seenToken, token) !== m.seenToken) {
        c.release(CONNS);
        this.exclude(m, false);
        return undefined;
      }
      pick.token = token;
    }
    m.metrics.selected(this.pickNow);
    if (this.inflight) {
      pick.startedAt = this.pickNow;
      m.metrics.inflightBegan(this.pickNow);
    }
    return pick;
  }

  /** nginx's smooth weighted round robin, its current weights changed only once a peer
   * is taken. Each failed take rules one peer out: at most list.length + 1 attempts. */
  private roundRobin(list: Member[], tried: ReadonlySet<number> | undefined, t: number): Pick | undefined {
    for (let attempt = 0; attempt <= list.length; attempt++) {
      const at = ++this.stamp;
      let best: Member | undefined;
      let total = 0;
      for (let i = 0; i < list.length; i++) {
        const m = list[i];
        if (this.check(m, tried, t) > TRIAL) continue;
        m.okAt = at;
        total += m.w;
        if (best === undefined || m.cw + m.w > best.cw + best.w) best = m;
      }
      if (best === undefined) return undefined;
      const pick = this.take(best, t);
      if (pick) {
        this.advance(list, at, best, total);
        return pick;
      }
    }
    return undefined;
  }

  /** Round robin's step once `best` is taken among the peers marked `at`. */
  private advance(list: Member[], at: number, best: Member, total: number): void {
    for (let i = 0; i < list.length; i++) {
      const m = list[i];
      if (m.okAt !== at) continue;
      m.cw += m.w;
      if (m.ew < m.weight) m.ew++;
    }
    best.cw -= total;
  }

  /** What least_conn and least_time compare, per unit of weight: connections (all
   * workers'), or the average time × (connections + 1). */
  private loadOf(m: Member): number {
    const time = m.time;
    if (time === undefined) return m.conns / m.rw;
    let avg = time();
    if (this.inflight) {
      const running = m.metrics.inflightTime(this.pickNow);
      if (running > avg) avg = running;
    }
    return (avg * (m.conns + 1)) / m.rw;
  }

  /** The least load (loadOf) among the selectable peers; ties by round robin. */
  private least(list: Member[], tried: ReadonlySet<number> | undefined, t: number): Pick | undefined {
    for (let attempt = 0; attempt <= list.length; attempt++) {
      const at = ++this.stamp;
      let best: Member | undefined;
      let many = false;
      for (let i = 0; i < list.length; i++) {
        const m = list[i];
        if (this.check(m, tried, t) > TRIAL) continue;
        m.okAt = at;
        m.load = this.loadOf(m);
        if (best === undefined || m.load < best.load) {
          best = m;
          many = false;
        } else if (m.load === best.load) many = true;
      }
      if (best === undefined) return undefined;
      if (!many) {
        const pick = this.take(best, t);
        if (pick) return pick;
        continue;
      }
      const tie = ++this.stamp;
      let chosen: Member | undefined;
      let total = 0;
      for (let i = 0; i < list.length; i++) {
        const m = list[i];
        if (m.okAt !== at || m.load !== best.load) continue;
        m.okAt = tie;
        total += m.w;
        if (chosen === undefined || m.cw + m.w > chosen.cw + chosen.w) chosen = m;
      }
      const pick = this.take(chosen!, t);
      if (pick) {
        this.advance(list, tie, chosen!, total);
        return pick;
      }
    }
    return undefined;
  }

  /** The peer a sticky request names, when it can take the request (not down, not
   * unavailable, not at max_conns, not tried); backups too, after the primaries. */
  private stickyPick(sticky: StickyHint, tried: ReadonlySet<number> | undefined, t: number): Pick | undefined {
    return this.stickyIn(this.primaries, sticky, tried, t) ?? this.stickyIn(this.backups, sticky, tried, t);
  }

  private stickyIn(list: Member[], sticky: StickyHint, tried: ReadonlySet<number> | undefined, t: number): Pick | undefined {
    for (let i = 0; i < list.length; i++) {
      const m = list[i];
      if (m.stickyId(sticky.salt) !== sticky.id) continue;
      this.stamp++;
      return this.check(m, tried, t) > TRIAL ? undefined : this.take(m, t);
    }
    return undefined;
  }

  /** Weighted random; `two`: two different weighted random peers, the one with fewer
   * connections (all workers') per unit of weight, the second on a tie (nginx). */
  private randomPick(list: Member[], two: boolean, tried: ReadonlySet<number> | undefined, t: number): Pick | undefined {
    for (let attempt = 0; attempt <= list.length; attempt++) {
      const at = ++this.stamp;
      let total = 0;
      let count = 0;
      for (let i = 0; i < list.length; i++) {
        const m = list[i];
        if (this.check(m, tried, t) > TRIAL) continue;
        m.okAt = at;
        total += m.rw;
        count++;
      }
      if (count === 0) return undefined;
      // The draws are written out here: a double handed to another function is boxed.
      let r = this.random() * total;
      let m: Member | undefined;
      for (let i = 0; i < list.length; i++) {
        if (list[i].okAt !== at) continue;
        m = list[i];
        r -= m.rw;
        if (r < 0) break;
      }
      if (two && count > 1) {
        const first = m!;
        let other: Member | undefined;
        r = this.random() * (total - first.rw);
        for (let i = 0; i < list.length; i++) {
          if (list[i].okAt !== at || list[i] === first) continue;
          other = list[i];
          r -= other.rw;
          if (r < 0) break;
        }
        if (!(other!.conns * first.rw > first.conns * other!.rw)) m = other;
      }
      // (Rounding may leave r at 0 after the last one: that one.)
      const pick = this.take(m!, t);
      if (pick) return pick;
    }
    return undefined;
  }

  /** The primary that `point` (below totalWeight) falls on, by configured weights. */
  private byWeight(point: number): Member {
    const list = this.primaries;
    let w = point;
    for (let i = 0; i < list.length - 1; i++) {
      if (w < list[i].weight) return list[i];
      w -= list[i].weight;
    }
    return list[list.length - 1];
  }

  /** Tries one peer hash or ip_hash landed on. */
  private tryPeer(m: Member, tried: ReadonlySet<number> | undefined, t: number): Pick | undefined {
    const kind = this.check(m, tried, t);
    if (kind > TRIAL) {
      if (m.excludedAt < this.pickStart) this.exclude(m, kind === BUSY);
      return undefined;
    }
    return this.take(m, t);
  }

  /** nginx's hash (ngx_http_upstream_get_hash_peer, compatible with Cache::Memcached):
   * hash += (crc32([tries] key) >> 16) & 0x7fff, the peer at hash % total weight; 20
   * tries, then round robin. */
  private hashPick(key: string, tried: ReadonlySet<number> | undefined, t: number): Pick | undefined {
    if (this.totalWeight === 0) return this.roundRobin(this.primaries, tried, t);
    let hash = 0;
    for (let rehash = 0; rehash <= HASH_TRIES; rehash++) {
      let crc = CRC_INIT;
      if (rehash > 0) crc = crcDecimal(crc, rehash);
      crc = crcString(crc, key);
      hash += (crcFinal(crc) >>> 16) & 0x7fff;
      this.stamp++;
      const pick = this.tryPeer(this.byWeight(hash % this.totalWeight), tried, t);
      if (pick) return pick;
    }
    return this.roundRobin(this.primaries, tried, t);
  }

  /** nginx's ip_hash: the first three octets of an IPv4 client, all of an IPv6 one;
   * hash = (hash * 113 + byte) % 6271 from 89, continued on each of 20 tries, then round
   * robin (as for a client that is not an IP address). */
  private ipHashPick(key: string, tried: ReadonlySet<number> | undefined, t: number): Pick | undefined {
    const length = ipHashBytes(key, this.ip);
    if (length === 0 || this.totalWeight === 0) return this.roundRobin(this.primaries, tried, t);
    let hash = 89;
    for (let tries = 0; tries <= HASH_TRIES; tries++) {
      for (let i = 0; i < length; i++) hash = (hash * 113 + this.ip[i]) % 6271;
      this.stamp++;
      const pick = this.tryPeer(this.byWeight(hash % this.totalWeight), tried, t);
      if (pick) return pick;
    }
    return this.roundRobin(this.primaries, tried, t);
  }

  /** nginx's consistent hash: the first ring point at or after crc32(key), then the
   * next ones, skipping peers already ruled out; 20 peers ruled out, round robin. */
  private ringPick(key: string, tried: ReadonlySet<number> | undefined, t: number): Pick | undefined {
    const hashes = this.ringHashes;
    const points = hashes.length;
    if (points > 0) {
      const hash = crc32(key);
      let lo = 0;
      let hi = points;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (hashes[mid] < hash) lo = mid + 1;
        else hi = mid;
      }
      const limit = Math.min(HASH_TRIES, this.primaries.length);
      let rejected = 0;
      for (let k = 0; k < points && rejected < limit; k++) {
        const m = this.primaries[this.ringMembers[(lo + k) % points]];
        if (m.excludedAt >= this.pickStart) continue;
        this.stamp++;
        const pick = this.tryPeer(m, tried, t);
        if (pick) return pick;
        rejected++;
      }
    }
    return this.roundRobin(this.primaries, tried, t);
  }

  // ---- Passive health -----------------------------------------------------------------

  private failed(m: Member, pick: Pick, t: number): void {
    m.metrics.failed();
    // nginx: the one server of a group is never considered unavailable (max_fails,
    // fail_timeout and slow_start do not apply to it).
    if (this.single) return;
    // nginx lowers the failing peer's round robin weight by weight / max_fails; it
    // comes back by one per pick.
    if (this.usesEw && m.maxFails > 0) m.ew = Math.max(0, m.ew - Math.floor(m.weight / m.maxFails));
    const c = m.cells;
    if (pick.trial) {
      const state = c.load(STATE);
      // Still unavailable: another fail_timeout, then another check. The same outage:
      // not counted in `unavailable` again, downstart kept, downtime still running (the
      // header above says why: Angie's accounting).
      if (state === PeerState.unavailable) c.store(DOWN_AT, t);
      c.compareExchange(CHECKING, pick.token, 0);
      if (state === PeerState.unavailable) return;
    }
    if (m.maxFails <= 0) return;
    const state = c.load(STATE);
    if (state !== PeerState.up && state !== PeerState.recovering) return;
    const n = c.load(FAILS);
    const age = since(t, c.load(FAIL_START));
    let fails: number;
    if (n > 0 && age >= 0 && age <= m.failMs) fails = c.add(FAILS) + 1;
    // No window open, or it ended: this failure opens one. (Two workers failing at the
    // very instant a window opens may count one failure less.)
    else if (c.compareExchange(FAILS, n, 1) === n) {
      c.store(FAIL_START, t);
      fails = 1;
    } else fails = c.add(FAILS) + 1;
    if (fails < m.maxFails) return;
    // The time first: a worker that sees the peer unavailable reads when it became so.
    c.store(DOWN_AT, t);
    if (m.metrics.becameUnavailable(this.now())) c.store(FAILS, 0);
  }

  /** The checking request succeeded: the peer is available again. */
  private checked(m: Member, pick: Pick, t: number): void {
    const c = m.cells;
    if (c.load(STATE) === PeerState.unavailable) {
      // Only the methods that ramp weights recover slowly (a peer made before the
      // configuration refused slow_start elsewhere would otherwise show recovering).
      const slow = m.slowMs > 0 && this.usesEw;
      if (slow) c.store(RECOVERED_AT, t);
      c.store(FAILS, 0);
      m.metrics.becameAvailable(this.now(), slow);
    }
    c.compareExchange(CHECKING, pick.token, 0);
    if (c.load(FAILS) !== 0) c.store(FAILS, 0);
  }
}

/** Host and port as nginx's chash takes them from a server name: the port is what
 * follows the last ':' when only digits do. */
function ringName(address: string): [string, string] {
  for (let j = address.length - 1; j >= 0; j--) {
    const c = address.charCodeAt(j);
    if (c === 0x3a) return [address.slice(0, j), address.slice(j + 1)];
    if (c < 0x30 || c > 0x39) break;
  }
  return [address, ''];
}
