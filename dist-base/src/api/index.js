import { statusRoot } from '../metrics/root.js';
import { ObjectNode } from '../metrics/tree.js';
import { JsonWriter } from '../metrics/json.js';
import { apiError, methodNotAllowed, pathNotFound, textResponse } from './errors.js';
import { mapRequest } from './mapping.js';
import { exposition, TEXT_CONTENT_TYPE } from './text.js';
export { mapRequest, findMount, decodePath } from './mapping.js';
/** A response's body as text, whether it came as text or as bytes. */
export function bodyText(response) {
    const b = response.body;
    return typeof b === 'string' ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
}
const READ_METHODS = 'GET, HEAD';
/** Walks the tree from `root` along `segments`; undefined when a step does not exist. */
export function resolve(root, segments, ctx) {
    const trail = [{ name: '', node: root }];
    let node = root;
    for (const name of segments) {
        if (node.kind === 'leaf')
            return undefined;
        const next = node.child(name, ctx);
        if (!next)
            return undefined;
        trail.push({ name, node: next });
        node = next;
    }
    return trail;
}
export function createApi(options) {
    const mounts = options.mounts ?? [{ location: '/status/', api: '/status/' }];
    const status = options.status;
    // The API root: `/` lists the trees there are; /config joins it with the /config API.
    const root = new ObjectNode(() => [['status', statusRoot(status)]]);
    return (request) => {
        const query = new URLSearchParams(request.query);
        const mapped = mapRequest(mounts, { path: request.path, query, host: request.host });
        if (!mapped)
            return undefined;
        const head = request.method === 'HEAD';
        if ('error' in mapped)
            return apiError(400, mapped.error, mapped.description, head);
        const ctx = {
            dateEpoch: query.get('date') === 'epoch',
            address: request.address,
            configFiles: !!mapped.mount.configFiles,
            now: Date.now(),
        };
        const segments = mapped.path.split('/').filter(Boolean);
        let trail;
        try {
            trail = resolve(root, segments, ctx);
        }
        catch (e) {
            return apiError(500, 'InternalError', `Reading "${mapped.path}" failed: ${e.message}`, head);
        }
        if (!trail)
            return pathNotFound(mapped.path, head);
        if (request.method !== 'GET' && !head)
            return methodNotAllowed(request.method, mapped.path, READ_METHODS);
        const format = query.get('format');
        const target = trail[trail.length - 1].node;
        if (format !== null) {
            if (format !== 'prometheus')
                return apiError(400, 'BadRequest', `The "${format}" format is not supported: the one text format is "prometheus".`, head);
            if (segments[0] !== 'status')
                return apiError(400, 'BadRequest', 'The text format is only for the /status tree.', head);
            return textResponse(200, TEXT_CONTENT_TYPE, exposition(trail.slice(1), ctx), head);
        }
        const w = new JsonWriter(query.get('pretty') !== 'off');
        target.write(w, 0, ctx);
        w.text('\n');
        return { ...textResponse(200, 'application/json', w.result(), head), release: w.recycle() };
    };
}
//# sourceMappingURL=index.js.map