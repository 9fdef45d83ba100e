// Stream server zones (/status/stream/server_zones/<zone>): one for each `status_zone
// <zone>` in a stream server. A connection either becomes a session, which ends with one
// of the six stream status codes, or is discarded before a session was created. `ssl`
// appears only when the server listens with SSL, as for HTTP server zones.
import type { GaugeBlock } from '../engine/index.js';
import type { ServerZoneConfig } from './catalog.js';
import { sslCounters } from './http-zones.js';
import { group, Layout, type Counted, type Group } from './shape.js';
import { STATUS_ZONE, type StatusStore } from './store.js';
import { zoneCollection, type StatusNode } from './tree.js';

export interface StreamZoneSource extends Counted {
  readonly ssl: boolean;
}

const layout = new Layout<StreamZoneSource>();
const ssl = sslCounters(layout);
const connections = {
  total: layout.counter('total', 'Client connections.'),
  processing: layout.gauge('processing', 'Client connections being processed now.'),
  discarded: layout.counter('discarded', 'Connections completed without creating a session.'),
};
const sessions = {
  success: layout.counter('success', 'Sessions completed with code 200.'),
  invalid: layout.counter('invalid', 'Sessions completed with code 400 (client data could not be parsed).'),
  forbidden: layout.counter('forbidden', 'Sessions completed with code 403 (access forbidden).'),
  internal_error: layout.counter('internal_error', 'Sessions completed with code 500 (internal error).'),
  bad_gateway: layout.counter('bad_gateway', 'Sessions completed with code 502 (no upstream server selected or reached).'),
  service_unavailable: layout.counter('service_unavailable', 'Sessions completed with code 503 (limited by connections).'),
};
const data = {
  received: layout.counter('received', 'Bytes received from clients.'),
  sent: layout.counter('sent', 'Bytes sent to clients.'),
};

export const streamZoneFields: Group<StreamZoneSource> = group('', [
  group('ssl', Object.values(ssl), (s) => s.ssl),
  group('connections', Object.values(connections)),
  group('sessions', Object.values(sessions)),
  group('data', Object.values(data)),
]);

/** The status codes a stream session ends with. */
export type SessionStatus = 200 | 400 | 403 | 500 | 502 | 503;

const BY_STATUS: Record<SessionStatus, number> = {
  200: sessions.success.index,
  400: sessions.invalid.index,
  403: sessions.forbidden.index,
  500: sessions.internal_error.index,
  502: sessions.bad_gateway.index,
  503: sessions.service_unavailable.index,
};

const key = (name: string) => `stream/server_zones/${name}`;
const block = (status: StatusStore, name: string) => status.gauges(STATUS_ZONE, key(name), layout.size);

/** What a worker calls as the zone's connections and sessions happen. */
export class StreamZone {
  constructor(private readonly block: GaugeBlock) {}

  connectionStarted(): void {
    this.block.add(connections.total.index);
    this.block.add(connections.processing.index);
  }

  /** The session ended with `code`, and the bytes the client sent and received. A code
   * that is none of the six is not counted under `sessions` (there is no key for it);
   * its bytes are. */
  sessionEnded(code: SessionStatus, bytesReceived: number, bytesSent: number): void {
    const b = this.block;
    const i = BY_STATUS[code] as number | undefined;
    if (i !== undefined) b.add(i);
    b.add(data.received.index, bytesReceived);
    b.add(data.sent.index, bytesSent);
    b.sub(connections.processing.index);
  }

  /** The connection ended before a session was created. */
  connectionDiscarded(bytesReceived: number, bytesSent: number): void {
    const b = this.block;
    b.add(connections.discarded.index);
    b.add(data.received.index, bytesReceived);
    b.add(data.sent.index, bytesSent);
    b.sub(connections.processing.index);
  }

  /** Counted only where the zone's server listens with SSL (shown only there). */
  sslHandshaked(reused: boolean): void {
    this.block.add(ssl.handshaked.index);
    if (reused) this.block.add(ssl.reuses.index);
  }

  sslTimedOut(): void {
    this.block.add(ssl.timedout.index);
  }

  sslFailed(): void {
    this.block.add(ssl.failed.index);
  }
}

export function streamZone(status: StatusStore, name: string): StreamZone {
  return new StreamZone(block(status, name));
}

/** After the worker in `slot` died: the sessions it had open are no longer processed.
 * The primary calls it before another worker takes the slot. */
export function repairStreamZones(status: StatusStore, slot: number): void {
  for (const z of status.catalog().stream?.serverZones ?? []) {
    const b = block(status, z.name);
    for (const g of layout.gauges) b.setShard(slot, g, 0);
  }
}

export function streamZonesNode(status: StatusStore): StatusNode {
  return zoneCollection(
    () => status.catalog().stream?.serverZones ?? [],
    streamZoneFields,
    (z: ServerZoneConfig) => ({ sums: block(status, z.name).sums(), ssl: !!z.ssl }),
  );
}

export const streamServerZones = { fields: streamZoneFields, recorder: streamZone, node: streamZonesNode };
