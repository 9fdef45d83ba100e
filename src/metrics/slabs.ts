// /status/slabs/<zone>: the slab allocator of each shared-memory zone that the
// configuration's upstreams, caches and limits use, as the zone's own statistics say.
import { slabZones } from './catalog.js';
import { group, leaf } from './shape.js';
import type { SlabStats } from '../engine/index.js';
import type { Status } from './status.js';
import { collection, FieldNode, ObjectNode, type StatusNode } from './tree.js';

interface SlotSource {
  readonly slot: SlabStats['slots'][string];
}

export const slotFields = group<SlotSource>('', [
  leaf('used', 'Slots of this size in use.', (s) => s.slot.used, 'gauge'),
  leaf('free', 'Free slots of this size.', (s) => s.slot.free, 'gauge'),
  leaf('reqs', 'Attempts to allocate a slot of this size.', (s) => s.slot.reqs, 'counter'),
  leaf('fails', 'Failed attempts to allocate a slot of this size.', (s) => s.slot.fails, 'counter'),
]);

export const pageFields = group<{ stats: SlabStats }>('pages', [
  leaf('used', 'Memory pages in use.', (s) => s.stats.pages.used, 'gauge'),
  leaf('free', 'Free memory pages.', (s) => s.stats.pages.free, 'gauge'),
]);

function zoneNode(stats: SlabStats): StatusNode {
  const pages = new FieldNode(pageFields, { stats });
  const slots = collection(
    'size',
    () => Object.keys(stats.slots),
    (size) => size,
    (size) => new FieldNode(slotFields, { slot: stats.slots[size] }),
  );
  const members: Array<[string, StatusNode]> = [
    ['pages', pages],
    ['slots', slots],
  ];
  return new ObjectNode(() => members, undefined, undefined, true);
}

export function slabsNode(status: Status): StatusNode {
  return collection(
    'zone',
    () => slabZones(status.catalog(), status.zone.workerSlots).map((z) => z.name),
    (name) => name,
    (name) => zoneNode(status.zoneNamed(name).slabStats()),
  );
}
