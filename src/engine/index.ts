// zonal's engine: shared-memory zones with a slab allocator, sharded counters, atomic
// cells and seqlocked records, for processes that share them by name.
export { Zone, ZoneFullError, removeZone } from './zone.js';
export type { CreateZoneOptions, AttachZoneOptions, SlabStats } from './zone.js';
export { CounterBlock, GaugeBlock, inReadPass } from './counters.js';
export { AtomicCells } from './cells.js';
export { SeqRecord } from './record.js';
export { LimitReqTable, LimitConnTable, LimitReqMode, LIMIT_BUSY, LIMIT_EXHAUSTED, type LimitKey } from './limits.js';
export { setWorkerSlot, INSTANCE_ENV, WORKER_SLOT_ENV } from './identity.js';
export { addon } from './native.js';
export { CacheKeys, CacheLookupState } from './cache-keys.js';
export type { CacheEvicted, CacheLookup } from './cache-keys.js';
export { Histogram, histogramLength, quantile, type HistogramSnapshot } from './histogram.js';
