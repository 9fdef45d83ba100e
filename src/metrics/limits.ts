// Limit zones: connection limits (/status/http/limit_conns/<zone>,
// /status/stream/limit_conns/<zone>) and request limits (/status/http/limit_reqs/<zone>).
// Each counts what its limit decided. The counters live in the limit's own zone, beside
// the keys it limits by, as in Angie: that zone is what /status/slabs/<zone> shows.
// HTTP and stream have separate namespaces, so an HTTP and a stream limit may share a
// name (and so a zone): their blocks have different keys in it.
import { LIMIT_BUSY, LIMIT_EXHAUSTED, LimitReqMode, type GaugeBlock, type LimitConnTable, type LimitKey, type LimitReqTable } from '../engine/index.js';
import type { LimitZoneConfig, StatusConfig } from './catalog.js';
import { group, Layout, type Counted, type Group } from './shape.js';
import type { StatusStore } from './store.js';
import { zoneCollection, type StatusNode } from './tree.js';

/** Longest key a connection limit counts by (bytes): an empty or longer key is `skipped`. */
export const LIMIT_CONN_KEY_MAX = 255;
/** Longest key a request limit counts by (bytes): an empty or longer key is `skipped`. */
export const LIMIT_REQ_KEY_MAX = 65535;

/** Whether a limit lets `key` pass uncounted as `skipped`: it is empty, or longer than
 * `max` bytes (UTF-8 for a string). */
export function limitKeySkipped(key: Buffer | string, max: number): boolean {
  if (key.length === 0 || key.length > max) return true;
  if (typeof key !== 'string') return false;
  // A UTF-16 code unit takes at most 3 bytes in UTF-8: count only when it can matter.
  return key.length * 3 > max && Buffer.byteLength(key) > max;
}

const conn = new Layout<Counted>();
const connFields = {
  passed: conn.counter('passed', 'Connections passed.'),
  skipped: conn.counter('skipped', 'Connections passed because the key was empty or longer than 255 bytes.'),
  rejected: conn.counter('rejected', 'Connections rejected for being over the configured limit.'),
  exhausted: conn.counter('exhausted', 'Connections rejected because the zone storage ran out.'),
};
export const limitConnFields: Group<Counted> = group('', Object.values(connFields));

const req = new Layout<Counted>();
const reqFields = {
  passed: req.counter('passed', 'Requests passed.'),
  skipped: req.counter('skipped', 'Requests passed because the key was empty or longer than 65535 bytes.'),
  delayed: req.counter('delayed', 'Requests delayed.'),
  rejected: req.counter('rejected', 'Requests rejected.'),
  exhausted: req.counter('exhausted', 'Requests rejected because the zone storage ran out.'),
};
export const limitReqFields: Group<Counted> = group('', Object.values(reqFields));

interface Index {
  readonly index: number;
}
type ConnLayout = Record<'passed' | 'skipped' | 'rejected' | 'exhausted', Index>;

/** What a worker calls as a connection limit decides: each connection (or request, for
 * an HTTP limit_conn) counts under one of these. */
export class LimitConn {
  constructor(
    protected readonly block: GaugeBlock,
    private readonly l: ConnLayout = connFields,
  ) {}

  passed(): void {
    this.block.add(this.l.passed.index);
  }

  /** Passed without being counted: the key was empty or too long (limitKeySkipped). */
  skipped(): void {
    this.block.add(this.l.skipped.index);
  }

  /** Over the configured limit. */
  rejected(): void {
    this.block.add(this.l.rejected.index);
  }

  /** Rejected because the zone had no room for the key. */
  exhausted(): void {
    this.block.add(this.l.exhausted.index);
  }
}

/** What a worker calls as a request limit decides: each request counts under one of
 * these (a delayed request is `delayed`, not also `passed`). */
export class LimitReq extends LimitConn {
  constructor(block: GaugeBlock) {
    super(block, reqFields);
  }

  /** Over the rate, within the burst: held back, then passed. */
  delayed(): void {
    this.block.add(reqFields.delayed.index);
  }
}

type Kind = 'http/limit_conns' | 'stream/limit_conns' | 'http/limit_reqs';

function configured(kind: Kind, c: StatusConfig): LimitZoneConfig[] {
  if (kind === 'http/limit_conns') return c.http?.limitConns ?? [];
  if (kind === 'stream/limit_conns') return c.stream?.limitConns ?? [];
  return c.http?.limitReqs ?? [];
}

function limitZones<R>(kind: Kind, layout: Layout<Counted>, fields: Group<Counted>, make: (block: GaugeBlock) => R) {
  // The limit's zone is named after it; the key says which kind of limit it is.
  const block = (status: StatusStore, name: string) => status.gauges(name, kind, layout.size);
  return {
    fields,
    recorder: (status: StatusStore, name: string): R => make(block(status, name)),
    node: (status: StatusStore): StatusNode =>
      zoneCollection(() => configured(kind, status.catalog()), fields, (z: LimitZoneConfig) => ({ sums: block(status, z.name).sums() })),
  };
}

export const httpLimitConns = limitZones('http/limit_conns', conn, limitConnFields, (b) => new LimitConn(b));
export const streamLimitConns = limitZones('stream/limit_conns', conn, limitConnFields, (b) => new LimitConn(b));
export const httpLimitReqs = limitZones('http/limit_reqs', req, limitReqFields, (b) => new LimitReq(b));

// The keyed state of each limit lives beside its counters, in the limit's own zone.
const REQ_TABLE = 'http/limit_reqs/keys';
const connTable = (stream: boolean) => (stream ? 'stream/limit_conns/keys' : 'http/limit_conns/keys');

/** What a request limit decided for one request. */
export type LimitReqResult = 'passed' | 'delayed' | 'rejected' | 'skipped' | 'exhausted';

export interface LimitReqDecision {
  readonly result: LimitReqResult;
  /** Milliseconds to hold the request before serving it: more than 0 only when `delayed`. */
  readonly delay: number;
}

export interface LimitReqOptions {
  /** Requests over the rate that are held back (or passed at once with `nodelay`) rather
   * than rejected (nginx's `burst`, default 0). */
  readonly burst?: number;
  /** Passes the requests within the burst at once (nginx's `nodelay`). */
  readonly nodelay?: boolean;
  /** Passes this many requests of the burst at once and delays only the rest (nginx's
   * `delay=`). */
  readonly delay?: number;
  /** Decides and counts, but passes every request at once (nginx's `limit_req_dry_run`). */
  readonly dryRun?: boolean;
}

const PASSED: LimitReqDecision = Object.freeze({ result: 'passed', delay: 0 });
const SKIPPED: LimitReqDecision = Object.freeze({ result: 'skipped', delay: 0 });
const REJECTED: LimitReqDecision = Object.freeze({ result: 'rejected', delay: 0 });
const EXHAUSTED: LimitReqDecision = Object.freeze({ result: 'exhausted', delay: 0 });

function limitZone(status: StatusStore, kind: 'http/limit_conns' | 'stream/limit_conns' | 'http/limit_reqs', name: string): LimitZoneConfig {
  const zone = configured(kind, status.catalog()).find((z) => z.name === name);
  if (!zone) throw new Error(`no ${kind === 'http/limit_reqs' ? 'request' : 'connection'} limit zone "${name}" is configured (${kind.replace('/', '.')} of the status configuration)`);
  return zone;
}

function wholeOption(value: number | undefined, what: string): number {
  if (value === undefined) return 0;
  if (!Number.isInteger(value) || value < 0 || value > 2147483647) throw new RangeError(`${what} must be a whole number from 0 to 2147483647, not ${value}`);
  return value;
}

/**
 * nginx's limit_req over one zone, exact across every process of the instance: the
 * bucket of a key is one state in shared memory, changed in one call under the zone's
 * mutex. Each decision is counted in /status/http/limit_reqs/<zone>.
 */
export class RequestLimiter {
  readonly zone: string;
  /** Milli-requests per second, as nginx keeps the rate (1r/m is 16). */
  readonly rate: number;
  /** In milli-requests. */
  readonly burst: number;
  /** Milli-requests passed without delay: Infinity with `nodelay`. */
  readonly delayAt: number;
  readonly dryRun: boolean;
  readonly table: LimitReqTable;
  private readonly recorder: LimitReq;

  constructor(status: StatusStore, zone: string, options: LimitReqOptions = {}) {
    const config = limitZone(status, 'http/limit_reqs', zone);
    if (!config.rate || !(config.rate > 0)) throw new Error(`request limit zone "${zone}" has no rate`);
    this.zone = zone;
    this.rate = Math.max(1, Math.floor(config.rate * 1000));
    this.burst = wholeOption(options.burst, 'burst') * 1000;
    this.delayAt = options.nodelay ? Infinity : wholeOption(options.delay, 'delay') * 1000;
    this.dryRun = options.dryRun ?? false;
    this.table = status.zoneNamed(zone).limitReqTable(REQ_TABLE);
    this.recorder = httpLimitReqs.recorder(status, zone);
  }

  /** Decides for one request of `key` and counts the decision. An empty key, or one over
   * 65535 bytes, is not limited (`skipped`). */
  take(key: LimitKey): LimitReqDecision {
    if (limitKeySkipped(key as Buffer | string, LIMIT_REQ_KEY_MAX)) return this.skipped();
    const excess = this.table.take(key, this.rate, this.burst, LimitReqMode.Charge);
    if (excess < 0) return this.refused(excess);
    return this.passed(this.delayOf(excess));
  }

  /** Milliseconds a request leaving `excess` in the bucket waits: nginx's
   * (excess - delay) * 1000 / rate. */
  delayOf(excess: number): number {
    return excess <= this.delayAt ? 0 : Math.floor(((excess - this.delayAt) * 1000) / this.rate);
  }

  /** Counts a key passed unlimited. */
  skipped(): LimitReqDecision {
    this.recorder.skipped();
    return SKIPPED;
  }

  /** Counts a refusal (LIMIT_BUSY or LIMIT_EXHAUSTED); in dry run the request passes. */
  refused(code: number): LimitReqDecision {
    if (code === LIMIT_EXHAUSTED) this.recorder.exhausted();
    else this.recorder.rejected();
    if (this.dryRun) return PASSED;
    return code === LIMIT_BUSY ? REJECTED : EXHAUSTED;
  }

  /** Counts a request passed after `delay` ms (0: at once); in dry run it passes at once. */
  passed(delay: number): LimitReqDecision {
    if (delay <= 0) {
      this.recorder.passed();
      return PASSED;
    }
    this.recorder.delayed();
    return this.dryRun ? PASSED : { result: 'delayed', delay };
  }
}

/** One request limit of a request, with the key this request has for it. */
export interface RequestLimit {
  readonly limiter: RequestLimiter;
  readonly key: LimitKey;
}

/**
 * Several limit_req for one request, as nginx takes them: every limit but the last only
 * looks, the last charges, and once none refused, the others are charged too; the
 * request waits for the longest delay. The first refusal stops there: the limits before
 * it are not charged, and count the request as passed (what they decided). Each zone
 * counts its own decision.
 */
export function limitRequest(limits: readonly RequestLimit[]): LimitReqDecision {
  if (limits.length === 1) return limits[0].limiter.take(limits[0].key);
  const last = limits.length - 1;
  const looked: number[] = [];
  const excess: number[] = [];
  for (let i = 0; i <= last; i++) {
    const { limiter, key } = limits[i];
    if (limitKeySkipped(key as Buffer | string, LIMIT_REQ_KEY_MAX)) {
      limiter.skipped();
      excess[i] = -1;
      continue;
    }
    const e = limiter.table.take(key, limiter.rate, limiter.burst, i === last ? LimitReqMode.Charge : LimitReqMode.Look);
    if (e < 0) {
      for (const j of looked) limits[j].limiter.passed(0);
      const refused = limiter.refused(e);
      // A dry run refusal passes: the others still decide.
      if (refused !== PASSED) return refused;
      excess[i] = -1;
      continue;
    }
    excess[i] = e;
    if (i !== last) looked.push(i);
  }
  for (const i of looked) excess[i] = limits[i].limiter.table.take(limits[i].key, limits[i].limiter.rate, 0, LimitReqMode.Account);
  let delay = 0;
  for (let i = 0; i <= last; i++) {
    if (excess[i] < 0) continue;
    const own = limits[i].limiter.delayOf(excess[i]);
    const d = limits[i].limiter.passed(own);
    if (d.delay > delay) delay = d.delay;
  }
  return delay > 0 ? { result: 'delayed', delay } : PASSED;
}

export interface LimitConnOptions {
  /** Keys held at once at most (nginx's `limit_conn <zone> <number>`). */
  readonly limit: number;
  /** Decides and counts, but passes everything (nginx's `limit_conn_dry_run`). */
  readonly dryRun?: boolean;
  /** A stream limit (/status/stream/limit_conns) rather than an HTTP one. */
  readonly stream?: boolean;
}

/** Ends what acquire() took; calling it again does nothing. */
export type LimitRelease = () => void;

const NOTHING_HELD: LimitRelease = () => {};

/** ConnectionLimiter.hold(): a count was taken. */
export const HOLD_TAKEN = 1;
/** ConnectionLimiter.hold(): passed, holding nothing. */
export const HOLD_NONE = 0;
/** ConnectionLimiter.hold(): refused. */
export const HOLD_REFUSED = -1;

/**
 * nginx's limit_conn over one zone, exact across every process of the instance: a count
 * per key of what is in progress, in shared memory, with what each worker slot holds of
 * it, so that the slot of a process that died can be given back (repairLimitSlot). Each
 * decision is counted in /status/http/limit_conns/<zone> (or stream).
 */
export class ConnectionLimiter {
  readonly zone: string;
  readonly limit: number;
  readonly dryRun: boolean;
  readonly table: LimitConnTable;
  private readonly slot: number;
  private readonly recorder: LimitConn;

  constructor(status: StatusStore, zone: string, options: LimitConnOptions) {
    const stream = options.stream ?? false;
    limitZone(status, stream ? 'stream/limit_conns' : 'http/limit_conns', zone);
    if (!Number.isInteger(options.limit) || options.limit < 1 || options.limit > 65535)
      throw new RangeError(`a connection limit must be a whole number from 1 to 65535, not ${options.limit}`);
    this.zone = zone;
    this.limit = options.limit;
    this.dryRun = options.dryRun ?? false;
    const z = status.zoneNamed(zone);
    this.slot = z.workerSlot();
    if (this.slot < 0) throw new Error('connection limits are taken by writing processes (workers): this status was attached with writer: false');
    this.table = z.limitConnTable(connTable(stream));
    this.recorder = (stream ? streamLimitConns : httpLimitConns).recorder(status, zone);
  }

  /** Takes one for `key`: the function that gives it back, or null when the key is at its
   * limit or the zone has no room for it. An empty key, or one over 255 bytes, is not
   * limited (`skipped`). In dry run, what would be refused passes, held by nothing. */
  acquire(key: LimitKey): LimitRelease | null {
    const r = this.hold(key);
    if (r === HOLD_TAKEN) {
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        this.release(key);
      };
    }
    return r === HOLD_REFUSED ? null : NOTHING_HELD;
  }

  /** acquire() for a caller that keeps the key and gives the count back itself, with no
   * function made per call (the server's requests): HOLD_TAKEN when a count of `key` was
   * taken, for one release(key); HOLD_NONE when it passes holding nothing (a key not
   * limited, a dry run's refusal); HOLD_REFUSED when it is refused. Counted as acquire()
   * counts. */
  hold(key: LimitKey): number {
    if (limitKeySkipped(key as Buffer | string, LIMIT_CONN_KEY_MAX)) {
      this.recorder.skipped();
      return HOLD_NONE;
    }
    const r = this.table.acquire(key, this.limit, this.slot);
    if (r === 1) {
      this.recorder.passed();
      return HOLD_TAKEN;
    }
    if (r === 0) this.recorder.rejected();
    else this.recorder.exhausted();
    return this.dryRun ? HOLD_NONE : HOLD_REFUSED;
  }

  /** Gives back one count that hold() took for `key` (only once per HOLD_TAKEN). */
  release(key: LimitKey): void {
    this.table.release(key, this.slot);
  }
}

/**
 * After the process in worker slot `slot` died: gives back every connection limit count
 * it held, so that its keys are not held forever. The process that restarts workers (the
 * zonal primary, or an embedding cluster's primary on 'exit') calls it before the slot is
 * used again. Returns how many keys' holds ended.
 */
export function repairLimitSlot(status: StatusStore, slot: number): number {
  const c = status.catalog();
  let ended = 0;
  for (const stream of [false, true]) {
    const zones = (stream ? c.stream?.limitConns : c.http?.limitConns) ?? [];
    for (const z of zones) {
      const zone = status.zoneNamed(z.name);
      if (!zone.has(connTable(stream))) continue;
      ended += zone.limitConnTable(connTable(stream)).repair(slot);
    }
  }
  return ended;
}
