import type { AtomicCells, GaugeBlock } from '../engine/index.js';
import { type PeerConfig, type UpstreamConfig } from './catalog.js';
import { Layout, type Counted, type Group } from './shape.js';
import type { Status } from './status.js';
import { type StatusNode } from './tree.js';
export type Protocol = 'http' | 'stream';
/** Shared peer states, in a cell all workers agree on. `down` comes from configuration. */
export declare const PeerState: {
    readonly up: 0;
    readonly unavailable: 1;
    readonly unhealthy: 2;
    readonly checking: 3;
    readonly recovering: 4;
};
interface PeerSource extends Counted {
    readonly peer: PeerConfig;
    readonly upstream: UpstreamConfig;
    readonly block: GaugeBlock;
    readonly cells: AtomicCells;
    readonly claims?: AtomicCells;
    /** The shared state cell, read once for the whole peer. */
    readonly state: number;
}
/** A moving average: its per-worker value and its per-worker sample count. */
interface Average {
    readonly value: number;
    readonly samples: number;
}
declare function peerLayout(protocol: Protocol): {
    layout: Layout<PeerSource>;
    l: {
        current: import("./shape.js").Leaf<PeerSource> & {
            readonly index: number;
        };
        total: import("./shape.js").Leaf<PeerSource> & {
            readonly index: number;
        };
        last: number;
        responses: number;
        received: import("./shape.js").Leaf<PeerSource> & {
            readonly index: number;
        };
        sent: import("./shape.js").Leaf<PeerSource> & {
            readonly index: number;
        };
        fails: import("./shape.js").Leaf<PeerSource> & {
            readonly index: number;
        };
        unavailable: import("./shape.js").Leaf<PeerSource> & {
            readonly index: number;
        };
        downtime: number;
        downstart: number;
        probeCount: import("./shape.js").Leaf<PeerSource> & {
            readonly index: number;
        };
        probeFails: import("./shape.js").Leaf<PeerSource> & {
            readonly index: number;
        };
        probeLast: number;
        headerTime: Average;
        responseTime: Average;
        connectTime: Average;
        firstByteTime: Average;
        lastByteTime: Average;
    };
};
declare const http: {
    fields: Group<PeerSource>;
    size: number;
    l: ReturnType<typeof peerLayout>["l"];
};
export declare const httpPeerFields: Group<PeerSource>;
export declare const streamPeerFields: Group<PeerSource>;
/** What a worker calls as it uses a peer. */
export declare class Peer {
    private readonly block;
    private readonly cells;
    private readonly claims;
    private readonly l;
    private readonly factor;
    constructor(block: GaugeBlock, cells: AtomicCells, claims: AtomicCells | undefined, l: typeof http.l, factor: number);
    /** The balancer chose this peer for a request (HTTP) or a connection (stream). */
    selected(now?: number): void;
    /** The request or connection to the peer ended, however it ended. */
    released(): void;
    /** HTTP: the peer's response, its bytes, and how long headers and body took (ms). */
    responded(status: number, received: number, sent: number, headerMs: number, responseMs: number): void;
    /** Stream: the session's bytes and timings (ms). */
    sessionEnded(received: number, sent: number, connectMs: number, firstByteMs: number, lastByteMs: number): void;
    /** An attempt to talk to the peer failed. */
    failed(): void;
    /** The peer reached max_fails. Only the worker that makes the change counts it. */
    becameUnavailable(now?: number): boolean;
    /** The peer is selectable again after being unavailable. */
    becameAvailable(now?: number): boolean;
    /** A probe-driven state: unhealthy, checking, recovering or up. */
    setState(state: (typeof PeerState)[keyof typeof PeerState]): void;
    get state(): number;
    probed(ok: boolean, now?: number): void;
    private sample;
}
/** What a worker calls for the upstream as a whole. */
export declare class Upstream {
    private readonly block;
    constructor(block: GaugeBlock);
    keepaliveCached(): void;
    keepaliveUsed(): void;
    queued(): void;
    /** The request left the queue for a peer. */
    dequeued(): void;
    queueDropped(): void;
    queueTimedOut(): void;
    queueOverflowed(): void;
}
export declare function peer(status: Status, protocol: Protocol, upstream: string, name: string): Peer;
export declare function upstream(status: Status, protocol: Protocol, name: string): Upstream;
export declare function upstreamsNode(protocol: Protocol): (status: Status) => StatusNode;
export {};
