// What a metric family records into and renders from: the zones of one instance, found by
// name, and the catalog of what exists. `Status` (status.ts) is its one implementation.
// Families depend on this interface rather than on status.ts, so that status.ts, which
// builds the tree out of the families, stands above them and nothing below imports it.
import type { AtomicCells, CounterBlock, GaugeBlock, SeqRecord, Zone } from '../engine/index.js';
import type { Catalog } from './catalog.js';

/** The status zone's name. Configured zone names cannot clash with it: '~' is not one
 * of their characters in any configuration zonal reads. */
export const STATUS_ZONE = '~status';

export interface StatusStore {
  /** The status zone itself. */
  readonly zone: Zone;
  /** What exists, as last published. */
  catalog(): Catalog;
  /** Catalog changes so far: what a node made from the catalog is kept until. */
  readonly generation: number;
  /** Absolute path -> content of the configuration files (`api_config_files on`). */
  configFiles(): Readonly<Record<string, string>>;
  /** A zone of the instance by name (`~status` or a configured one), attached once. */
  zoneNamed(name: string): Zone;
  /** A counter block of a zone, made once per process. */
  counters(zone: string, key: string, length: number): CounterBlock;
  /** A gauge block of a zone; `own` lists the gauges this process's shard restarts from
   * zero the first time (a dead worker's leftovers in the same slot). */
  gauges(zone: string, key: string, length: number, own?: readonly number[]): GaugeBlock;
  cells(zone: string, key: string, length: number): AtomicCells;
  record(zone: string, key: string): SeqRecord;
  /** Frees a block of a zone and forgets it. */
  drop(zone: string, key: string): void;
}
