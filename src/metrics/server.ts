// /status/server: the instance itself. `build` only when set, `config_files` only where
// the serving location has `api_config_files on`.
import type { Catalog } from './catalog.js';
import { group, leaf, time, type RenderContext } from './shape.js';
import type { StatusStore } from './store.js';
import { FieldNode, ObjectNode, ValueNode, type StatusNode } from './tree.js';

interface ServerSource {
  readonly catalog: Catalog;
}

export const serverFields = group<ServerSource>('', [
  leaf('version', 'Version of the running server.', (s) => s.catalog.server.version),
  leaf('build', 'Build name.', (s) => s.catalog.server.build),
  leaf('address', 'Address of the server that accepted the API request.', (_s, ctx) => ctx.address),
  leaf('generation', 'Configuration reloads since the last start.', (s) => s.catalog.generation, 'counter'),
  time('load_time', 'Time of the last configuration reload.', (s) => s.catalog.loadTime),
]);

/** The server branch: declared fields, then `config_files` where allowed. It is marked
 * flat, and the text format shows only its generation. */
export function serverNode(status: StatusStore): StatusNode {
  const declared = new FieldNode(serverFields, { catalog: status.catalog() }, true);
  // Made again only when the files are (at a reload): the same list each time lets its
  // keys be encoded once, and the texts' JSON is kept by the writer.
  let filesOf: Readonly<Record<string, string>> | undefined;
  let filesNode: StatusNode | undefined;
  const configFiles = (ctx: RenderContext): StatusNode | undefined => {
    if (!ctx.configFiles) return undefined;
    const files = status.configFiles();
    if (files !== filesOf || !filesNode) {
      const list = Object.entries(files).map(([path, text]): [string, StatusNode] => [path, new ValueNode(text)]);
      filesOf = files;
      filesNode = new ObjectNode(() => list);
    }
    return filesNode;
  };
  const members = (ctx: RenderContext): Array<[string, StatusNode]> => {
    const out = declared.members(ctx);
    const files = configFiles(ctx);
    if (files) out.push(['config_files', files]);
    return out;
  };
  const find = (name: string, ctx: RenderContext) => (name === 'config_files' ? configFiles(ctx) : declared.child(name, ctx));
  return new ObjectNode(members, find, undefined, true, ['generation']);
}

