import type { AtomicCells, GaugeBlock } from '../engine/index.js';
import { Layout, type Counted, type Group } from './shape.js';
import { type Status } from './status.js';
export interface HttpZoneSource extends Counted {
    readonly ssl: boolean;
    readonly claims: AtomicCells;
}
/** SSL handshake counters, shared with stream server zones. */
export declare function sslCounters<S extends Counted>(layout: Layout<S>): {
    handshaked: import("./shape.js").Leaf<S> & {
        readonly index: number;
    };
    reuses: import("./shape.js").Leaf<S> & {
        readonly index: number;
    };
    timedout: import("./shape.js").Leaf<S> & {
        readonly index: number;
    };
    failed: import("./shape.js").Leaf<S> & {
        readonly index: number;
    };
};
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
export declare class HttpZone {
    private readonly l;
    private readonly block;
    private readonly claims;
    constructor(l: HttpZoneLayout, block: GaugeBlock, claims: AtomicCells);
    requestStarted(): void;
    /** The response went out: its status, and the request's bytes in and out. */
    responseSent(status: number, bytesReceived: number, bytesSent: number): void;
    /** The request ended without a response (the client left, or the server closed). */
    requestDiscarded(bytesReceived: number, bytesSent: number): void;
    sslHandshaked(reused: boolean): void;
    sslTimedOut(): void;
    sslFailed(): void;
}
export declare const serverZones: {
    fields: Group<HttpZoneSource>;
    recorder: (status: Status, name: string) => HttpZone;
    node: (status: Status) => import("./tree.js").ObjectNode;
};
export declare const locationZones: {
    fields: Group<HttpZoneSource>;
    recorder: (status: Status, name: string) => HttpZone;
    node: (status: Status) => import("./tree.js").ObjectNode;
};
export {};
