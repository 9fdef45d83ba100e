import type { RenderContext } from '../metrics/shape.js';
import type { StatusNode } from '../metrics/tree.js';
export declare const TEXT_CONTENT_TYPE = "text/plain; version=0.0.4";
export interface Step {
    readonly name: string;
    readonly node: StatusNode;
}
/** The text of the node at the end of `trail` (trail[0] is the /status root). */
export declare function exposition(trail: readonly Step[], ctx: RenderContext): string;
