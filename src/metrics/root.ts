// The status tree as data: each branch is a path and the family that serves it. The
// root and /status/http, /status/stream show the branches the configuration has, in this
// order. Adding a family is adding a line here.
import { cachesNode } from './caches.js';
import { slabZones, type Catalog } from './catalog.js';
import { configStoreNode } from './config-store.js';
import { connectionsNode } from './connections.js';
import { locationZones, serverZones } from './http-zones.js';
import { httpLimitConns, httpLimitReqs, streamLimitConns } from './limits.js';
import { resolversNode } from './resolvers.js';
import { workersNode } from './runtime.js';
import { serverNode } from './server.js';
import { slabsNode } from './slabs.js';
import { upstreamsNode } from './upstreams.js';
import type { StatusStore } from './store.js';
import { streamZonesNode } from './stream-zones.js';
import { ObjectNode, type StatusNode } from './tree.js';

export interface Branch {
  readonly path: readonly string[];
  present(catalog: Catalog): boolean;
  /** The family's node: it reads the figures when it is walked, never when it is made,
   * since it is made once for each catalog and serves every answer until the next. */
  node(status: StatusStore): StatusNode;
}

const some = (list: readonly unknown[] | undefined) => !!list && list.length > 0;

// The root's members in Angie's order (`resolvers` before `http`): the spec lists them
// without saying an order, and an operator comparing the two trees sees the same one.
export const branches: Branch[] = [
  { path: ['server'], present: () => true, node: serverNode },
  { path: ['connections'], present: () => true, node: connectionsNode },
  { path: ['slabs'], present: (c) => slabZones(c, 1).length > 0, node: slabsNode },
  { path: ['resolvers'], present: (c) => some(c.resolvers), node: resolversNode },
  { path: ['http', 'server_zones'], present: (c) => some(c.http?.serverZones), node: serverZones.node },
  { path: ['http', 'location_zones'], present: (c) => some(c.http?.locationZones), node: locationZones.node },
  { path: ['http', 'caches'], present: (c) => some(c.http?.caches), node: cachesNode },
  { path: ['http', 'limit_conns'], present: (c) => some(c.http?.limitConns), node: httpLimitConns.node },
  { path: ['http', 'limit_reqs'], present: (c) => some(c.http?.limitReqs), node: httpLimitReqs.node },
  { path: ['http', 'upstreams'], present: (c) => some(c.http?.upstreams), node: upstreamsNode('http') },
  { path: ['stream', 'server_zones'], present: (c) => some(c.stream?.serverZones), node: streamZonesNode },
  { path: ['stream', 'limit_conns'], present: (c) => some(c.stream?.limitConns), node: streamLimitConns.node },
  { path: ['stream', 'upstreams'], present: (c) => some(c.stream?.upstreams), node: upstreamsNode('stream') },
  // zonal's extension, after the spec's members: each worker's Node runtime.
  { path: ['workers'], present: (c) => !!c.runtime, node: workersNode },
  // zonal's extension: the store the upstreams are kept in (config_store).
  { path: ['config_store'], present: (c) => !!c.configStore, node: configStoreNode },
];

/** The object at `prefix`: the branches below it that the catalog has, in order. The
 * objects between (`http`, `stream`) are made once: they read the catalog when walked. */
function objectAt(status: StatusStore, prefix: readonly string[]): StatusNode {
  const below = branches.filter((b) => prefix.every((p, i) => b.path[i] === p) && b.path.length > prefix.length);
  const inner = new Map<string, StatusNode>();
  // Families' nodes and the list of members, as made for the catalog of `generation`:
  // making them again for every answer was most of the garbage a render left.
  let generation = -1;
  let families = new Map<Branch, StatusNode>();
  let listed: Array<[string, StatusNode]> | undefined;
  const current = () => {
    const g = status.generation;
    if (g !== generation) {
      generation = g;
      families = new Map();
      listed = undefined;
    }
  };
  const nodeOf = (b: Branch, name: string): StatusNode => {
    if (b.path.length === prefix.length + 1) {
      let family = families.get(b);
      if (!family) families.set(b, (family = b.node(status)));
      return family;
    }
    let node = inner.get(name);
    if (!node) inner.set(name, (node = objectAt(status, [...prefix, name])));
    return node;
  };
  const list = (): Array<[string, StatusNode]> => {
    current();
    if (listed) return listed;
    const catalog = status.catalog();
    const out: Array<[string, StatusNode]> = [];
    for (const b of below) {
      const name = b.path[prefix.length];
      if (out.some(([n]) => n === name) || !b.present(catalog)) continue;
      out.push([name, nodeOf(b, name)]);
    }
    return (listed = out);
  };
  const find = (name: string): StatusNode | undefined => {
    current();
    const catalog = status.catalog();
    const b = below.find((x) => x.path[prefix.length] === name && x.present(catalog));
    return b && nodeOf(b, name);
  };
  return new ObjectNode(list, find);
}

export function statusRoot(status: StatusStore): StatusNode {
  return objectAt(status, []);
}
