import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { type ApiHandler } from './common.js';
export type { ApiHandler } from './common.js';
export { BODY_CAP, BODY_LIMIT } from './common.js';
/**
 * Handles one request. Returns true when it answered the request or will (the body is
 * being read), false when it passed the request on to `next` at once. Without `next`, a
 * path no API mount matches gets a JSON 404 PathNotFound.
 */
export type ApiListener = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => boolean;
export interface ApiListenerOptions {
    /** Called with whatever the handler threw; default: a process warning. */
    onError?: (err: unknown) => void;
}
export declare function apiListener(handler: ApiHandler, options?: ApiListenerOptions): ApiListener;
/**
 * Serves the API on a node:http server: requests the API does not take get the JSON 404
 * unless `fallback` is given, which then receives them.
 */
export declare function mountApi(server: Server, handler: ApiHandler, fallback?: (req: IncomingMessage, res: ServerResponse) => void): ApiListener;
