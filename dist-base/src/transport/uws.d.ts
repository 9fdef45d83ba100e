import { type ApiHandler } from './common.js';
export type { ApiHandler } from './common.js';
export { BODY_CAP, BODY_LIMIT } from './common.js';
export interface ServeApiOptions {
    /** Address to listen on (loopback in tests: 127.0.0.1 or ::1); reported as `address`. */
    host: string;
    /** Port; 0 picks a free one. */
    port: number;
    handler: ApiHandler;
    /** Called with whatever the handler threw; default: a process warning. */
    onError?: (err: unknown) => void;
}
export interface ApiServer {
    /** The port listened on (the one picked when asked for 0). */
    readonly port: number;
    /** Stops listening and closes every open connection. Idempotent. */
    close(): void;
}
export declare function serveApi(options: ServeApiOptions): Promise<ApiServer>;
