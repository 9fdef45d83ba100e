import { group, Layout } from './shape.js';
import { STATUS_ZONE } from './status.js';
import { FieldNode } from './tree.js';
const layout = new Layout();
const fields = {
    accepted: layout.counter('accepted', 'Accepted client connections.'),
    dropped: layout.counter('dropped', 'Client connections closed without being handled.'),
    active: layout.gauge('active', 'Open client connections that are not idle.'),
    idle: layout.gauge('idle', 'Client connections waiting for a keep-alive request.'),
};
export const connectionFields = group('', Object.values(fields));
const KEY = 'connections';
/** What a worker calls as its client connections come and go. */
export class Connections {
    constructor(block) {
        this.block = block;
    }
    accepted() {
        this.block.add(fields.accepted.index);
        this.block.add(fields.active.index);
    }
    /** Closed by the server before a request was handled (a limit, a shutdown). */
    dropped() {
        this.block.add(fields.dropped.index);
        this.block.sub(fields.active.index);
    }
    /** A keep-alive connection starts waiting for its next request. */
    idle() {
        this.block.sub(fields.active.index);
        this.block.add(fields.idle.index);
    }
    /** An idle connection receives a request. */
    busy() {
        this.block.sub(fields.idle.index);
        this.block.add(fields.active.index);
    }
    closed(wasIdle) {
        this.block.sub(wasIdle ? fields.idle.index : fields.active.index);
    }
}
export function connections(status) {
    return new Connections(status.gauges(STATUS_ZONE, KEY, layout.size));
}
export function connectionsNode(status) {
    return new FieldNode(connectionFields, { sums: status.gauges(STATUS_ZONE, KEY, layout.size).values() }, true);
}
//# sourceMappingURL=connections.js.map