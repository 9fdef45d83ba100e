import type { ApiResponse } from './types.js';
export declare const NO_CACHE: {
    'Cache-Control': string;
    Expires: string;
};
export declare function textResponse(status: number, type: string, body: string | Buffer, head: boolean, extra?: Record<string, string>): ApiResponse;
export declare function jsonResponse(status: number, value: unknown, pretty: boolean, head: boolean, extra?: Record<string, string>): ApiResponse;
export declare function apiError(status: number, error: string, description: string, head?: boolean, extra?: Record<string, string>): ApiResponse;
export declare const pathNotFound: (path: string, head?: boolean) => ApiResponse;
export declare const methodNotAllowed: (method: string, path: string, allow: string) => ApiResponse;
