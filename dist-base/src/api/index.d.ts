import type { Status } from '../metrics/status.js';
import type { RenderContext } from '../metrics/shape.js';
import { type StatusNode } from '../metrics/tree.js';
import { type Step } from './text.js';
import type { ApiMount, ApiRequest, ApiResponse } from './types.js';
export type { ApiMount, ApiRequest, ApiResponse } from './types.js';
export { mapRequest, findMount, decodePath } from './mapping.js';
export type ApiHandler = (request: ApiRequest) => ApiResponse | undefined;
/** A response's body as text, whether it came as text or as bytes. */
export declare function bodyText(response: ApiResponse): string;
export interface ApiOptions {
    readonly status: Status;
    /** Where the API answers; by default `/status/` as itself. */
    readonly mounts?: readonly ApiMount[];
}
/** Walks the tree from `root` along `segments`; undefined when a step does not exist. */
export declare function resolve(root: StatusNode, segments: readonly string[], ctx: RenderContext): Step[] | undefined;
export declare function createApi(options: ApiOptions): ApiHandler;
