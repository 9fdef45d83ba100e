// Error bodies: { error, description }, with Angie's and NGINX Plus's names.
import type { ApiResponse } from './types.js';

const NONE: Record<string, string> = {};

export const NO_CACHE = { 'Cache-Control': 'no-cache', Expires: 'Thu, 01 Jan 1970 00:00:01 GMT' };

export function textResponse(status: number, type: string, body: string | Buffer, head: boolean, extra: Record<string, string> = NONE): ApiResponse {
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  // Written out rather than spread: this runs for every answer.
  const headers: Record<string, string> = { 'Content-Type': type, 'Cache-Control': NO_CACHE['Cache-Control'], Expires: NO_CACHE.Expires, 'Content-Length': String(length) };
  for (const name in extra) headers[name] = extra[name];
  return { status, headers, body: head ? '' : body };
}

export function jsonResponse(status: number, value: unknown, pretty: boolean, head: boolean, extra: Record<string, string> = {}): ApiResponse {
  return textResponse(status, 'application/json', JSON.stringify(value, null, pretty ? '\t' : undefined) + '\n', head, extra);
}

export function apiError(status: number, error: string, description: string, head = false, extra: Record<string, string> = {}): ApiResponse {
  return jsonResponse(status, { error, description }, true, head, extra);
}

export const pathNotFound = (path: string, head = false) =>
  apiError(404, 'PathNotFound', `Requested API entity "${path}" doesn't exist.`, head);

export const methodNotAllowed = (method: string, path: string, allow: string) =>
  apiError(405, 'MethodNotAllowed', `The ${method} method is not allowed for the requested API element "${path}".`, method === 'HEAD', { Allow: allow });
