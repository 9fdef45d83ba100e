// Zones made at run time, bounded: Angie 1.8's `status_zone <key> zone=<name>:<count>`
// (src/http/ngx_http_core_module.c ngx_http_core_status_zone, and ngx_http_get_stats_zone
// in src/http/ngx_http_request.c). A group, declared in the catalog, is the zone `name`
// and up to `count` zones more, each named by a request's key the first time a worker
// sees it; once `count` are made, a new key counts in the zone `name`, the group's
// overflow. Nothing is dropped: an empty key, or one over 256 bytes, is not a zone and is
// not counted anywhere, as in Angie.
//
// Each group keeps the names it made in a seqlocked record of the status zone, in the
// order made. A worker that meets an unknown key makes the zone's memory first, then adds
// the name by compare-and-swap of the record: two workers adding different names at once
// both read the same list, one write wins and the other reads the list again, so the list
// never grows past `count`. A name is listed only once its memory exists, so a render never
// meets a listed zone without one. The catalog record is not written: the reload count
// (`generation` of /status/server) does not move when a zone is made.
//
// A key that already names a zone of the family (a configured one, or one another group
// made) counts in that zone: the family's members are one object, keyed by name.
import { ZoneFullError } from '../engine/index.js';
import type { HttpConfig, StatusConfig, ZoneGroupConfig } from './catalog.js';
import { STATUS_ZONE, type StatusStore } from './store.js';

export type { ZoneGroupConfig };

/** The families whose zones a group can make: HTTP server zones and location zones. */
export type ZoneFamily = 'server_zones' | 'location_zones';

/** Angie's NGX_HTTP_STATS_ZONE_KEY_SIZE: a longer key is no zone. */
export const ZONE_KEY_BYTES = 256;

/** Most zones one group may make (its memory is kept from the start). */
export const MAX_GROUP_COUNT = 10_000;

/** The group declarations of a family, as the catalog has them. */
export function groupsOf(http: HttpConfig | undefined, family: ZoneFamily): readonly ZoneGroupConfig[] {
  return (family === 'server_zones' ? http?.serverZoneGroups : http?.locationZoneGroups) ?? NONE;
}
const NONE: readonly ZoneGroupConfig[] = [];

/** A zone's name in the keys of its blocks: names a configuration writes are themselves,
 * a name made from a key (which may hold '/') is percent-encoded, so that no two names
 * share a key and no name reaches into another's keys (`<zone>/codes`, ...). */
export function zoneKeyName(name: string): string {
  return SAFE.test(name) ? name : encodeURIComponent(name);
}
const SAFE = /^[A-Za-z0-9_.-]*$/;

/** Whether a request's key can name a zone: not empty, at most 256 bytes of UTF-8, and
 * text (no lone surrogate, which no request yields but an embedding caller might pass). */
export function isZoneKey(key: string): boolean {
  if (key.length === 0 || key.length > ZONE_KEY_BYTES || Buffer.byteLength(key) > ZONE_KEY_BYTES) return false;
  if (SAFE.test(key)) return true;
  try {
    encodeURIComponent(key);
    return true;
  } catch {
    return false;
  }
}

/** The catalog with each group's own zone among its family's zones (where a configuration
 * lists it, or last), so that every reader of the catalog sees the overflow zones. */
export function withGroupZones(config: StatusConfig): StatusConfig {
  const http = config.http;
  const servers = groupsOf(http, 'server_zones');
  const locations = groupsOf(http, 'location_zones');
  if (!servers.length && !locations.length) return config;
  for (const g of [...servers, ...locations])
    if (!Number.isInteger(g.count) || g.count < 0 || g.count > MAX_GROUP_COUNT)
      throw new RangeError(`zone group "${g.name}": count must be a whole number from 0 to ${MAX_GROUP_COUNT}, not ${g.count}`);
  const serverZones = [...(http?.serverZones ?? [])];
  for (const g of servers)
    if (!serverZones.some((z) => z.name === g.name))
      serverZones.push({ name: g.name, ...(g.ssl ? { ssl: true } : {}), ...(g.histogram !== undefined ? { histogram: g.histogram } : {}) });
  const locationZones = [...(http?.locationZones ?? [])];
  const histograms = { ...http?.locationHistograms };
  for (const g of locations) {
    if (!locationZones.includes(g.name)) locationZones.push(g.name);
    if (g.histogram !== undefined && !(g.name in histograms)) histograms[g.name] = g.histogram;
  }
  return {
    ...config,
    http: { ...http, serverZones, locationZones, ...(Object.keys(histograms).length ? { locationHistograms: histograms } : {}) },
  };
}

/** Bytes of the status zone a family's groups may take: every zone they may make (and as
 * many again as writers, for the memory a worker makes for a name another worker's write
 * beat to the last place: kept for that name, never lost), and their lists of names. */
export function zoneGroupBytes(config: StatusConfig, workers: number): number {
  let bytes = 0;
  for (const g of [...groupsOf(config.http, 'server_zones'), ...groupsOf(config.http, 'location_zones')]) {
    const zones = g.count + Math.min(g.count, workers);
    // A zone's block, its codes, its histogram and directory entries, as for configured
    // zones (status.ts); a name in the list, JSON-escaped, in the old and the new copy.
    bytes += zones * (workers * 2560 + 2560) + 2 * g.count * (6 * ZONE_KEY_BYTES + 8) + 4096;
  }
  return bytes;
}

/** The key of a group's record of the names it made. */
function recordKey(family: ZoneFamily, group: string): string {
  return `http/${family}/${zoneKeyName(group)}/zones`;
}

/** The names a group made so far, in the order made. */
export function groupZoneNames(status: StatusStore, family: ZoneFamily, group: string): readonly string[] {
  return status.record(STATUS_ZONE, recordKey(family, group)).readJSON<string[]>() ?? NONE_NAMES;
}
const NONE_NAMES: readonly string[] = [];

/** The same names as a set, made once per list. */
function nameSet(names: readonly string[]): ReadonlySet<string> {
  let set = sets.get(names);
  if (!set) sets.set(names, (set = new Set(names)));
  return set;
}
const sets = new WeakMap<readonly string[], ReadonlySet<string>>();

/** One atomic load: changes each time the group makes a zone. */
export function groupGeneration(status: StatusStore, family: ZoneFamily, group: string): number {
  return status.record(STATUS_ZONE, recordKey(family, group)).generation;
}

/** Rewrites a group's names by compare-and-swap; false when the zone has no room. */
function updateNames(status: StatusStore, family: ZoneFamily, group: string, change: (names: readonly string[]) => readonly string[] | undefined): boolean {
  const record = status.record(STATUS_ZONE, recordKey(family, group));
  for (let attempt = 0; attempt < 1000; attempt++) {
    const generation = record.generation;
    const next = change(record.readJSON<string[]>() ?? NONE_NAMES);
    if (next === undefined) return true;
    const written = record.writeIf(Buffer.from(JSON.stringify(next)), generation);
    if (written === 'written') return true;
    if (written === 'no-room') return false;
  }
  throw new Error(`zone group "${group}": 1000 concurrent changes of its names in a row came first`);
}

/**
 * What a reload does to the groups: a group the new catalog keeps with the same or a
 * larger count keeps its zones; one whose count shrank keeps its first `count`; one it no
 * longer has loses them all. A zone dropped from the list keeps its memory (a draining
 * worker may still count in it): named again later, it goes on from its counts.
 */
export function reloadZoneGroups(status: StatusStore, old: StatusConfig, next: StatusConfig): void {
  for (const family of ['server_zones', 'location_zones'] as const) {
    for (const g of groupsOf(old.http, family)) {
      const kept = groupsOf(next.http, family).find((n) => n.name === g.name);
      const count = kept?.count ?? 0;
      updateNames(status, family, g.name, (names) => (names.length > count ? names.slice(0, count) : undefined));
    }
  }
}

/** What a family's members are, configured and made: the configured list with each
 * group's zones right after the group's own zone, each name once (a group's own zone is
 * among the configured ones: withGroupZones()). */
function listedZones<Z extends { readonly name: string }>(
  status: StatusStore,
  family: ZoneFamily,
  configured: readonly Z[],
  made: (group: ZoneGroupConfig, name: string) => Z,
): readonly Z[] {
  const groups = groupsOf(status.catalog().http, family);
  if (!groups.length) return configured;
  const out: Z[] = [];
  const seen = new Set<string>();
  for (const z of configured) {
    if (seen.has(z.name)) continue;
    seen.add(z.name);
    out.push(z);
    const g = groups.find((x) => x.name === z.name);
    if (!g) continue;
    for (const name of groupZoneNames(status, family, g.name)) {
      if (seen.has(name)) continue;
      seen.add(name);
      out.push(made(g, name));
    }
  }
  return out;
}

/**
 * A family's members as a render walks them, the same array until something changes (a
 * new catalog, or a group's new zone), so that a collection encodes their keys once.
 */
export class ListedZones<Z extends { readonly name: string }> {
  private configured: readonly Z[] | undefined;
  private generations: number[] = [];
  private list: readonly Z[] = [];
  private readonly made = new Map<string, Z>();

  constructor(
    private readonly status: StatusStore,
    private readonly family: ZoneFamily,
    private readonly make: (group: ZoneGroupConfig, name: string) => Z,
  ) {}

  of(configured: readonly Z[]): readonly Z[] {
    const groups = groupsOf(this.status.catalog().http, this.family);
    if (!groups.length) return configured;
    let same = configured === this.configured && this.generations.length === groups.length;
    for (let i = 0; i < groups.length; i++) {
      const g = groupGeneration(this.status, this.family, groups[i].name);
      if (this.generations[i] !== g) {
        this.generations[i] = g;
        same = false;
      }
    }
    this.generations.length = groups.length;
    if (same) return this.list;
    this.configured = configured;
    return (this.list = listedZones(this.status, this.family, configured, (group, name) => {
      const key = `${group.name}\0${name}`;
      let z = this.made.get(key);
      if (!z) this.made.set(key, (z = this.make(group, name)));
      return z;
    }));
  }
}

/**
 * A group's recording side in one process: `recorder(key)` gives the recorder of the zone
 * the key names, making the zone the first time any worker sees the key, or the group's
 * own zone's once the group is full. Recorders of made zones are kept (at most the group's
 * count, and the family's configured zones); keys that overflow are not, so that a flood
 * of distinct keys costs no memory.
 */
export class ZoneGroup<R> {
  private readonly known = new Map<string, R>();
  private catalogGeneration = -1;
  private config: ZoneGroupConfig | undefined;
  /** The group's record generation at which it was found full, and its names then: a
   * key another worker listed before is its zone, full or not. */
  private fullAt = -1;
  private fullNames: ReadonlySet<string> = new Set();
  private overflow: R | undefined;
  private configured = new Set<string>();

  constructor(
    private readonly status: StatusStore,
    readonly family: ZoneFamily,
    readonly name: string,
    /** The recorder of a zone, its memory made (throws ZoneFullError when there is no
     * room); `group` for a zone the group makes, undefined for an existing one. */
    private readonly recorderOf: (zone: string, group: ZoneGroupConfig | undefined) => R,
  ) {
    // A name the catalog does not declare is a mistake to say at once: its counts would
    // go where no render looks. (One a later reload drops counts nowhere: see recorder().)
    if (!groupsOf(status.catalog().http, family).some((g) => g.name === name))
      throw new Error(`no zone group "${name}" in the catalog's http.${family === 'server_zones' ? 'serverZoneGroups' : 'locationZoneGroups'}`);
  }

  /** The recorder for a request whose key is `key`; undefined when the key names no zone
   * (empty, or over 256 bytes): that request is not counted, as in Angie; undefined too
   * once a reload has dropped the group (a draining worker's requests). */
  recorder(key: string): R | undefined {
    if (this.status.generation !== this.catalogGeneration) this.refresh();
    const r = this.known.get(key);
    if (r !== undefined) return r;
    if (!isZoneKey(key)) return undefined;
    const config = this.config;
    if (!config) return undefined;
    if (this.configured.has(key)) return this.keep(key, this.recorderOf(key, undefined));
    // A zone another group made is that zone.
    for (const g of groupsOf(this.status.catalog().http, this.family))
      if (g.name !== this.name && nameSet(groupZoneNames(this.status, this.family, g.name)).has(key)) return this.keep(key, this.recorderOf(key, g));
    return this.claim(config, key);
  }

  /** The names this group made so far, in the order made. */
  zones(): readonly string[] {
    return groupZoneNames(this.status, this.family, this.name);
  }

  private claim(config: ZoneGroupConfig, key: string): R | undefined {
    const generation = groupGeneration(this.status, this.family, this.name);
    if (generation === this.fullAt) return this.fullNames.has(key) ? this.keep(key, this.recorderOf(key, config)) : this.own();
    let made: R | undefined;
    let full = false;
    const listed = updateNames(this.status, this.family, this.name, (names) => {
      full = false;
      if (nameSet(names).has(key)) return undefined;
      if (names.length >= config.count) {
        full = true;
        return undefined;
      }
      // The memory first: a name is listed only once its zone exists.
      if (made === undefined) {
        try {
          made = this.recorderOf(key, config);
        } catch (e) {
          if (!(e instanceof ZoneFullError)) throw e;
          full = true;
          return undefined;
        }
      }
      return [...names, key];
    });
    if (!listed || full) {
      if (listed) {
        this.fullAt = groupGeneration(this.status, this.family, this.name);
        this.fullNames = nameSet(groupZoneNames(this.status, this.family, this.name));
      }
      return this.own();
    }
    return this.keep(key, made ?? this.recorderOf(key, config));
  }

  private keep(key: string, r: R): R {
    this.known.set(key, r);
    return r;
  }

  /** The group's own zone: where keys past its count go. */
  private own(): R {
    return (this.overflow ??= this.keep(this.name, this.recorderOf(this.name, undefined)));
  }

  /** A new catalog (a reload): the group's count and settings, and the family's
   * configured zones, read again, and each key found again (a reload may have dropped
   * zones from the group's list). */
  private refresh(): void {
    this.catalogGeneration = this.status.generation;
    const http = this.status.catalog().http;
    this.config = groupsOf(http, this.family).find((g) => g.name === this.name);
    this.configured = new Set(this.family === 'server_zones' ? (http?.serverZones ?? []).map((z) => z.name) : (http?.locationZones ?? []));
    this.fullAt = -1;
    this.known.clear();
    this.overflow = undefined;
  }
}
