// The status of one zonal instance: its status zone (server zones, location zones,
// connections, resolvers...), the zones of its upstreams, caches and limits, and the
// catalog that says what exists. The primary creates it; workers attach to record; any
// process attaches to serve the API.
import { AtomicCells, CounterBlock, GaugeBlock, SeqRecord, Zone } from '../engine/index.js';
import { slabZones, type Catalog, type StatusConfig } from './catalog.js';
import { JsonWriter } from './json.js';
import { ConnectionLimiter, RequestLimiter, type LimitConnOptions, type LimitReqOptions } from './limits.js';
import { statusRoot } from './root.js';
import { STATUS_ZONE, type StatusStore } from './store.js';
import { publishUpstreams } from './upstreams.js';
import { reloadZoneGroups, withGroupZones, zoneGroupBytes } from './zone-groups.js';

export { STATUS_ZONE };

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

export class Status implements StatusStore {
  readonly zone: Zone;
  private readonly catalogRecord: SeqRecord;
  private readonly configFilesRecord: SeqRecord;
  private readonly zones = new Map<string, Zone>();
  /** The size each zone this process created was asked for: a reload compares it. */
  private readonly sizes = new Map<string, number>();
  // Zone name, then key: a render looks up a block per zone it shows, and a key made by
  // joining the two strings would cost more than both lookups.
  private readonly blocks = new Map<string, Map<string, CounterBlock | GaugeBlock | AtomicCells>>();
  private readonly records = new Map<string, Map<string, SeqRecord>>();
  /** Gauge blocks whose gauges this process has taken over (see gauges()). */
  private readonly owned = new Set<string>();

  private constructor(zone: Zone) {
    this.zone = zone;
    this.catalogRecord = zone.record('catalog');
    this.configFilesRecord = zone.record('config_files');
  }

  static create(config: StatusConfig, options: CreateStatusOptions): Status {
    const writer = options.writer ?? false;
    const common = { workers: options.workers, instance: options.instance, writer };
    const zone = Zone.create(STATUS_ZONE, { size: options.zoneSize ?? statusZoneBytes(config, options.workers), ...common });
    const status = new Status(zone);
    try {
      for (const z of slabZones(config, options.workers)) status.createZone(z.name, z.size);
      status.publish(config, 0, options.version, options.configFiles);
      status.allocate();
    } catch (e) {
      status.remove();
      throw e;
    }
    return status;
  }

  static attach(options: AttachStatusOptions = {}): Status {
    return new Status(Zone.attach(STATUS_ZONE, options));
  }

  get instance(): string {
    return this.zone.instance;
  }

  /** What exists, as last published; decoded again only when it changed. */
  catalog(): Catalog {
    const c = this.catalogRecord.readJSON<Catalog>();
    if (!c) throw new Error('the status zone has no catalog yet');
    return c;
  }

  /** Catalog changes so far: one atomic load, cheap enough for every request. */
  get generation(): number {
    return this.catalogRecord.generation;
  }

  configFiles(): Readonly<Record<string, string>> {
    // The same object until the files change: the server node keeps what it made of it.
    return this.configFilesRecord.readJSON<Record<string, string>>() ?? NO_FILES;
  }

  /** A reload: the new configuration, generation + 1, load time now. Zones the new
   * configuration adds are created; the others keep their counters. */
  reload(config: StatusConfig, configFiles?: Record<string, string>): void {
    const old = this.catalog();
    const wanted = slabZones(config, this.zone.workerSlots);
    // A zone that is gone, or whose size changed, is removed: processes that still map it
    // (workers draining) keep it until they exit. A resized zone starts again from zero.
    for (const [name, zone] of this.zones) {
      const w = wanted.find((z) => z.name === name);
      if (w && this.sizes.get(name) === w.size) continue;
      if (zone.owner) zone.remove();
      this.forget(name);
    }
    for (const z of wanted) if (!this.zones.has(z.name)) this.createZone(z.name, z.size);
    this.publish(config, old.generation + 1, old.server.version, configFiles);
    // Groups the new configuration keeps keep the zones they made (as many as it allows).
    reloadZoneGroups(this, old, this.catalog());
    this.allocate();
  }

  private createZone(name: string, size: number): void {
    this.zones.set(name, Zone.create(name, { size, workers: this.zone.workerSlots, instance: this.instance, writer: this.zone.writer }));
    this.sizes.set(name, size);
  }

  /** Drops what this process kept of a zone it no longer uses. */
  private forget(zone: string): void {
    this.zones.delete(zone);
    this.sizes.delete(zone);
    this.blocks.delete(zone);
    this.records.delete(zone);
    const prefix = `${zone}\0`;
    for (const key of this.owned) if (key.startsWith(prefix)) this.owned.delete(key);
  }

  /** Makes every block the catalog implies, by rendering the tree once: the creator
   * does this, so that workers and readers only find blocks, and the slab statistics
   * do not move when the API is first read. */
  private allocate(): void {
    statusRoot(this).write(new JsonWriter(false), 0, { dateEpoch: true, address: '', configFiles: false, now: Date.now() });
  }

  private publish(config: StatusConfig, generation: number, version?: string, configFiles?: Record<string, string>): void {
    // Each zone group's own zone is among its family's zones: readers see it as any other.
    const catalog: Catalog = { ...withGroupZones(config), server: { version: version ?? ZONAL_VERSION, ...config.server }, generation, loadTime: Date.now() };
    if (!this.catalogRecord.writeJSON(catalog)) throw new Error('the status zone has no room for the catalog');
    if (configFiles && !this.configFilesRecord.writeJSON(configFiles))
      throw new Error('the status zone has no room for the configuration files');
    publishUpstreams(this);
  }

  /** A zone of the instance by name (`~status` or a configured one), attached once. */
  zoneNamed(name: string): Zone {
    if (name === STATUS_ZONE) return this.zone;
    let z = this.zones.get(name);
    if (!z) {
      z = Zone.attach(name, { instance: this.instance, writer: this.zone.writer });
      this.zones.set(name, z);
    }
    return z;
  }

  /** A counter block of a zone, made once per process. */
  counters(zone: string, key: string, length: number): CounterBlock {
    return (this.cachedBlock(zone, key) ?? this.keep(zone, key, this.zoneNamed(zone).counters(key, length))) as CounterBlock;
  }

  /** A gauge block of a zone, made once per process. A recorder passes its gauges'
   * indices as `own`: the first time, they are set to zero in this process's shard, which
   * may hold what a worker killed in the same slot had in flight. */
  gauges(zone: string, key: string, length: number, own?: readonly number[]): GaugeBlock {
    const block = (this.cachedBlock(zone, key) ?? this.keep(zone, key, this.zoneNamed(zone).gauges(key, length))) as GaugeBlock;
    if (own && block.slot >= 0 && !this.owned.has(`${zone}\0${key}`)) {
      this.owned.add(`${zone}\0${key}`);
      for (const i of own) block.set(i, 0);
    }
    return block;
  }

  /** A record of a zone, made once per process. */
  record(zone: string, key: string): SeqRecord {
    const inZone = ofZone(this.records, zone);
    let r = inZone.get(key);
    if (!r) inZone.set(key, (r = this.zoneNamed(zone).record(key)));
    return r;
  }

  /** Frees a block of a zone and forgets it (a removed peer's, long after its removal). */
  drop(zone: string, key: string): void {
    this.blocks.get(zone)?.delete(key);
    this.zoneNamed(zone).drop(key);
  }

  cells(zone: string, key: string, length: number): AtomicCells {
    return (this.cachedBlock(zone, key) ?? this.keep(zone, key, this.zoneNamed(zone).cells(key, length))) as AtomicCells;
  }

  private cachedBlock(zone: string, key: string): CounterBlock | GaugeBlock | AtomicCells | undefined {
    return this.blocks.get(zone)?.get(key);
  }

  private keep<B extends CounterBlock | GaugeBlock | AtomicCells>(zone: string, key: string, block: B): B {
    ofZone(this.blocks, zone).set(key, block);
    return block;
  }

  /** nginx's limit_req over the request limit zone `name` (its rate is the zone's), for
   * every process of the instance at once; make it once and take() per request. */
  limitReq(name: string, options?: LimitReqOptions): RequestLimiter {
    return new RequestLimiter(this, name, options);
  }

  /** nginx's limit_conn over the connection limit zone `name`, for every process of the
   * instance at once; make it once and acquire() per request or connection. */
  limitConn(name: string, options: LimitConnOptions): ConnectionLimiter {
    return new ConnectionLimiter(this, name, options);
  }

  /** Removes the instance's zones (the creator does this on exit by itself). */
  remove(): void {
    for (const z of this.zones.values()) if (z.owner) z.remove();
    if (this.zone.owner) this.zone.remove();
  }
}

export const ZONAL_VERSION = '0.1.0';

const NO_FILES: Readonly<Record<string, string>> = Object.freeze({});

/** Room for every object's counter block and histogram (with a shard per worker), and
 * for the catalog twice over: a rewrite holds the old and the new copy for a moment. */
function statusZoneBytes(config: StatusConfig, workers: number): number {
  const objects =
    (config.http?.serverZones?.length ?? 0) +
    (config.http?.locationZones?.length ?? 0) +
    (config.stream?.serverZones?.length ?? 0) +
    (config.resolvers?.length ?? 0) +
    (config.runtime ? 1 : 0) +
    1;
  return 256 * 1024 + objects * (workers * 2560 + 2560) + 3 * JSON.stringify(config).length + zoneGroupBytes(config, workers);
}

/** What a process keeps of one zone, by key: made when first asked for. */
function ofZone<T>(kept: Map<string, Map<string, T>>, zone: string): Map<string, T> {
  let inZone = kept.get(zone);
  if (!inZone) kept.set(zone, (inZone = new Map()));
  return inZone;
}
