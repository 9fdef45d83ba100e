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

/** A zone's slab node; its slot sizes run from 8 to half a page. */
function zoneNode(stats: Float64Array, pageSize: number): StatusNode {
  const pages = new FieldNode(pageFields, { stats });
  const sizes = sizesOf(pageSize);
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
  return new ObjectNode(() => members, undefined, undefined, true);
}

const scratch = new Float64Array(2 + 4 * 16);

// The zones' names, one list per catalog (which stays the same object until it changes).
const namesOf = new WeakMap<object, string[]>();
function zoneNames(status: StatusStore): string[] {
  const catalog = status.catalog();
  let names = namesOf.get(catalog);
  if (!names) namesOf.set(catalog, (names = slabZones(catalog, status.zone.workerSlots).map((z) => z.name)));
  return names;
}

export function slabsNode(status: StatusStore): StatusNode {
  return collection(
    'zone',
    () => zoneNames(status),
    (name) => name,
    // A zone written at once reads its figures into the array the next one reuses.
    (name, transient) => {
      const zone = status.zoneNamed(name);
      return zoneNode(zone.slabStatsPacked(transient ? scratch : undefined), zone.pageSize);
    },
  );
}
