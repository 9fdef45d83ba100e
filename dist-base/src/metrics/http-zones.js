import { CLAIMED, RESPONSE_COUNTERS, responseEntries, responseIndex } from './responses.js';
import { entries, group, Layout } from './shape.js';
import { STATUS_ZONE } from './status.js';
import { zoneCollection } from './tree.js';
/** SSL handshake counters, shared with stream server zones. */
export function sslCounters(layout) {
    return {
        handshaked: layout.counter('handshaked', 'Successful SSL handshakes.'),
        reuses: layout.counter('reuses', 'Session reuses during SSL handshakes.'),
        timedout: layout.counter('timedout', 'Timed-out SSL handshakes.'),
        failed: layout.counter('failed', 'Failed SSL handshakes.'),
    };
}
function httpZone(kind) {
    const server = kind === 'server_zones';
    const layout = new Layout();
    const ssl = server ? sslCounters(layout) : undefined;
    const total = layout.counter('total', 'Client requests received.');
    const processing = server ? layout.gauge('processing', 'Client requests being processed now.') : undefined;
    const discarded = layout.counter('discarded', 'Requests completed without sending a response.');
    const responses = layout.reserve(RESPONSE_COUNTERS);
    const received = layout.counter('received', 'Bytes received from clients.');
    const sent = layout.counter('sent', 'Bytes sent to clients.');
    const fields = [];
    if (ssl)
        fields.push(group('ssl', Object.values(ssl), (s) => s.ssl));
    fields.push(group('requests', processing ? [total, processing, discarded] : [total, discarded]), entries('responses', 'code', 'counter', 'Responses by status code.', (s) => responseEntries(s.sums, responses, s.claims)), group('data', [received, sent]));
    const declared = group('', fields);
    const key = (name) => `http/${kind}/${name}`;
    const block = (status, name) => status.gauges(STATUS_ZONE, key(name), layout.size);
    const claims = (status, name) => status.cells(STATUS_ZONE, `${key(name)}/codes`, CLAIMED);
    return {
        fields: declared,
        recorder: (status, name) => new HttpZone({ ssl, total, processing, discarded, responses, received, sent }, block(status, name), claims(status, name)),
        node: (status) => zoneCollection(() => (server ? (status.catalog().http?.serverZones ?? []) : (status.catalog().http?.locationZones ?? []).map((name) => ({ name }))), declared, (z) => ({ sums: block(status, z.name).values(), ssl: !!z.ssl, claims: claims(status, z.name) })),
    };
}
/** What a worker calls as the zone's requests happen. */
export class HttpZone {
    constructor(l, block, claims) {
        this.l = l;
        this.block = block;
        this.claims = claims;
    }
    requestStarted() {
        this.block.add(this.l.total.index);
        if (this.l.processing)
            this.block.add(this.l.processing.index);
    }
    /** The response went out: its status, and the request's bytes in and out. */
    responseSent(status, bytesReceived, bytesSent) {
        const { block: b, l } = this;
        b.add(l.responses + responseIndex(status, this.claims));
        b.add(l.received.index, bytesReceived);
        b.add(l.sent.index, bytesSent);
        if (l.processing)
            b.sub(l.processing.index);
    }
    /** The request ended without a response (the client left, or the server closed). */
    requestDiscarded(bytesReceived, bytesSent) {
        const { block: b, l } = this;
        b.add(l.discarded.index);
        b.add(l.received.index, bytesReceived);
        b.add(l.sent.index, bytesSent);
        if (l.processing)
            b.sub(l.processing.index);
    }
    sslHandshaked(reused) {
        const ssl = this.l.ssl;
        if (!ssl)
            return;
        this.block.add(ssl.handshaked.index);
        if (reused)
            this.block.add(ssl.reuses.index);
    }
    sslTimedOut() {
        if (this.l.ssl)
            this.block.add(this.l.ssl.timedout.index);
    }
    sslFailed() {
        if (this.l.ssl)
            this.block.add(this.l.ssl.failed.index);
    }
}
export const serverZones = httpZone('server_zones');
export const locationZones = httpZone('location_zones');
//# sourceMappingURL=http-zones.js.map