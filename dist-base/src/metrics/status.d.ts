import { AtomicCells, CounterBlock, GaugeBlock, Zone } from '../engine/index.js';
import { type Catalog, type StatusConfig } from './catalog.js';
/** The status zone's name. Configured zone names cannot clash with it: '~' is not one
 * of their characters in any configuration zonal reads. */
export declare const STATUS_ZONE = "~status";
export interface CreateStatusOptions {
    /** Worker slots: how many processes record at once. */
    workers: number;
    instance?: string;
    /** Whether this process records traffic itself (default false: a primary). */
    writer?: boolean;
    /** Bytes of the status zone (computed from the configuration by default). */
    zoneSize?: number;
    /** Absolute path -> content of the configuration files, for `api_config_files on`. */
    configFiles?: Record<string, string>;
    /** Server version shown in `/status/server/version`. */
    version?: string;
}
export interface AttachStatusOptions {
    instance?: string;
    /** Whether this process records traffic (default true: a worker). */
    writer?: boolean;
}
export declare class Status {
    readonly zone: Zone;
    private readonly catalogRecord;
    private readonly configFilesRecord;
    private readonly zones;
    private readonly blocks;
    private constructor();
    static create(config: StatusConfig, options: CreateStatusOptions): Status;
    static attach(options?: AttachStatusOptions): Status;
    get instance(): string;
    /** What exists, as last published; decoded again only when it changed. */
    catalog(): Catalog;
    /** Catalog changes so far: one atomic load, cheap enough for every request. */
    get generation(): number;
    configFiles(): Record<string, string>;
    /** A reload: the new configuration, generation + 1, load time now. Zones the new
     * configuration adds are created; the others keep their counters. */
    reload(config: StatusConfig, configFiles?: Record<string, string>): void;
    /** Makes every block the catalog implies, by rendering the tree once: the creator
     * does this, so that workers and readers only find blocks, and the slab statistics
     * do not move when the API is first read. */
    private allocate;
    private publish;
    /** A zone of the instance by name (`~status` or a configured one), attached once. */
    zoneNamed(name: string): Zone;
    /** A counter block of a zone, made once per process. */
    counters(zone: string, key: string, length: number): CounterBlock;
    gauges(zone: string, key: string, length: number): GaugeBlock;
    cells(zone: string, key: string, length: number): AtomicCells;
    private cached;
    /** Removes the instance's zones (the creator does this on exit by itself). */
    remove(): void;
}
export declare const ZONAL_VERSION = "0.1.0";
