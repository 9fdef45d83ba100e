// HTTP server zones (/status/http/server_zones/<zone>) and location zones
// (/status/http/location_zones/<zone>): one for each `status_zone <zone>` in a server or
// a location. A server zone's `ssl` object appears only when its server listens with
// SSL; a location zone never has `ssl` nor `requests.processing`.
import type { AtomicCells, GaugeBlock, Histogram } from '../engine/index.js';
import type { HistogramSetting, ServerZoneConfig, ZoneGroupConfig } from './catalog.js';
import { histogramIn } from './histograms.js';
import { CLAIMED, RESPONSE_COUNTERS, responseEntries, responseIndex } from './responses.js';
import { entries, group, Layout, type Counted, type Field, type Group } from './shape.js';
import { STATUS_ZONE, type StatusStore } from './store.js';
import { zoneCollection } from './tree.js';
import { ListedZones, ZoneGroup, zoneKeyName } from './zone-groups.js';

// A zone's one-histogram list, made once per histogram.
const lists = new WeakMap<Histogram, ReadonlyArray<readonly [string, Histogram]>>();
function listOf(h: Histogram): ReadonlyArray<readonly [string, Histogram]> {
  let list = lists.get(h);
  if (!list) lists.set(h, (list = [['response_time', h]]));
  return list;
}

export interface HttpZoneSource extends Counted {
  readonly ssl: boolean;
  readonly claims: AtomicCells;
  readonly responseTime?: Histogram;
}

/** SSL handshake counters, shared with stream server zones. */
export function sslCounters<S extends Counted>(layout: Layout<S>) {
  return {
    handshaked: layout.counter('handshaked', 'Successful SSL handshakes.'),
    reuses: layout.counter('reuses', 'Session reuses during SSL handshakes.'),
    timedout: layout.counter('timedout', 'Timed-out SSL handshakes.'),
    failed: layout.counter('failed', 'Failed SSL handshakes.'),
  };
}

function httpZone(kind: 'server_zones' | 'location_zones') {
  const server = kind === 'server_zones';
  const layout = new Layout<HttpZoneSource>();
  const ssl = server ? sslCounters(layout) : undefined;
  const total = layout.counter('total', 'Client requests received.');
  const processing = server ? layout.gauge('processing', 'Client requests being processed now.') : undefined;
  const discarded = layout.counter('discarded', 'Requests completed without sending a response.');
  const responses = layout.reserve(RESPONSE_COUNTERS);
  const received = layout.counter('received', 'Bytes received from clients.');
  const sent = layout.counter('sent', 'Bytes sent to clients.');

  const fields: Array<Field<HttpZoneSource>> = [];
  if (ssl) fields.push(group('ssl', Object.values(ssl), (s) => s.ssl));
  fields.push(
    group('requests', processing ? [total, processing, discarded] : [total, discarded]),
    entries('responses', 'code', 'counter', 'Responses by status code.', (s, _ctx, emit) => responseEntries(s.sums, responses, s.claims, emit)),
    group('data', [received, sent]),
    { kind: 'histograms', name: 'histograms', list: (s) => (s.responseTime ? listOf(s.responseTime) : undefined) },
  );
  const declared: Group<HttpZoneSource> = group('', fields);
  // A zone's keys are made once: a render looks both up for every zone it shows.
  const keys = new Map<string, { block: string; claims: string }>();
  const key = (name: string) => {
    let k = keys.get(name);
    if (!k) {
      const base = `http/${kind}/${zoneKeyName(name)}`;
      keys.set(name, (k = { block: base, claims: `${base}/codes` }));
    }
    return k;
  };
  const block = (status: StatusStore, name: string, own?: readonly number[]) => status.gauges(STATUS_ZONE, key(name).block, layout.size, own);
  const claims = (status: StatusStore, name: string) => status.cells(STATUS_ZONE, key(name).claims, CLAIMED);
  const responseTime = (status: StatusStore, name: string, setting: HistogramSetting | undefined) =>
    histogramIn(status, STATUS_ZONE, key(name).block, 'response_time', setting);
  const settingOf = (status: StatusStore, name: string): HistogramSetting | undefined => {
    const http = status.catalog().http;
    return server ? http?.serverZones?.find((z) => z.name === name)?.histogram : http?.locationHistograms?.[name];
  };
  // Location zones are names in the catalog: one list of objects per catalog list, so that
  // their keys are encoded once (tree.ts memberKeys), each with its histogram's bounds.
  const named = new WeakMap<readonly string[], ServerZoneConfig[]>();
  const asZones = (status: StatusStore, names: readonly string[]) => {
    let zones = named.get(names);
    if (!zones) {
      const histograms = status.catalog().http?.locationHistograms;
      named.set(names, (zones = names.map((name) => (histograms?.[name] !== undefined ? { name, histogram: histograms[name] } : { name }))));
    }
    return zones;
  };
  const recorderOf = (status: StatusStore, name: string, setting: HistogramSetting | undefined) =>
    new HttpZone(
      { ssl, total, processing, discarded, responses, received, sent },
      block(status, name, layout.gauges),
      claims(status, name),
      responseTime(status, name, setting),
    );
  // A group's recording side, one per process and group.
  const groups = new WeakMap<StatusStore, Map<string, ZoneGroup<HttpZone>>>();

  return {
    fields: declared,
    /** The recorder of the configured zone `name`. */
    recorder: (status: StatusStore, name: string) => recorderOf(status, name, settingOf(status, name)),
    /** The zones of the group `name` (the catalog's serverZoneGroups or
     * locationZoneGroups): `group.recorder(key)` is the recorder of the zone `key` names,
     * made at its first use by any worker, or of the group's own zone once the group has
     * made its count of zones. The same object for every call in a process. */
    group: (status: StatusStore, name: string): ZoneGroup<HttpZone> => {
      let inStatus = groups.get(status);
      if (!inStatus) groups.set(status, (inStatus = new Map()));
      let g = inStatus.get(name);
      if (!g)
        inStatus.set(
          name,
          (g = new ZoneGroup(status, kind, name, (zone, group) => recorderOf(status, zone, group ? group.histogram : settingOf(status, zone)))),
        );
      return g;
    },
    node: (status: StatusStore) => {
      // A zone's memory, found once per catalog entry (the node is made once per catalog):
      // finding its block, claims and histogram by name for every answer cost more than
      // writing the zone.
      const memory = new WeakMap<ServerZoneConfig, Omit<HttpZoneSource, 'sums'> & { readonly block: GaugeBlock }>();
      const memoryOf = (z: ServerZoneConfig) => {
        let m = memory.get(z);
        if (!m)
          memory.set(
            z,
            (m = {
              block: block(status, z.name),
              ssl: !!z.ssl,
              claims: claims(status, z.name),
              responseTime: responseTime(status, z.name, z.histogram),
            }),
          );
        return m;
      };
      // The zones groups made, after their group's own zone.
      const listed = new ListedZones<ServerZoneConfig>(status, kind, (group: ZoneGroupConfig, name: string) => ({
        name,
        ...(server && group.ssl ? { ssl: true } : {}),
        ...(group.histogram !== undefined ? { histogram: group.histogram } : {}),
      }));
      return zoneCollection(
        () => listed.of(server ? (status.catalog().http?.serverZones ?? []) : asZones(status, status.catalog().http?.locationZones ?? [])),
        declared,
        (z: ServerZoneConfig) => {
          const m = memoryOf(z);
          return { sums: m.block.sums(), ssl: m.ssl, claims: m.claims, responseTime: m.responseTime };
        },
      );
    },
  };
}

interface Index {
  readonly index: number;
}

interface HttpZoneLayout {
  readonly ssl?: Record<'handshaked' | 'reuses' | 'timedout' | 'failed', Index>;
  readonly total: Index;
  readonly processing?: Index;
  readonly discarded: Index;
  readonly responses: number;
  readonly received: Index;
  readonly sent: Index;
}

/** What a worker calls as the zone's requests happen. */
export class HttpZone {
  constructor(
    private readonly l: HttpZoneLayout,
    private readonly block: GaugeBlock,
    private readonly claims: AtomicCells,
    private readonly responseTime: Histogram | undefined,
  ) {}

  /** Whether responseSent() wants the response's time: the zone has a histogram. */
  get timed(): boolean {
    return this.responseTime !== undefined;
  }

  requestStarted(): void {
    this.block.add(this.l.total.index);
    if (this.l.processing) this.block.add(this.l.processing.index);
  }

  /** The response went out: its status, the request's bytes in and out, and how long it
   * took in milliseconds (the `response_time` histogram's observation). */
  responseSent(status: number, bytesReceived: number, bytesSent: number, ms?: number): void {
    const { block: b, l } = this;
    if (ms !== undefined) this.responseTime?.observe(ms);
    b.add(l.responses + responseIndex(status, this.claims));
    b.add(l.received.index, bytesReceived);
    b.add(l.sent.index, bytesSent);
    if (l.processing) b.sub(l.processing.index);
  }

  /** The request ended without a response (the client left, or the server closed). */
  requestDiscarded(bytesReceived: number, bytesSent: number): void {
    const { block: b, l } = this;
    b.add(l.discarded.index);
    b.add(l.received.index, bytesReceived);
    b.add(l.sent.index, bytesSent);
    if (l.processing) b.sub(l.processing.index);
  }

  sslHandshaked(reused: boolean): void {
    const ssl = this.l.ssl;
    if (!ssl) return;
    this.block.add(ssl.handshaked.index);
    if (reused) this.block.add(ssl.reuses.index);
  }

  sslTimedOut(): void {
    if (this.l.ssl) this.block.add(this.l.ssl.timedout.index);
  }

  sslFailed(): void {
    if (this.l.ssl) this.block.add(this.l.ssl.failed.index);
  }
}

export const serverZones = httpZone('server_zones');
export const locationZones = httpZone('location_zones');
