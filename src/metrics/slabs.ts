// /status/slabs/<zone>: the slab allocator of each shared-memory zone that the
// configuration's upstreams, caches and limits use, as the zone's own statistics say.
import { slabZones } from './catalog.js';
import { group, leaf } from './shape.js';
import type { StatusStore } from './store.js';
import { collection, FieldNode, ObjectNode, type StatusNode } from './tree.js';

// Zone.slabStatsPacked(): pages used and free, then four figures per slot size.
interface SlotSource {
  readonly stats: Float64Array;
  /** Index of the slot size's first figure. */
  readonly at: number;
}

export const slotFields = group<SlotSource>('', [
  leaf('used', 'Slots of this size in use.', (s) => s.stats[s.at], 'gauge'),
  leaf('free', 'Free slots of this size.', (s) => s.stats[s.at + 1], 'gauge'),
  leaf('reqs', 'Attempts to allocate a slot of this size.', (s) => s.stats[s.at + 2], 'counter'),
  leaf('fails', 'Failed attempts to allocate a slot of this size.', (s) => s.stats[s.at + 3], 'counter'),
]);

export const pageFields = group<{ stats: Float64Array }>('pages', [
  leaf('used', 'Memory pages in use.', (s) => s.stats[0], 'gauge'),
  leaf('free', 'Free memory pages.', (s) => s.stats[1], 'gauge'),
]);

const slotNames = Array.from({ length: 16 }, (_, k) => String(8 << k));
// Slot sizes (as indexes into slotNames) by page size: one array per page size, so that
// the keys written for them are encoded once (tree.ts).
const sizesByPage = new Map<number, number[]>();
const sizesOf = (pageSize: number): number[] => {
  let sizes = sizesByPage.get(pageSize);
  if (!sizes) sizesByPage.set(pageSize, (sizes = Array.from({ length: Math.log2(pageSize) - 3 }, (_, k) => k)));
  return sizes;
};

/** A zone's slab node, made once per catalog: its own array takes the zone's figures,
 * read again each time the node lists its members (once per answer that reaches it).
 * Slot sizes run from 8 to half a page. */
function zoneNode(zone: { slabStatsPacked(out: Float64Array): Float64Array; readonly pageSize: number }): StatusNode {
  const sizes = sizesOf(zone.pageSize);
  // Room for every slot size a zone can have (native/layout.h kMaxSlotKinds), as the
  // native side fills only an array large enough.
  const stats = new Float64Array(2 + 4 * 16);
  const pages = new FieldNode(pageFields, { stats });
  const slot = { stats, at: 0 };
  const slots = collection(
    'size',
    () => sizes,
    (k) => slotNames[k],
    (k) => new FieldNode(slotFields, { stats, at: 2 + 4 * k }),
    { fields: slotFields, fill: (k) => ((slot.at = 2 + 4 * k), slot) },
  );
  const members: Array<[string, StatusNode]> = [
    ['pages', pages],
    ['slots', slots],
  ];
  return new ObjectNode(
    () => {
      zone.slabStatsPacked(stats);
      return members;
    },
    undefined,
    undefined,
    true,
  );
}

// The zones' nodes, by name, for one catalog (which stays the same object until it
// changes): making a zone's node and its slot collection for every answer was most of
// what rendering a zone's slabs cost.
const nodesOf = new WeakMap<object, { names: string[]; nodes: Map<string, StatusNode> }>();
function zonesOf(status: StatusStore): { names: string[]; nodes: Map<string, StatusNode> } {
  const catalog = status.catalog();
  let zones = nodesOf.get(catalog);
  if (!zones) nodesOf.set(catalog, (zones = { names: slabZones(catalog, status.zone.workerSlots).map((z) => z.name), nodes: new Map() }));
  return zones;
}

export function slabsNode(status: StatusStore): StatusNode {
  const nodeOf = (name: string): StatusNode => {
    const { nodes } = zonesOf(status);
    let node = nodes.get(name);
    if (!node) nodes.set(name, (node = zoneNode(status.zoneNamed(name))));
    return node;
  };
  return collection(
    'zone',
    () => zonesOf(status).names,
    (name) => name,
    nodeOf,
  );
}
