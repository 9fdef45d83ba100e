export const NO_CACHE = { 'Cache-Control': 'no-cache', Expires: 'Thu, 01 Jan 1970 00:00:01 GMT' };
export function textResponse(status, type, body, head, extra = {}) {
    const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
    return {
        status,
        headers: { 'Content-Type': type, ...NO_CACHE, 'Content-Length': String(length), ...extra },
        body: head ? '' : body,
    };
}
export function jsonResponse(status, value, pretty, head, extra = {}) {
    return textResponse(status, 'application/json', JSON.stringify(value, null, pretty ? '\t' : undefined) + '\n', head, extra);
}
export function apiError(status, error, description, head = false, extra = {}) {
    return jsonResponse(status, { error, description }, true, head, extra);
}
export const pathNotFound = (path, head = false) => apiError(404, 'PathNotFound', `Requested API entity "${path}" doesn't exist.`, head);
export const methodNotAllowed = (method, path, allow) => apiError(405, 'MethodNotAllowed', `The ${method} method is not allowed for the requested API element "${path}".`, method === 'HEAD', { Allow: allow });
//# sourceMappingURL=errors.js.map