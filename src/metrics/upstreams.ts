// HTTP upstreams (/status/http/upstreams/<upstream>) and stream upstreams
// (/status/stream/upstreams/<upstream>): for each upstream with a shared-memory zone, its
// peers keyed by canonical address, `keepalive`, and `queue` when one is configured.
// Everything lives in the upstream's own zone, which /status/slabs shows.
//
// header_time and response_time (stream: connect_time, first_byte_time, last_byte_time)
// are moving averages in milliseconds. Each worker keeps its own:
//     average = average * f + sample * (1 - f),   f = response_time_factor / 100 (0.9)
// starting from its first sample; the API shows the workers' averages weighted by how
// many samples each took, rounded to whole milliseconds. least_time balances on the
// same weighted averages, unrounded (Peer.timing()), read from every worker's shard.
import type { AtomicCells, GaugeBlock, Histogram } from '../engine/index.js';
import { peerName, type UpstreamConfig } from './catalog.js';
import { boundsOf, histogramIn, histogramKey } from './histograms.js';
import { peerKey, peerSet, publishPeers, updatePeers, upstreamKey, zoneOf, type PeerEntry, type PeerSet, type UpdateResult } from './peers.js';
import { CLAIMED, RESPONSE_COUNTERS, responseEntries, responseIndex } from './responses.js';
import { entries, group, leaf, time, Layout, type Counted, type Field, type Group, type RenderContext, type Scalar } from './shape.js';
import type { StatusStore } from './store.js';
import { collection, FieldNode, ObjectNode, type StatusNode } from './tree.js';

export type Protocol = 'http' | 'stream';

/** Shared peer states, in a cell all workers agree on. `down` comes from configuration. */
export const PeerState = { up: 0, unavailable: 1, unhealthy: 2, checking: 3, recovering: 4 } as const;

/**
 * The words of a peer's shared cells (`peer/<id>/state`): what every worker's balancer
 * must agree on at once, each changed with one atomic operation. Times are epoch
 * milliseconds wrapped to int32 (`Date.now() | 0`), compared as `((a - b) | 0)`: exact
 * for intervals under 2^31 ms (24.8 days), which fail_timeout and slow_start are.
 */
export const PeerCell = {
  /** PeerState: the one word /status reads. */
  state: 0,
  /** Live connections to the peer from every worker (max_conns, least_conn, random two). */
  conns: 1,
  /** Failures counted in the current fail_timeout window. */
  fails: 2,
  /** When the current failure window began (its first failure). */
  failStart: 3,
  /** When the peer became unavailable, or its last checking request failed. */
  downAt: 4,
  /** While one request checks an unavailable peer: when it started (never 0); else 0. */
  checking: 5,
  /** When the peer became available again (the start of its slow start). */
  recoveredAt: 6,
} as const;
/** How many cells a peer has (one spare). */
export const PEER_CELLS = 8;
const STATE_NAMES = ['up', 'unavailable', 'unhealthy', 'checking', 'recovering'];
// The text format's numbers for states (DESIGN.md).
const STATE_NUMBERS: Record<string, number> = { up: 1, down: 2, unavailable: 3, recovering: 4, unhealthy: 5, checking: 6 };

interface PeerSource extends Counted {
  readonly peer: PeerEntry;
  readonly upstream: UpstreamConfig;
  readonly block: GaugeBlock;
  readonly cells: AtomicCells;
  readonly claims?: AtomicCells;
  /** The shared state cell, read once for the whole peer. */
  readonly state: number;
  /** `server` as JSON, kept with the upstream's storage (see cachedStorage). */
  readonly serverJson?: Uint8Array;
  /** The peer's histograms by quantity (none: `status_zone_histogram off`, or no room). */
  readonly histograms: PeerHistograms;
}

/** A peer's histograms: response time for HTTP, connect and session time for stream. */
type PeerHistograms = ReadonlyArray<readonly [string, Histogram]>;
const QUANTITIES: Record<Protocol, readonly string[]> = { http: ['response_time'], stream: ['connect_time', 'session_time'] };

/** A moving average: its per-worker value and its per-worker sample count. */
interface Average {
  readonly value: number;
  readonly samples: number;
}

function averageOf(s: PeerSource, avg: Average): number {
  return Math.round(s.block.weightedMean(avg.value, avg.samples));
}

// No average: the other protocol's timings, which take no memory.
const NO_AVERAGE: Average = { value: -1, samples: -1 };

function peerLayout(protocol: Protocol) {
  const layout = new Layout<PeerSource>();
  // Only the protocol's own timings take words: a peer's block is kept within 2 KiB for
  // two workers, half a page, so that a render reads half as many pages.
  const average = (own: Protocol): Average => (own === protocol ? { value: layout.reserve(1), samples: layout.reserve(1) } : NO_AVERAGE);
  const l = {
    current: layout.gauge('current', 'Current connections to the peer.'),
    total: layout.counter('total', protocol === 'http' ? 'Requests forwarded to the peer.' : 'Connections forwarded to the peer.'),
    last: layout.reserve(1),
    responses: protocol === 'http' ? layout.reserve(RESPONSE_COUNTERS) : -1,
    received: layout.counter('received', 'Bytes received from the peer.'),
    sent: layout.counter('sent', 'Bytes sent to the peer.'),
    fails: layout.counter('fails', 'Unsuccessful attempts to communicate with the peer.'),
    unavailable: layout.counter('unavailable', 'Times the peer became unavailable by reaching max_fails.'),
    downtime: layout.reserve(1),
    downstart: layout.reserve(1),
    probeCount: layout.counter('count', 'Health probes made.'),
    probeFails: layout.counter('fails', 'Failed health probes.'),
    probeLast: layout.reserve(1),
    headerTime: average('http'),
    responseTime: average('http'),
    connectTime: average('stream'),
    firstByteTime: average('stream'),
    lastByteTime: average('stream'),
    // least_time inflight: this worker's incomplete requests to the peer, and the sum of
    // their start times (ms after INFLIGHT_EPOCH); every worker's are summed to read them.
    inflight: layout.reserve(1),
    inflightStarts: layout.reserve(1),
  };
  return { layout, l };
}

function peerFields(protocol: Protocol): { fields: Group<PeerSource>; size: number; l: ReturnType<typeof peerLayout>['l'] } {
  const { layout, l } = peerLayout(protocol);
  const state = (s: PeerSource): string => (s.peer.down ? 'down' : (STATE_NAMES[s.state] ?? 'up'));
  const downtime = (s: PeerSource, ctx: RenderContext): number => {
    const past = s.sums[l.downtime];
    // While unavailable, the time since it went down counts too.
    return s.state === PeerState.unavailable ? past + Math.max(0, ctx.now - s.block.max(l.downstart)) : past;
  };
  const avg = (name: string, a: Average, help: string) => leaf<PeerSource>(name, help, (s) => averageOf(s, a), 'gauge');
  const health: Array<Field<PeerSource>> = [
    leaf('fails', 'Unsuccessful attempts to communicate with the peer.', (s) => s.sums[l.fails.index], 'counter'),
    leaf('unavailable', 'Times the peer became unavailable by reaching max_fails.', (s) => s.sums[l.unavailable.index], 'counter'),
    leaf('downtime', 'Milliseconds the peer was unavailable for selection.', downtime, 'counter'),
    time('downstart', 'When the peer became unavailable.', (s) => s.block.max(l.downstart)),
  ];
  if (protocol === 'http')
    health.push(
      avg('header_time', l.headerTime, 'Average milliseconds to receive response headers.'),
      avg('response_time', l.responseTime, 'Average milliseconds to receive the whole response.'),
    );
  else
    health.push(
      avg('connect_time', l.connectTime, 'Average milliseconds to connect to the peer.'),
      avg('first_byte_time', l.firstByteTime, 'Average milliseconds to the first byte of the response.'),
      avg('last_byte_time', l.lastByteTime, 'Average milliseconds to the whole response.'),
    );
  health.push(
    group(
      'probes',
      [l.probeCount, l.probeFails, time('last', 'Time of the last health probe.', (s) => s.block.max(l.probeLast))],
      (s) => !!s.upstream.probes,
    ),
  );

  const fields: Array<Field<PeerSource>> = [
    { ...leaf<PeerSource>('server', 'The server parameter as configured.', (s) => s.peer.server), encoded: (s) => s.serverJson },
    leaf('service', 'Service name of the server directive.', (s) => s.peer.service),
    leaf('slow_start', 'Configured slow start, in seconds.', (s) => s.peer.slowStart ?? 0),
    leaf('backup', 'Whether the peer is a backup server.', (s) => !!s.peer.backup, 'gauge'),
    leaf('weight', 'Configured weight.', (s) => s.peer.weight ?? 1, 'gauge'),
    {
      ...leaf<PeerSource>('state', 'State: 1 up, 2 down, 3 unavailable, 4 recovering, 5 unhealthy, 6 checking.', state, 'gauge'),
      numeric: (v: Scalar) => STATE_NUMBERS[String(v)] ?? 0,
    },
    group('selected', [l.current, l.total, time('last', 'When the peer was last selected.', (s) => s.block.max(l.last))]),
    leaf('max_conns', 'Configured maximum simultaneous connections.', (s) => s.peer.maxConns || undefined, 'gauge'),
  ];
  if (protocol === 'http')
    fields.push(
      entries('responses', 'code', 'counter', 'Responses from the peer by status code.', (s, _ctx, emit) => responseEntries(s.sums, l.responses, s.claims!, emit)),
    );
  fields.push(group('data', [l.received, l.sent]), group('health', health));
  if (protocol === 'http') fields.push(leaf('sid', 'Configured id of the server in its upstream.', (s) => s.peer.sid));
  fields.push({
    kind: 'histograms',
    name: 'histograms',
    list: (s) => (s.histograms.length ? s.histograms : undefined),
  });
  return { fields: group('', fields), size: layout.size, l };
}

const http = peerFields('http');
const stream = peerFields('stream');
export const httpPeerFields = http.fields;
export const streamPeerFields = stream.fields;

// The upstream's own counters: keepalive and queue.
interface UpstreamSource extends Counted {
  readonly upstream: UpstreamConfig;
}
const upstreamLayout = new Layout<UpstreamSource>();
const keepalive = upstreamLayout.gauge('keepalive', 'Cached keep-alive connections to the upstream.');
const queue = {
  queued: upstreamLayout.counter('queued', 'Requests that entered the queue.'),
  waiting: upstreamLayout.gauge('waiting', 'Requests in the queue now.'),
  dropped: upstreamLayout.counter('dropped', 'Requests removed because the client closed the connection.'),
  timedout: upstreamLayout.counter('timedout', 'Requests removed because of the queue timeout.'),
  overflows: upstreamLayout.counter('overflows', 'Times the queue overflowed.'),
};
const queueFields = group<UpstreamSource>('queue', Object.values(queue), (s) => !!s.upstream.queue);

const UPSTREAM_KEY = 'upstream';
const upstreamBlock = (status: StatusStore, u: UpstreamConfig): GaugeBlock => status.gauges(zoneOf(u), upstreamKey(u, UPSTREAM_KEY), upstreamLayout.size);

function upstreams(status: StatusStore, protocol: Protocol): UpstreamConfig[] {
  const c = status.catalog();
  return (protocol === 'http' ? c.http?.upstreams : c.stream?.upstreams) ?? [];
}

/** The averages least_time may balance on: /status's names for them. */
export type TimeAverage = 'header_time' | 'response_time' | 'connect_time' | 'first_byte_time' | 'last_byte_time';

/** Start times of incomplete requests are kept from here, so that their sum over tens of
 * thousands of requests stays an exact float64 integer. */
const INFLIGHT_EPOCH = Date.UTC(2025, 0, 1);

/** What a worker calls as it uses a peer. */
export class Peer {
  constructor(
    private readonly block: GaugeBlock,
    private readonly cells: AtomicCells,
    private readonly claims: AtomicCells | undefined,
    private readonly l: typeof http.l,
    private readonly factor: number,
    histograms: PeerHistograms = [],
  ) {
    const of = (q: string) => histograms.find(([name]) => name === q)?.[1];
    this.responseTime = of('response_time');
    this.connectTime = of('connect_time');
    this.sessionTime = of('session_time');
  }

  private readonly responseTime: Histogram | undefined;
  private readonly connectTime: Histogram | undefined;
  private readonly sessionTime: Histogram | undefined;

  /** The balancer chose this peer for a request (HTTP) or a connection (stream). */
  selected(now = Date.now()): void {
    this.block.add(this.l.total.index);
    this.block.add(this.l.current.index);
    this.block.set(this.l.last, now);
  }

  /** The request or connection to the peer ended, however it ended. */
  released(): void {
    this.block.sub(this.l.current.index);
  }

  /** HTTP: the peer's response, its bytes, and how long headers and body took (ms). */
  responded(status: number, received: number, sent: number, headerMs: number, responseMs: number): void {
    const b = this.block;
    if (this.claims) b.add(this.l.responses + responseIndex(status, this.claims));
    b.add(this.l.received.index, received);
    b.add(this.l.sent.index, sent);
    this.sample(this.l.headerTime, headerMs);
    this.sample(this.l.responseTime, responseMs);
    this.responseTime?.observe(responseMs);
  }

  /** Stream: the session's bytes and timings (ms). `firstByteMs` undefined: the peer
   * sent nothing, and its first byte time is left as it was (nginx's `-`). */
  sessionEnded(received: number, sent: number, connectMs: number, firstByteMs: number | undefined, lastByteMs: number): void {
    this.block.add(this.l.received.index, received);
    this.block.add(this.l.sent.index, sent);
    this.sample(this.l.connectTime, connectMs);
    if (firstByteMs !== undefined) this.sample(this.l.firstByteTime, firstByteMs);
    this.sample(this.l.lastByteTime, lastByteMs);
    this.connectTime?.observe(connectMs);
    this.sessionTime?.observe(lastByteMs);
  }

  /** An attempt to talk to the peer failed. */
  failed(): void {
    this.block.add(this.l.fails.index);
  }

  /** The peer reached max_fails, from up or recovering (slow start). Only the worker
   * that makes the change counts it. A failed check of a peer already unavailable is
   * not a new outage and does not come here (balancer.ts, "Passive health"). */
  becameUnavailable(now = Date.now()): boolean {
    let from = this.cells.compareExchange(PeerCell.state, PeerState.up, PeerState.unavailable);
    if (from === PeerState.recovering) from = this.cells.compareExchange(PeerCell.state, PeerState.recovering, PeerState.unavailable);
    if (from !== PeerState.up && from !== PeerState.recovering) return false;
    this.block.add(this.l.unavailable.index);
    this.block.set(this.l.downstart, now);
    return true;
  }

  /** The peer is selectable again after being unavailable: up, or `recovering` while its
   * weight comes back over slow_start (then recovered() makes it up). */
  becameAvailable(now = Date.now(), recovering = false): boolean {
    const to = recovering ? PeerState.recovering : PeerState.up;
    if (this.cells.compareExchange(PeerCell.state, PeerState.unavailable, to) !== PeerState.unavailable) return false;
    this.block.add(this.l.downtime, Math.max(0, Math.round(now - this.block.max(this.l.downstart))));
    return true;
  }

  /** Slow start is over: recovering becomes up. True for the one worker that changed it. */
  recovered(): boolean {
    return this.cells.compareExchange(PeerCell.state, PeerState.recovering, PeerState.up) === PeerState.recovering;
  }

  /** A probe-driven state: unhealthy, checking, recovering or up. */
  setState(state: (typeof PeerState)[keyof typeof PeerState]): void {
    this.cells.store(0, state);
  }

  get state(): number {
    return this.cells.load(0);
  }

  /** When the peer was last selected for a request or connection (epoch ms; 0: never). */
  lastSelected(): number {
    return this.block.max(this.l.last);
  }

  probed(ok: boolean, now = Date.now()): void {
    this.block.add(this.l.probeCount.index);
    if (!ok) this.block.add(this.l.probeFails.index);
    this.block.set(this.l.probeLast, now);
  }

  /** Reads the average of `which` as /status shows it, unrounded: every worker's
   * average weighted by its samples (0 before the first sample, or for the other
   * protocol's averages). */
  timing(which: TimeAverage): () => number {
    const l = this.l;
    const avg = { header_time: l.headerTime, response_time: l.responseTime, connect_time: l.connectTime, first_byte_time: l.firstByteTime, last_byte_time: l.lastByteTime }[which];
    const block = this.block;
    return avg === NO_AVERAGE ? () => 0 : () => block.weightedMean(avg.value, avg.samples);
  }

  /** least_time inflight: a request to the peer began at `at` (epoch ms, whole). */
  inflightBegan(at: number): void {
    this.block.add(this.l.inflight);
    this.block.add(this.l.inflightStarts, at - INFLIGHT_EPOCH);
  }

  /** The request begun at `at` ended. */
  inflightEnded(at: number): void {
    this.block.sub(this.l.inflight);
    this.block.sub(this.l.inflightStarts, at - INFLIGHT_EPOCH);
  }

  /** The mean time (ms) that the peer's incomplete requests, in every worker, have taken
   * so far; 0 without any. */
  inflightTime(now: number): number {
    const n = this.block.value(this.l.inflight);
    if (n <= 0) return 0;
    return Math.max(0, now - INFLIGHT_EPOCH - this.block.value(this.l.inflightStarts) / n);
  }

  private sample(avg: Average, ms: number): void {
    const n = this.block.own(avg.samples);
    this.block.set(avg.value, n === 0 ? ms : this.block.own(avg.value) * this.factor + ms * (1 - this.factor));
    this.block.add(avg.samples);
  }
}

/** What a worker calls for the upstream as a whole. */
export class Upstream {
  constructor(private readonly block: GaugeBlock) {}
  keepaliveCached(): void {
    this.block.add(keepalive.index);
  }
  keepaliveUsed(): void {
    this.block.sub(keepalive.index);
  }
  queued(): void {
    this.block.add(queue.queued.index);
    this.block.add(queue.waiting.index);
  }
  /** The request left the queue for a peer. */
  dequeued(): void {
    this.block.sub(queue.waiting.index);
  }
  queueDropped(): void {
    this.block.add(queue.dropped.index);
    this.block.sub(queue.waiting.index);
  }
  queueTimedOut(): void {
    this.block.add(queue.timedout.index);
    this.block.sub(queue.waiting.index);
  }
  queueOverflowed(): void {
    this.block.add(queue.overflows.index);
  }
}

function find(status: StatusStore, protocol: Protocol, name: string): UpstreamConfig {
  const u = upstreams(status, protocol).find((x) => x.name === name);
  if (!u) throw new Error(`no ${protocol} upstream "${name}" with a zone is configured`);
  return u;
}

interface PeerStorage {
  readonly block: GaugeBlock;
  readonly cells: AtomicCells;
  readonly claims?: AtomicCells;
  readonly histograms: PeerHistograms;
}

/** `histograms` false: the peer's spec counters only, as a new peer's set is published;
 * its histograms come next (at the first render, which the creator runs at once), so that
 * in a zone short of room the peers' counters come first and only histograms go without. */
function peerStorage(status: StatusStore, protocol: Protocol, u: UpstreamConfig, id: number, histograms = true): PeerStorage {
  const spec = protocol === 'http' ? http : stream;
  const zone = zoneOf(u);
  return {
    block: status.gauges(zone, peerKey(u, id), spec.size),
    cells: status.cells(zone, `${peerKey(u, id)}/state`, PEER_CELLS),
    claims: protocol === 'http' ? status.cells(zone, `${peerKey(u, id)}/codes`, CLAIMED) : undefined,
    histograms: (histograms ? QUANTITIES[protocol] : []).flatMap((q) => {
      const h = histogramIn(status, zone, peerKey(u, id), q, u.histogram);
      return h ? [[q, h] as const] : [];
    }),
  };
}

/** The protocol of a catalog entry: by identity, else by name (an entry of an older
 * catalog), HTTP first. */
function protocolOf(status: StatusStore, u: UpstreamConfig): Protocol {
  const c = status.catalog();
  if (c.http?.upstreams?.includes(u)) return 'http';
  if (c.stream?.upstreams?.includes(u)) return 'stream';
  return c.http?.upstreams?.some((x) => x.name === u.name) ? 'http' : 'stream';
}

/** What a balancer keeps per peer: its recorder and its shared cells (PeerCell). */
export interface PeerHandles {
  readonly metrics: Peer;
  readonly cells: AtomicCells;
}

/** A peer's recorder and shared cells by id (a balancer's view of a live-set entry). */
export function peerHandles(status: StatusStore, u: UpstreamConfig, id: number, protocol: Protocol = protocolOf(status, u)): PeerHandles {
  const { block, cells, claims, histograms } = peerStorage(status, protocol, u, id);
  const spec = protocol === 'http' ? http : stream;
  return { metrics: new Peer(block, cells, claims, spec.l, (u.responseTimeFactor ?? 90) / 100, histograms), cells };
}

/**
 * After the worker in `slot` died (SIGKILL, a crash) with requests in flight: takes what
 * it had in flight off each live peer's shared `conns` cell and its shard of
 * `selected.current`, so that max_conns and least_conn do not count them forever. The
 * primary calls it, before another worker takes the slot.
 */
export function repairSlot(status: StatusStore, slot: number): void {
  const c = status.catalog();
  for (const protocol of ['http', 'stream'] as const) {
    const spec = protocol === 'http' ? http : stream;
    const current = spec.l.current.index;
    for (const u of (protocol === 'http' ? c.http?.upstreams : c.stream?.upstreams) ?? []) {
      const set = peerSet(status, u);
      // Removed peers too: their memory waits for their connections to end.
      for (const p of [...set.peers, ...set.retired]) {
        const { block, cells } = peerStorage(status, protocol, u, p.id);
        // Its least_time inflight requests ended with it.
        for (const i of [spec.l.inflight, spec.l.inflightStarts]) if (block.shardValue(slot, i) !== 0) block.setShard(slot, i, 0);
        const inFlight = block.shardValue(slot, current);
        if (inFlight === 0) continue;
        if (inFlight > 0) cells.sub(PeerCell.conns, inFlight);
        block.setShard(slot, current, 0);
      }
    }
  }
  // The upstreams' own gauges: idle cached connections went with the worker, and its
  // waiting requests leave the queue's shared count.
  for (const u of c.http?.upstreams ?? []) {
    const block = upstreamBlock(status, u);
    const waiting = block.shardValue(slot, queue.waiting.index);
    if (u.queue && waiting > 0) queueCells(status, u).sub(0, waiting);
    for (const g of upstreamLayout.gauges) block.setShard(slot, g, 0);
  }
}

/** Cell 0: requests waiting in the upstream's queue in all workers, held to its size. */
export function queueCells(status: StatusStore, u: UpstreamConfig): AtomicCells {
  return status.cells(zoneOf(u), upstreamKey(u, 'queue'), 1);
}

/** What a peer set's writer needs: making a new peer's memory, freeing a removed one's. */
function peerMemory(status: StatusStore, protocol: Protocol) {
  return {
    allocate: (u: UpstreamConfig, id: number) => {
      const storage = peerStorage(status, protocol, u, id, false);
      // Before it is published: no balancer sees the peer before it is `checking`.
      if (u.essential) storage.cells.store(PeerCell.state, PeerState.checking);
    },
    free: (u: UpstreamConfig, id: number) => {
      const bounds = boundsOf(u.histogram);
      const histograms = bounds ? QUANTITIES[protocol].map((q) => histogramKey(peerKey(u, id), q, bounds)) : [];
      for (const key of [peerKey(u, id), `${peerKey(u, id)}/state`, `${peerKey(u, id)}/codes`, ...histograms]) status.drop(zoneOf(u), key);
    },
    busy: (u: UpstreamConfig, id: number) => peerStorage(status, protocol, u, id).cells.load(PeerCell.conns) > 0,
  };
}

/** Publishes every upstream's first peer set (at start) or its configured one (reload). */
export function publishUpstreams(status: StatusStore): void {
  const c = status.catalog();
  for (const protocol of ['http', 'stream'] as const)
    for (const u of (protocol === 'http' ? c.http?.upstreams : c.stream?.upstreams) ?? []) {
      const memory = peerMemory(status, protocol);
      publishPeers(status, u, memory.allocate, memory.free);
    }
}

/** Changes an upstream's live peer set (see peers.ts): what /config calls. */
export function changePeers<E>(
  status: StatusStore,
  u: UpstreamConfig,
  change: Parameters<typeof updatePeers<E>>[2],
  name?: string,
  /** The store's revision of the new peers (config_store). */
  revision?: number,
): UpdateResult<E> {
  return updatePeers(status, u, change, peerMemory(status, protocolOf(status, u)), name, revision);
}

// What touching the peers' memory read: kept, so that the reads are not dropped as unused.
const touched = { seen: 0 };

// Peers written one after another in a render share one source object and one array
// for their sums.
const reused = {} as { -readonly [K in keyof PeerSource]: PeerSource[K] };
let peerScratch = new Float64Array(0);
function scratchFor(length: number): Float64Array {
  if (peerScratch.length < length) peerScratch = new Float64Array(length);
  return peerScratch;
}

// One array of sums per peer of the upstream being written, reused from one upstream to
// the next.
let peerSums: Float64Array[] = [];
let peerStates = new Int32Array(0);
function sumsFor(peers: number, length: number): Float64Array[] {
  if (peerSums.length < peers || (peerSums[0]?.length ?? 0) < length)
    peerSums = Array.from({ length: Math.max(peers, peerSums.length) }, () => new Float64Array(Math.max(length, peerSums[0]?.length ?? 0)));
  if (peerStates.length < peers) peerStates = new Int32Array(peers);
  return peerSums;
}

// A render reaches every peer's storage: keep it with the upstream's catalog entry, which
// stays the same object until the catalog changes, in the order of its peers.
interface UpstreamStorage {
  readonly peers: PeerStorage[];
  readonly block: GaugeBlock;
  /** Each peer's `server` encoded as JSON once. */
  readonly servers: Uint8Array[];
}
const storageOf = new WeakMap<PeerSet, UpstreamStorage>();
function cachedStorage(status: StatusStore, protocol: Protocol, u: UpstreamConfig, set: PeerSet): UpstreamStorage {
  let s = storageOf.get(set);
  if (!s) {
    // The upstream's own block before the peers' histograms: a zone short of room goes
    // without histograms, never without a block of the spec.
    const block = upstreamBlock(status, u);
    s = {
      peers: set.peers.map((p) => peerStorage(status, protocol, u, p.id)),
      block,
      servers: set.peers.map((p) => Buffer.from(JSON.stringify(p.server))),
    };
    storageOf.set(set, s);
  }
  return s;
}

export function peer(status: StatusStore, protocol: Protocol, upstream: string, name: string): Peer {
  const u = find(status, protocol, upstream);
  const entry = peerSet(status, u).peers.find((p) => peerName(p) === name);
  if (!entry) throw new Error(`upstream "${upstream}" has no peer "${name}"`);
  const { block, cells, claims, histograms } = peerStorage(status, protocol, u, entry.id);
  return new Peer(block, cells, claims, (protocol === 'http' ? http : stream).l, (u.responseTimeFactor ?? 90) / 100, histograms);
}

export function upstream(status: StatusStore, protocol: Protocol, name: string): Upstream {
  const u = find(status, protocol, name);
  return new Upstream(upstreamBlock(status, u));
}

// An upstream's node, kept with its peer set and its catalog entry (a change of peers or
// a reload makes a new one): making the node, its peers' collection and their closures
// for each of ten thousand upstreams was a good part of rendering them.
const nodeOfSet = new WeakMap<PeerSet, { readonly u: UpstreamConfig; readonly node: StatusNode }>();

function upstreamNode(status: StatusStore, protocol: Protocol, u: UpstreamConfig): StatusNode {
  // One set for the whole node: an update published while it is written shows next time.
  const set = peerSet(status, u);
  let kept = nodeOfSet.get(set);
  if (kept?.u !== u) nodeOfSet.set(set, (kept = { u, node: makeUpstreamNode(status, protocol, u, set) }));
  return kept.node;
}

function makeUpstreamNode(status: StatusStore, protocol: Protocol, u: UpstreamConfig, set: PeerSet): StatusNode {
  const spec = protocol === 'http' ? http : stream;
  const storage = cachedStorage(status, protocol, u, set);
  const peers = collection(
    'peer',
    () => set.peers,
    (p: PeerEntry) => peerName(p),
    (p: PeerEntry, transient: boolean): StatusNode => {
      const s = storage.peers[set.peers.indexOf(p)];
      const sums = s.block.values(transient ? scratchFor(spec.size) : undefined);
      return new FieldNode(spec.fields, { sums, peer: p, upstream: u, block: s.block, cells: s.cells, claims: s.claims, state: s.cells.load(0), histograms: s.histograms });
    },
    {
      fields: spec.fields,
      // All the peers' sums first, in one pass over their memory: interleaved with
      // writing the JSON, these reads wait on memory one peer at a time.
      prepare: () => {
        const all = sumsFor(set.peers.length, spec.size);
        // Every peer's memory asked for at once, then read (CounterBlock.touch).
        let seen = 0;
        for (let i = 0; i < storage.peers.length; i++) seen |= storage.peers[i].block.touch() | storage.peers[i].cells.touch(0);
        touched.seen = seen;
        for (let i = 0; i < storage.peers.length; i++) {
          all[i] = storage.peers[i].block.values(all[i]);
          peerStates[i] = storage.peers[i].cells.load(0);
        }
      },
      fill: (p: PeerEntry, index: number): PeerSource => {
        const s = storage.peers[index];
        const source = reused;
        source.sums = peerSums[index];
        source.peer = p;
        source.upstream = u;
        source.block = s.block;
        source.cells = s.cells;
        source.claims = s.claims;
        source.state = peerStates[index];
        source.serverJson = storage.servers[index];
        source.histograms = s.histograms;
        return source;
      },
    },
  );
  // The upstream's own figures are read each time its members are listed: once per
  // answer that reaches it (sums() fills the block's own array, the source's each time).
  const source: { -readonly [K in keyof UpstreamSource]: UpstreamSource[K] } = { sums: storage.block.sums(), upstream: u };
  const members: Array<[string, StatusNode]> = [['peers', peers]];
  if (protocol === 'http') members.push(['keepalive', new FieldNode(keepalive, source)]);
  if (u.queue && protocol === 'http') members.push(['queue', new FieldNode(queueFields, source)]);
  // Not flat: an upstream holds instances (its peers), whose names the flat text would
  // put inside metric names; its text has the whole tree's names and labels.
  return new ObjectNode(() => {
    source.sums = storage.block.sums();
    return members;
  });
}

export function upstreamsNode(protocol: Protocol) {
  return (status: StatusStore): StatusNode =>
    collection(
      'upstream',
      () => upstreams(status, protocol),
      (u: UpstreamConfig) => u.name,
      (u: UpstreamConfig) => upstreamNode(status, protocol, u),
    );
}
