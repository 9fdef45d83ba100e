import { group, Layout } from './shape.js';
import { STATUS_ZONE } from './status.js';
import { zoneCollection } from './tree.js';
const layout = new Layout();
const queries = {
    name: layout.counter('name', 'Queries resolving names to addresses (A and AAAA).'),
    srv: layout.counter('srv', 'Queries resolving services to addresses (SRV).'),
    addr: layout.counter('addr', 'Queries resolving addresses to names (PTR).'),
};
const responses = {
    success: layout.counter('success', 'Successful responses.'),
    timedout: layout.counter('timedout', 'Queries that timed out.'),
    format_error: layout.counter('format_error', 'Responses with DNS code 1 (format error).'),
    server_failure: layout.counter('server_failure', 'Responses with DNS code 2 (server failure).'),
    not_found: layout.counter('not_found', 'Responses with DNS code 3 (name error).'),
    unimplemented: layout.counter('unimplemented', 'Responses with DNS code 4 (not implemented).'),
    refused: layout.counter('refused', 'Responses with DNS code 5 (refused).'),
    other: layout.counter('other', 'Queries completed with another non-zero DNS code.'),
};
export const resolverFields = group('', [
    group('queries', Object.values(queries)),
    group('responses', Object.values(responses)),
]);
// RCODE -> counter; any other code (6 and up) counts as `other`.
const BY_RCODE = [
    responses.success.index,
    responses.format_error.index,
    responses.server_failure.index,
    responses.not_found.index,
    responses.unimplemented.index,
    responses.refused.index,
];
const key = (name) => `resolvers/${name}`;
const block = (status, name) => status.gauges(STATUS_ZONE, key(name), layout.size);
/** What a worker calls as its resolver's lookups happen. */
export class Resolver {
    constructor(block) {
        this.block = block;
    }
    /** A lookup was started. */
    query(type) {
        this.block.add(queries[type].index);
    }
    /** A lookup ended with a response carrying DNS response code `rcode` (RFC 1035,
     * 4.1.1): 0 success, 1 format_error, 2 server_failure, 3 not_found,
     * 4 unimplemented, 5 refused, any other code other. */
    response(rcode) {
        const i = Number.isInteger(rcode) && rcode >= 0 && rcode < BY_RCODE.length ? BY_RCODE[rcode] : responses.other.index;
        this.block.add(i);
    }
    /** A lookup ended without a response in time. */
    timedOut() {
        this.block.add(responses.timedout.index);
    }
}
export function resolver(status, name) {
    return new Resolver(block(status, name));
}
export function resolversNode(status) {
    return zoneCollection(() => status.catalog().resolvers ?? [], resolverFields, (name) => ({ sums: block(status, name).values() }));
}
export const resolvers = { fields: resolverFields, recorder: resolver, node: resolversNode };
//# sourceMappingURL=resolvers.js.map