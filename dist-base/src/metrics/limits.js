import { group, Layout } from './shape.js';
import { zoneCollection } from './tree.js';
/** Longest key a connection limit counts by (bytes): an empty or longer key is `skipped`. */
export const LIMIT_CONN_KEY_MAX = 255;
/** Longest key a request limit counts by (bytes): an empty or longer key is `skipped`. */
export const LIMIT_REQ_KEY_MAX = 65535;
/** Whether a limit lets `key` pass uncounted as `skipped`: it is empty, or longer than
 * `max` bytes (UTF-8 for a string). */
export function limitKeySkipped(key, max) {
    if (key.length === 0 || key.length > max)
        return true;
    if (typeof key !== 'string')
        return false;
    // A UTF-16 code unit takes at most 3 bytes in UTF-8: count only when it can matter.
    return key.length * 3 > max && Buffer.byteLength(key) > max;
}
const conn = new Layout();
const connFields = {
    passed: conn.counter('passed', 'Connections passed.'),
    skipped: conn.counter('skipped', 'Connections passed because the key was empty or longer than 255 bytes.'),
    rejected: conn.counter('rejected', 'Connections rejected for being over the configured limit.'),
    exhausted: conn.counter('exhausted', 'Connections rejected because the zone storage ran out.'),
};
export const limitConnFields = group('', Object.values(connFields));
const req = new Layout();
const reqFields = {
    passed: req.counter('passed', 'Requests passed.'),
    skipped: req.counter('skipped', 'Requests passed because the key was empty or longer than 65535 bytes.'),
    delayed: req.counter('delayed', 'Requests delayed.'),
    rejected: req.counter('rejected', 'Requests rejected.'),
    exhausted: req.counter('exhausted', 'Requests rejected because the zone storage ran out.'),
};
export const limitReqFields = group('', Object.values(reqFields));
/** What a worker calls as a connection limit decides: each connection (or request, for
 * an HTTP limit_conn) counts under one of these. */
export class LimitConn {
    constructor(block, l = connFields) {
        this.block = block;
        this.l = l;
    }
    passed() {
        this.block.add(this.l.passed.index);
    }
    /** Passed without being counted: the key was empty or too long (limitKeySkipped). */
    skipped() {
        this.block.add(this.l.skipped.index);
    }
    /** Over the configured limit. */
    rejected() {
        this.block.add(this.l.rejected.index);
    }
    /** Rejected because the zone had no room for the key. */
    exhausted() {
        this.block.add(this.l.exhausted.index);
    }
}
/** What a worker calls as a request limit decides: each request counts under one of
 * these (a delayed request is `delayed`, not also `passed`). */
export class LimitReq extends LimitConn {
    constructor(block) {
        super(block, reqFields);
    }
    /** Over the rate, within the burst: held back, then passed. */
    delayed() {
        this.block.add(reqFields.delayed.index);
    }
}
function configured(kind, c) {
    if (kind === 'http/limit_conns')
        return c.http?.limitConns ?? [];
    if (kind === 'stream/limit_conns')
        return c.stream?.limitConns ?? [];
    return c.http?.limitReqs ?? [];
}
function limitZones(kind, layout, fields, make) {
    // The limit's zone is named after it; the key says which kind of limit it is.
    const block = (status, name) => status.gauges(name, kind, layout.size);
    return {
        fields,
        recorder: (status, name) => make(block(status, name)),
        node: (status) => zoneCollection(() => configured(kind, status.catalog()), fields, (z) => ({ sums: block(status, z.name).values() })),
    };
}
export const httpLimitConns = limitZones('http/limit_conns', conn, limitConnFields, (b) => new LimitConn(b));
export const streamLimitConns = limitZones('stream/limit_conns', conn, limitConnFields, (b) => new LimitConn(b));
export const httpLimitReqs = limitZones('http/limit_reqs', req, limitReqFields, (b) => new LimitReq(b));
//# sourceMappingURL=limits.js.map