import type { GaugeBlock } from '../engine/index.js';
import { type Counted } from './shape.js';
import { type Status } from './status.js';
import { type StatusNode } from './tree.js';
export declare const connectionFields: import("./shape.js").Group<Counted>;
/** What a worker calls as its client connections come and go. */
export declare class Connections {
    private readonly block;
    constructor(block: GaugeBlock);
    accepted(): void;
    /** Closed by the server before a request was handled (a limit, a shutdown). */
    dropped(): void;
    /** A keep-alive connection starts waiting for its next request. */
    idle(): void;
    /** An idle connection receives a request. */
    busy(): void;
    closed(wasIdle: boolean): void;
}
export declare function connections(status: Status): Connections;
export declare function connectionsNode(status: Status): StatusNode;
