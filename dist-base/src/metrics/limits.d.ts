import type { GaugeBlock } from '../engine/index.js';
import { type Counted, type Group } from './shape.js';
import type { Status } from './status.js';
import { type StatusNode } from './tree.js';
/** Longest key a connection limit counts by (bytes): an empty or longer key is `skipped`. */
export declare const LIMIT_CONN_KEY_MAX = 255;
/** Longest key a request limit counts by (bytes): an empty or longer key is `skipped`. */
export declare const LIMIT_REQ_KEY_MAX = 65535;
/** Whether a limit lets `key` pass uncounted as `skipped`: it is empty, or longer than
 * `max` bytes (UTF-8 for a string). */
export declare function limitKeySkipped(key: Buffer | string, max: number): boolean;
export declare const limitConnFields: Group<Counted>;
export declare const limitReqFields: Group<Counted>;
interface Index {
    readonly index: number;
}
type ConnLayout = Record<'passed' | 'skipped' | 'rejected' | 'exhausted', Index>;
/** What a worker calls as a connection limit decides: each connection (or request, for
 * an HTTP limit_conn) counts under one of these. */
export declare class LimitConn {
    protected readonly block: GaugeBlock;
    private readonly l;
    constructor(block: GaugeBlock, l?: ConnLayout);
    passed(): void;
    /** Passed without being counted: the key was empty or too long (limitKeySkipped). */
    skipped(): void;
    /** Over the configured limit. */
    rejected(): void;
    /** Rejected because the zone had no room for the key. */
    exhausted(): void;
}
/** What a worker calls as a request limit decides: each request counts under one of
 * these (a delayed request is `delayed`, not also `passed`). */
export declare class LimitReq extends LimitConn {
    constructor(block: GaugeBlock);
    /** Over the rate, within the burst: held back, then passed. */
    delayed(): void;
}
export declare const httpLimitConns: {
    fields: Group<Counted>;
    recorder: (status: Status, name: string) => LimitConn;
    node: (status: Status) => StatusNode;
};
export declare const streamLimitConns: {
    fields: Group<Counted>;
    recorder: (status: Status, name: string) => LimitConn;
    node: (status: Status) => StatusNode;
};
export declare const httpLimitReqs: {
    fields: Group<Counted>;
    recorder: (status: Status, name: string) => LimitReq;
    node: (status: Status) => StatusNode;
};
export {};
