// /status/connections. As in Angie: `active` counts open client connections that are not
// idle, `idle` those waiting for a keep-alive request, `dropped` those the server closed
// without handling them.
import type { AtomicCells, GaugeBlock } from '../engine/index.js';
import { group, Layout, type Counted } from './shape.js';
import { STATUS_ZONE, type StatusStore } from './store.js';
import { LiveNode, type StatusNode } from './tree.js';

const layout = new Layout<Counted>();
const fields = {
  accepted: layout.counter('accepted', 'Accepted client connections.'),
  dropped: layout.counter('dropped', 'Client connections closed without being handled.'),
  active: layout.gauge('active', 'Open client connections that are not idle.'),
  idle: layout.gauge('idle', 'Client connections waiting for a keep-alive request.'),
};
export const connectionFields = group<Counted>('', Object.values(fields));

const KEY = 'connections';

/** What a worker calls as its client connections come and go. */
export class Connections {
  constructor(
    private readonly block: GaugeBlock,
    /** One cell all the workers count connections in: their serial numbers. */
    private readonly serial: AtomicCells,
  ) {}

  /** A new client connection; returns its serial number, unique across the workers and
   * increasing as they accept (nginx's $connection, one atomic counter as nginx's
   * ngx_connection_counter; it wraps after 2^32). */
  accepted(): number {
    this.block.add(fields.accepted.index);
    this.block.add(fields.active.index);
    return (this.serial.add(0) + 1) >>> 0;
  }

  /** Closed by the server before a request was handled (a limit, a shutdown). */
  dropped(): void {
    this.block.add(fields.dropped.index);
    this.block.sub(fields.active.index);
  }

  /** A keep-alive connection starts waiting for its next request. */
  idle(): void {
    this.block.sub(fields.active.index);
    this.block.add(fields.idle.index);
  }

  /** An idle connection receives a request. */
  busy(): void {
    this.block.sub(fields.idle.index);
    this.block.add(fields.active.index);
  }

  closed(wasIdle: boolean): void {
    this.block.sub(wasIdle ? fields.idle.index : fields.active.index);
  }
}

export function connections(status: StatusStore): Connections {
  return new Connections(status.gauges(STATUS_ZONE, KEY, layout.size, layout.gauges), status.cells(STATUS_ZONE, `${KEY}/serial`, 1));
}

export function connectionsNode(status: StatusStore): StatusNode {
  return new LiveNode(connectionFields, () => ({ sums: status.gauges(STATUS_ZONE, KEY, layout.size).sums() }), true);
}
