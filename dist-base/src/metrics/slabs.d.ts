import type { Status } from './status.js';
import { type StatusNode } from './tree.js';
interface SlotSource {
    readonly stats: Float64Array;
    /** Index of the slot size's first figure. */
    readonly at: number;
}
export declare const slotFields: import("./shape.js").Group<SlotSource>;
export declare const pageFields: import("./shape.js").Group<{
    stats: Float64Array;
}>;
export declare function slabsNode(status: Status): StatusNode;
export {};
