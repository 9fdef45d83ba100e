import { group, leaf, time } from './shape.js';
import { FieldNode, ObjectNode, ValueNode } from './tree.js';
export const serverFields = group('', [
    leaf('version', 'Version of the running server.', (s) => s.catalog.server.version),
    leaf('build', 'Build name.', (s) => s.catalog.server.build),
    leaf('address', 'Address of the server that accepted the API request.', (_s, ctx) => ctx.address),
    leaf('generation', 'Configuration reloads since the last start.', (s) => s.catalog.generation, 'counter'),
    time('load_time', 'Time of the last configuration reload.', (s) => s.catalog.loadTime),
]);
/** The server branch: declared fields, then `config_files` where allowed. It is marked
 * flat, and the text format shows only its generation. */
export function serverNode(status) {
    const declared = new FieldNode(serverFields, { catalog: status.catalog() }, true);
    const configFiles = (ctx) => {
        if (!ctx.configFiles)
            return undefined;
        const files = status.configFiles();
        return new ObjectNode(() => Object.entries(files).map(([path, text]) => [path, new ValueNode(text)]));
    };
    const members = (ctx) => {
        const out = declared.members(ctx);
        const files = configFiles(ctx);
        if (files)
            out.push(['config_files', files]);
        return out;
    };
    const find = (name, ctx) => (name === 'config_files' ? configFiles(ctx) : declared.child(name, ctx));
    return new ObjectNode(members, find, undefined, true, ['generation']);
}
//# sourceMappingURL=server.js.map