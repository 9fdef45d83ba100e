// Limit zones: connection limits (/status/http/limit_conns/<zone>,
// /status/stream/limit_conns/<zone>) and request limits (/status/http/limit_reqs/<zone>).
// Each counts what its limit decided. The counters live in the limit's own zone, beside
// the keys it limits by, as in Angie: that zone is what /status/slabs/<zone> shows.
// HTTP and stream have separate namespaces, so an HTTP and a stream limit may share a
// name (and so a zone): their blocks have different keys in it.
import type { GaugeBlock } from '../engine/index.js';
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
