// The status of one zonal instance: its status zone (server zones, location zones,
// connections, resolvers...), the zones of its upstreams, caches and limits, and the
// catalog that says what exists. The primary creates it; workers attach to record; any
// process attaches to serve the API.
import { Zone } from '../engine/index.js';
import { slabZones } from './catalog.js';
import { JsonWriter } from './json.js';
import { statusRoot } from './root.js';
/** The status zone's name. Configured zone names cannot clash with it: '~' is not one
 * of their characters in any configuration zonal reads. */
export const STATUS_ZONE = '~status';
export class Status {
    constructor(zone) {
        this.zones = new Map();
        this.blocks = new Map();
        this.zone = zone;
        this.catalogRecord = zone.record('catalog');
        this.configFilesRecord = zone.record('config_files');
    }
    static create(config, options) {
        const writer = options.writer ?? false;
        const common = { workers: options.workers, instance: options.instance, writer };
        const zone = Zone.create(STATUS_ZONE, { size: options.zoneSize ?? statusZoneBytes(config, options.workers), ...common });
        const status = new Status(zone);
        try {
            for (const z of slabZones(config, options.workers))
                status.zones.set(z.name, Zone.create(z.name, { size: z.size, ...common, instance: zone.instance }));
            status.publish(config, 0, options.version, options.configFiles);
            status.allocate();
        }
        catch (e) {
            status.remove();
            throw e;
        }
        return status;
    }
    static attach(options = {}) {
        return new Status(Zone.attach(STATUS_ZONE, options));
    }
    get instance() {
        return this.zone.instance;
    }
    /** What exists, as last published; decoded again only when it changed. */
    catalog() {
        const c = this.catalogRecord.readJSON();
        if (!c)
            throw new Error('the status zone has no catalog yet');
        return c;
    }
    /** Catalog changes so far: one atomic load, cheap enough for every request. */
    get generation() {
        return this.catalogRecord.generation;
    }
    configFiles() {
        return this.configFilesRecord.readJSON() ?? {};
    }
    /** A reload: the new configuration, generation + 1, load time now. Zones the new
     * configuration adds are created; the others keep their counters. */
    reload(config, configFiles) {
        const old = this.catalog();
        for (const z of slabZones(config, this.zone.workerSlots))
            if (!this.zones.has(z.name))
                this.zones.set(z.name, Zone.create(z.name, { size: z.size, workers: this.zone.workerSlots, instance: this.instance, writer: this.zone.writer }));
        this.publish(config, old.generation + 1, old.server.version, configFiles);
        this.allocate();
    }
    /** Makes every block the catalog implies, by rendering the tree once: the creator
     * does this, so that workers and readers only find blocks, and the slab statistics
     * do not move when the API is first read. */
    allocate() {
        statusRoot(this).write(new JsonWriter(false), 0, { dateEpoch: true, address: '', configFiles: false, now: Date.now() });
    }
    publish(config, generation, version, configFiles) {
        const catalog = { ...config, server: { version: version ?? ZONAL_VERSION, ...config.server }, generation, loadTime: Date.now() };
        if (!this.catalogRecord.writeJSON(catalog))
            throw new Error('the status zone has no room for the catalog');
        if (configFiles && !this.configFilesRecord.writeJSON(configFiles))
            throw new Error('the status zone has no room for the configuration files');
    }
    /** A zone of the instance by name (`~status` or a configured one), attached once. */
    zoneNamed(name) {
        if (name === STATUS_ZONE)
            return this.zone;
        let z = this.zones.get(name);
        if (!z) {
            z = Zone.attach(name, { instance: this.instance, writer: this.zone.writer });
            this.zones.set(name, z);
        }
        return z;
    }
    /** A counter block of a zone, made once per process. */
    counters(zone, key, length) {
        return this.cached(`${zone}\0${key}`, () => this.zoneNamed(zone).counters(key, length));
    }
    gauges(zone, key, length) {
        return this.cached(`${zone}\0${key}`, () => this.zoneNamed(zone).gauges(key, length));
    }
    cells(zone, key, length) {
        return this.cached(`${zone}\0${key}`, () => this.zoneNamed(zone).cells(key, length));
    }
    cached(key, make) {
        let b = this.blocks.get(key);
        if (!b) {
            b = make();
            this.blocks.set(key, b);
        }
        return b;
    }
    /** Removes the instance's zones (the creator does this on exit by itself). */
    remove() {
        for (const z of this.zones.values())
            if (z.owner)
                z.remove();
        if (this.zone.owner)
            this.zone.remove();
    }
}
export const ZONAL_VERSION = '0.1.0';
/** Room for every object's counter block (with a shard per worker), and for the
 * catalog twice over: a rewrite holds the old and the new copy for a moment. */
function statusZoneBytes(config, workers) {
    const objects = (config.http?.serverZones?.length ?? 0) +
        (config.http?.locationZones?.length ?? 0) +
        (config.stream?.serverZones?.length ?? 0) +
        (config.resolvers?.length ?? 0) +
        1;
    return 256 * 1024 + objects * (workers * 2048 + 2048) + 3 * JSON.stringify(config).length;
}
//# sourceMappingURL=status.js.map