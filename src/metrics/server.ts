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
  // What the node shows, made again only when the catalog or the files change (a
  // reload): the same member lists answer after answer let their keys be encoded once,
  // and the texts' JSON is kept by the writer. The declared fields read the catalog and
  // the request's address when written.
  let kept:
    | {
        readonly catalog: Catalog;
        readonly files: Readonly<Record<string, string>>;
        readonly declared: FieldNode<ServerSource>;
        filesNode?: StatusNode;
        /** The members without config_files, and with. */
        readonly lists: Array<Array<[string, StatusNode]> | undefined>;
      }
    | undefined;
  const now = () => {
    const catalog = status.catalog();
    const files = status.configFiles();
    if (kept?.catalog !== catalog || kept.files !== files) kept = { catalog, files, declared: new FieldNode(serverFields, { catalog }, true), lists: [] };
    return kept;
  };
  const configFiles = (ctx: RenderContext): StatusNode | undefined => {
    if (!ctx.configFiles) return undefined;
    const k = now();
    if (!k.filesNode) {
      const list = Object.entries(k.files).map(([path, text]): [string, StatusNode] => [path, new ValueNode(text)]);
      k.filesNode = new ObjectNode(() => list);
    }
    return k.filesNode;
  };
  const members = (ctx: RenderContext): Array<[string, StatusNode]> => {
    const k = now();
    const at = ctx.configFiles ? 1 : 0;
    let list = k.lists[at];
    if (!list) {
      list = k.declared.members(ctx);
      const files = configFiles(ctx);
      if (files) list.push(['config_files', files]);
      k.lists[at] = list;
    }
    return list;
  };
  const find = (name: string, ctx: RenderContext) => (name === 'config_files' ? configFiles(ctx) : now().declared.child(name, ctx));
  return new ObjectNode(members, find, undefined, true, ['generation']);
}
