import type { ApiHandler } from '../api/index.js';
import type { ApiRequest, ApiResponse } from '../api/types.js';
/** The API (`createApi`): synchronous; `undefined` when no API mount matches the path. */
export type { ApiHandler };
/** The largest request body the API accepts. */
export declare const BODY_LIMIT: number;
/**
 * Bytes of a request body a transport keeps: one more than the limit, so the API sees that
 * a body is too large (`body.length > BODY_LIMIT`) and answers 413 itself. The transport
 * answers as soon as it has this many bytes and discards the rest of the body, so the
 * connection stays usable.
 */
export declare const BODY_CAP: number;
/** The answer when no API mount matched the path: the API's own PathNotFound. */
export declare function notFound(req: ApiRequest): ApiResponse;
/** The answer when the handler threw or returned something that is not a response. */
export declare function internalError(method: string): ApiResponse;
/** A response ready to write: status line, headers without the ones the transport owns. */
export interface WireResponse {
    status: number;
    /** `"200 OK"`, `"413 Payload Too Large"`, ... */
    statusLine: string;
    /** Header pairs to write, in order, without Content-Length, Date, Connection, Transfer-Encoding. */
    headers: Array<[string, string]>;
    /** Content-Length: the handler's value for HEAD (the length of the GET body), else the body's. */
    contentLength: number;
    /** Empty for HEAD. */
    body: string | Uint8Array;
    /** The handler's ApiResponse.release, for once the body is written out. */
    release?: () => void;
}
/**
 * Checks a handler's answer and prepares it for the wire; throws when it cannot be written
 * (not an object, status outside 200-599 (a 1xx is no final answer), a header that would break the response), which
 * the transport turns into a 500 like any other handler failure.
 */
export declare function toWire(method: string, res: ApiResponse): WireResponse;
/**
 * Calls the handler and prepares its answer; never throws. `undefined` when no API mount
 * matched. A handler that throws, or answers something unwritable, gives a 500
 * InternalError and is reported through `onError`.
 */
export declare function answer(handler: ApiHandler, req: ApiRequest, onError: (err: unknown) => void): WireResponse | undefined;
/** The default error reporter: a process warning, which never throws. */
export declare function reportError(err: unknown): void;
/**
 * Splits a request target into raw path and raw query (no '?'), both still
 * percent-encoded, nothing decoded or removed. An absolute-form target (`http://host/path`,
 * which node:http passes on as it came) keeps only its path.
 */
export declare function splitTarget(target: string): {
    path: string;
    query: string;
};
/** A local address as the API reports it: IPv4-mapped IPv6 (`::ffff:127.0.0.1`) as IPv4. */
export declare function localAddress(address: string | undefined): string;
