import { answer, BODY_CAP, localAddress, notFound, reportError, splitTarget, toWire } from './common.js';
export { BODY_CAP, BODY_LIMIT } from './common.js';
export function apiListener(handler, options = {}) {
    const onError = options.onError ?? reportError;
    return (req, res, next) => {
        const method = (req.method ?? 'GET').toUpperCase();
        const target = req.originalUrl ?? req.url ?? '/';
        const { path, query } = splitTarget(target);
        const base = {
            method,
            path,
            query,
            address: localAddress(req.socket.localAddress),
            ...(req.headers.host ? { host: req.headers.host } : {}),
        };
        // Returns false when passed on to next.
        const respond = (body) => {
            const apiReq = body && body.length > 0 ? { ...base, body } : base;
            let wire = answer(handler, apiReq, onError);
            if (wire === undefined) {
                if (next) {
                    next();
                    return false;
                }
                wire = toWire(method, notFound(apiReq));
            }
            write(res, wire, onError);
            return true;
        };
        const contentLength = req.headers['content-length'];
        const hasBody = req.headers['transfer-encoding'] !== undefined || (contentLength !== undefined && contentLength !== '0');
        if (!hasBody)
            return respond(undefined);
        if (req.readableEnded) {
            // A body parser mounted before the API consumed the stream: take a raw body it left.
            const parsed = req.body;
            const body = Buffer.isBuffer(parsed) ? parsed : typeof parsed === 'string' ? Buffer.from(parsed) : undefined;
            return respond(body?.subarray(0, BODY_CAP));
        }
        const chunks = [];
        let size = 0;
        let done = false;
        const finish = () => {
            if (done)
                return;
            done = true;
            // Keep reading (and dropping) the rest of an over-long body so the connection stays
            // usable; its data events find `done` set.
            respond(Buffer.concat(chunks, size));
            chunks.length = 0;
        };
        req.on('data', (chunk) => {
            if (done)
                return;
            const keep = Math.min(chunk.length, BODY_CAP - size);
            chunks.push(keep === chunk.length ? chunk : chunk.subarray(0, keep));
            size += keep;
            if (size >= BODY_CAP)
                finish();
        });
        req.on('end', finish);
        // A client that goes away mid-body: nothing to answer, nothing to call.
        req.on('error', () => {
            done = true;
        });
        req.on('close', () => {
            if (!req.complete)
                done = true;
        });
        return true;
    };
}
function write(res, wire, onError) {
    if (res.writableEnded || res.destroyed)
        return;
    try {
        if (res.headersSent)
            throw new Error('headers already sent by someone else');
        const headers = Object.fromEntries(wire.headers);
        headers['Content-Length'] = String(wire.contentLength);
        res.writeHead(wire.status, headers);
        // The socket holds the body until it is written out: 'finish' says it was.
        if (wire.release)
            res.once('finish', wire.release);
        res.end(wire.body);
    }
    catch (err) {
        onError(err);
        res.destroy();
    }
}
/**
 * Serves the API on a node:http server: requests the API does not take get the JSON 404
 * unless `fallback` is given, which then receives them.
 */
export function mountApi(server, handler, fallback) {
    const listener = apiListener(handler);
    server.on('request', (req, res) => {
        listener(req, res, fallback ? () => fallback(req, res) : undefined);
    });
    return listener;
}
//# sourceMappingURL=http.js.map