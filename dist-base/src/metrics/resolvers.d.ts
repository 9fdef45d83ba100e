import type { GaugeBlock } from '../engine/index.js';
import { type Counted, type Group } from './shape.js';
import { type Status } from './status.js';
import { type StatusNode } from './tree.js';
declare const queries: {
    name: import("./shape.js").Leaf<Counted> & {
        readonly index: number;
    };
    srv: import("./shape.js").Leaf<Counted> & {
        readonly index: number;
    };
    addr: import("./shape.js").Leaf<Counted> & {
        readonly index: number;
    };
};
export declare const resolverFields: Group<Counted>;
/** What a query resolves: `name` (A and AAAA), `srv` (SRV), `addr` (PTR). */
export type ResolverQuery = keyof typeof queries;
/** What a worker calls as its resolver's lookups happen. */
export declare class Resolver {
    private readonly block;
    constructor(block: GaugeBlock);
    /** A lookup was started. */
    query(type: ResolverQuery): void;
    /** A lookup ended with a response carrying DNS response code `rcode` (RFC 1035,
     * 4.1.1): 0 success, 1 format_error, 2 server_failure, 3 not_found,
     * 4 unimplemented, 5 refused, any other code other. */
    response(rcode: number): void;
    /** A lookup ended without a response in time. */
    timedOut(): void;
}
export declare function resolver(status: Status, name: string): Resolver;
export declare function resolversNode(status: Status): StatusNode;
export declare const resolvers: {
    fields: Group<Counted>;
    recorder: typeof resolver;
    node: typeof resolversNode;
};
export {};
