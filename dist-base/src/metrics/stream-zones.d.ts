import type { GaugeBlock } from '../engine/index.js';
import { type Counted, type Group } from './shape.js';
import { type Status } from './status.js';
import { type StatusNode } from './tree.js';
export interface StreamZoneSource extends Counted {
    readonly ssl: boolean;
}
export declare const streamZoneFields: Group<StreamZoneSource>;
/** The status codes a stream session ends with. */
export type SessionStatus = 200 | 400 | 403 | 500 | 502 | 503;
/** What a worker calls as the zone's connections and sessions happen. */
export declare class StreamZone {
    private readonly block;
    constructor(block: GaugeBlock);
    connectionStarted(): void;
    /** The session ended with `code`, and the bytes the client sent and received. A code
     * that is none of the six is not counted under `sessions` (there is no key for it);
     * its bytes are. */
    sessionEnded(code: SessionStatus, bytesReceived: number, bytesSent: number): void;
    /** The connection ended before a session was created. */
    connectionDiscarded(bytesReceived: number, bytesSent: number): void;
    /** Counted only where the zone's server listens with SSL (shown only there). */
    sslHandshaked(reused: boolean): void;
    sslTimedOut(): void;
    sslFailed(): void;
}
export declare function streamZone(status: Status, name: string): StreamZone;
export declare function streamZonesNode(status: Status): StatusNode;
export declare const streamServerZones: {
    fields: Group<StreamZoneSource>;
    recorder: typeof streamZone;
    node: typeof streamZonesNode;
};
