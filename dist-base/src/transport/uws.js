// The dedicated API listener on uWebSockets.js: every request, any method and any path,
// goes to the API handler; a path no API mount matches gets a JSON PathNotFound.
//
// Facts of the uWebSockets.js build this relies on (the `uWebSockets.js` alias of
// @trufflesuite/uws-js-unofficial 20.30.0, native binding for Node 20 = ABI 115):
// - getUrl() is the raw path (percent-encoding kept, no query); getQuery() the raw query,
//   or undefined when there is none.
// - onData is called for every request, with an empty last chunk when there is no body;
//   chunked request bodies are decoded; "Expect: 100-continue" is answered by uWS itself.
// - end(body) on a HEAD request sends the body: HEAD is answered with an explicit
//   Content-Length header and endWithoutBody() (called with no argument: passing a length
//   or `undefined` makes uWS wait for a body that never comes and drop the connection).
// - end() writes Content-Length and Date itself, so the handler's values are not copied.
// - There is no per-connection local address: `address` is the host the listener is bound to.
// - After a response is ended before the body is fully read, uWS keeps reading and
//   discarding it (still calling onData), and the connection stays usable.
// - app.close() (not in the typings) closes the listen socket and every open connection.
// - It answers only HTTP/1.1 requests with a Host header: HTTP/1.0 requests get no answer.
import { createRequire } from 'node:module';
import { answer, BODY_CAP, notFound, reportError, toWire } from './common.js';
export { BODY_CAP, BODY_LIMIT } from './common.js';
// A CommonJS package whose exports are a native module: loaded through require, so ESM
// callers and tap's TypeScript loader get the same object.
const uWS = createRequire(import.meta.url)('uWebSockets.js');
export function serveApi(options) {
    const { host, port, handler } = options;
    const onError = options.onError ?? reportError;
    const address = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
    const app = uWS.App();
    app.any('/*', (res, req) => {
        // HttpRequest lives only during this call: read everything now.
        const method = req.getMethod().toUpperCase();
        const path = req.getUrl();
        const query = req.getQuery() ?? '';
        const hostHeader = req.getHeader('host');
        let aborted = false;
        let answered = false;
        const chunks = [];
        let size = 0;
        res.onAborted(() => {
            aborted = true;
        });
        const respond = () => {
            answered = true;
            const apiReq = {
                method,
                path,
                query,
                address,
                ...(size > 0 ? { body: Buffer.concat(chunks, size) } : {}),
                ...(hostHeader ? { host: hostHeader } : {}),
            };
            chunks.length = 0;
            const wire = answer(handler, apiReq, onError) ?? toWire(method, notFound(apiReq));
            if (!aborted)
                write(res, wire, method === 'HEAD');
        };
        res.onData((chunk, isLast) => {
            if (answered || aborted)
                return; // the rest of an over-long body: uWS discards it
            if (size < BODY_CAP && chunk.byteLength > 0) {
                // The chunk's memory is reused after this call: copy what is kept.
                const keep = Math.min(chunk.byteLength, BODY_CAP - size);
                chunks.push(Buffer.from(new Uint8Array(chunk, 0, keep)));
                size += keep;
            }
            if (isLast || size >= BODY_CAP)
                respond();
        });
    });
    return new Promise((resolve, reject) => {
        app.listen(address, port, (listenSocket) => {
            if (!listenSocket) {
                reject(new Error(`zonal API: cannot listen on ${address}:${port}`));
                return;
            }
            let closed = false;
            resolve({
                port: uWS.us_socket_local_port(listenSocket),
                close() {
                    if (closed)
                        return;
                    closed = true;
                    const closeAll = app.close;
                    if (typeof closeAll === 'function')
                        closeAll.call(app);
                    else
                        uWS.us_listen_socket_close(listenSocket);
                },
            });
        });
    });
}
function write(res, wire, head) {
    try {
        res.cork(() => {
            res.writeStatus(wire.statusLine);
            for (const [name, value] of wire.headers)
                res.writeHeader(name, value);
            if (head) {
                res.writeHeader('Content-Length', String(wire.contentLength));
                res.endWithoutBody();
            }
            else {
                res.end(wire.body);
            }
        });
        // uWS has copied whatever the socket did not take at once.
        wire.release?.();
    }
    catch (err) {
        // Only a uWS failure gets here (the response was checked): drop the connection rather
        // than leave it half written.
        reportError(err);
        try {
            res.close();
        }
        catch {
            // already gone
        }
    }
}
//# sourceMappingURL=uws.js.map