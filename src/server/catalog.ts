// What the status tree lists for a configuration: the server zones of `status_zone` in
// servers and the location zones of `status_zone` in locations, in order of appearance
// (with the groups of zones `status_zone <key> zone=<name>:<count>` makes at run time),
// and every upstream with its peers; the same for the stream block. Admin servers have
// no zones: their traffic is not counted.
import type { CacheZone } from './cache/config.js';
import type { CacheConfig, HistogramSetting, PeerConfig, StatusConfig, UpstreamConfig, ZoneGroupConfig } from '../metrics/catalog.js';
import type { LocationConfig, PeerParams, ServerConfig, StatusZoneKey, UpstreamBlockConfig } from './config/model.js';

/** A configured peer as /config holds one: only what differs from the defaults /config
 * shows with `defaults=on` (src/api/config.ts PARAMS), so that GET /config shows what a
 * peer sets, as for a peer /config made, and the status tree's own defaults fill the
 * rest. Times are seconds there (`slow_start` to the millisecond). */
export function peerConfig(p: PeerParams): PeerConfig {
  return {
    server: p.server,
    ...(p.service !== undefined ? { service: p.service } : {}),
    // The key peers go by; /config's own peers need none when the server is the address.
    ...(p.address !== p.server ? { name: p.address } : {}),
    ...(p.weight !== 1 ? { weight: p.weight } : {}),
    ...(p.maxConns !== 0 ? { maxConns: p.maxConns } : {}),
    ...(p.maxFails !== 1 ? { maxFails: p.maxFails } : {}),
    ...(p.failTimeout !== 10_000 ? { failTimeout: p.failTimeout / 1000 } : {}),
    ...(p.slowStart !== 0 ? { slowStart: p.slowStart / 1000 } : {}),
    ...(p.backup ? { backup: true } : {}),
    ...(p.down ? { down: true } : {}),
    ...(p.sid !== undefined ? { sid: p.sid } : {}),
  };
}

/** A `server <name> resolve` as /config shows it: its name and the parameters its
 * peers are made with. */
function resolvedServer(p: PeerParams): NonNullable<UpstreamConfig['resolve']>[number] {
  const { server, service, name: _address, ...params } = peerConfig(p);
  return { server, ...(service !== undefined ? { service } : {}), params };
}

/** Every upstream is counted, implicit ones too (every proxied request is); a zone
 * without a name is the upstream's, without a size the runtime's choice. */
function upstreamConfig(u: UpstreamBlockConfig): UpstreamConfig {
  return {
    name: u.name,
    ...(u.zone ? { zone: u.zone.name } : {}),
    ...(u.zone?.size !== undefined ? { zoneSize: u.zone.size } : {}),
    // The peers of `resolve` servers are their addresses, which the resolver adds
    // (resolver/peers.ts).
    peers: u.servers.filter((p) => !p.resolve).map(peerConfig),
    ...(u.servers.some((p) => p.resolve) ? { resolve: u.servers.filter((p) => p.resolve).map(resolvedServer) } : {}),
    ...(u.resolver ? { resolver: true } : {}),
    ...(u.probes?.length ? { probes: true } : {}),
    ...(u.probes?.some((p) => p.essential) ? { essential: true } : {}),
    ...(u.queue ? { queue: true } : {}),
    responseTimeFactor: u.responseTimeFactor,
    method: u.method.kind,
    ...(u.state !== undefined ? { state: u.state } : {}),
    ...(u.histogram !== undefined ? { histogram: u.histogram } : {}),
  };
}

/** A cache as the status shows it: sizes in bytes; with several paths, its shards. */
function cacheConfig(z: CacheZone): CacheConfig {
  const sharded = z.paths.length > 1;
  const maxSize = sharded ? (z.paths.every((p) => p.maxSize > 0) ? z.paths.reduce((n, p) => n + p.maxSize, 0) : 0) : z.paths[0].maxSize;
  return {
    name: z.name,
    zoneSize: z.size,
    ...(maxSize > 0 ? { maxSize } : {}),
    ...(sharded ? { shards: z.paths.map((p) => (p.maxSize > 0 ? { path: p.path, maxSize: p.maxSize } : { path: p.path })) } : {}),
  };
}

export function statusConfigOf(config: ServerConfig): StatusConfig {
  const serverZones = new Map<string, boolean>();
  const locationZones = new Set<string>();
  // A zone's histogram bounds: those where it first appears (a zone is one histogram).
  const serverHistograms = new Map<string, HistogramSetting | undefined>();
  const locationHistograms = new Map<string, HistogramSetting | undefined>();
  // Zones made at run time (`status_zone <key> zone=<name>:<count>`): a group's count is
  // the largest any of its `status_zone` writes, as Angie takes it; a zone of the same name
  // written without a key counts 0 towards it.
  const serverCounts = new Map<string, number>();
  const locationCounts = new Map<string, number>();
  const count = (counts: Map<string, number>, zone: string, key: StatusZoneKey | undefined) =>
    counts.set(zone, Math.max(counts.get(zone) ?? 0, key?.count ?? 0));
  const addLocation = (zone: string, key: StatusZoneKey | undefined, histogram: HistogramSetting | undefined) => {
    locationZones.add(zone);
    count(locationCounts, zone, key);
    if (!locationHistograms.has(zone)) locationHistograms.set(zone, histogram);
  };
  const visit = (locations: readonly LocationConfig[]) => {
    for (const l of locations) {
      if (l.statusZone) addLocation(l.statusZone, l.statusZoneKey, l.histogram);
      for (const i of l.ifs ?? []) if (i.statusZone) addLocation(i.statusZone, i.statusZoneKey, i.histogram);
      visit(l.locations);
    }
  };
  for (const s of config.http?.servers ?? []) {
    if (s.admin) continue;
    // Servers may share a zone: it shows `ssl` when any of them listens with SSL.
    if (s.statusZone) serverZones.set(s.statusZone, (serverZones.get(s.statusZone) ?? false) || s.listens.some((l) => l.ssl));
    if (s.statusZone && !serverHistograms.has(s.statusZone)) serverHistograms.set(s.statusZone, s.histogram);
    if (s.statusZone) count(serverCounts, s.statusZone, s.statusZoneKey);
    visit(s.locations);
  }
  // A group with no count is a zone like any other: every key counts in it.
  const groups = (counts: Map<string, number>, settings: (zone: string) => Omit<ZoneGroupConfig, 'name' | 'count'>): ZoneGroupConfig[] =>
    [...counts].filter(([, n]) => n > 0).map(([name, n]) => ({ name, count: n, ...settings(name) }));
  const serverZoneGroups = groups(serverCounts, (zone) => {
    const histogram = serverHistograms.get(zone);
    return { ...(serverZones.get(zone) ? { ssl: true } : {}), ...(histogram !== undefined ? { histogram } : {}) };
  });
  const locationZoneGroups = groups(locationCounts, (zone) => {
    const histogram = locationHistograms.get(zone);
    return histogram !== undefined ? { histogram } : {};
  });
  const notDefault = [...locationHistograms].filter((e): e is [string, HistogramSetting] => e[1] !== undefined);
  const zones = config.http?.limitZones ?? [];
  const limit = (z: (typeof zones)[number]) => ({ name: z.name, zoneSize: z.size, ...(z.rate !== undefined ? { rate: z.rate } : {}) });
  // Stream servers may share a zone too, and show `ssl` the same way.
  const streamZones = new Map<string, boolean>();
  for (const s of config.stream?.servers ?? [])
    if (s.statusZone) streamZones.set(s.statusZone, (streamZones.get(s.statusZone) ?? false) || s.listens.some((l) => l.ssl));
  return {
    http: {
      serverZones: [...serverZones].map(([name, ssl]) => {
        const histogram = serverHistograms.get(name);
        return { name, ...(ssl ? { ssl } : {}), ...(histogram !== undefined ? { histogram } : {}) };
      }),
      locationZones: [...locationZones],
      ...(notDefault.length ? { locationHistograms: Object.fromEntries(notDefault) } : {}),
      ...(serverZoneGroups.length ? { serverZoneGroups } : {}),
      ...(locationZoneGroups.length ? { locationZoneGroups } : {}),
      ...(config.http?.caches ? { caches: config.http.caches.map(cacheConfig) } : {}),
      ...(zones.some((z) => z.kind === 'conn') ? { limitConns: zones.filter((z) => z.kind === 'conn').map(limit) } : {}),
      ...(zones.some((z) => z.kind === 'req') ? { limitReqs: zones.filter((z) => z.kind === 'req').map(limit) } : {}),
      upstreams: (config.http?.upstreams ?? []).map(upstreamConfig),
    },
    // One `resolvers` family for both blocks: a zone named in both is one zone.
    ...(config.http?.resolverZones || config.stream?.resolverZones
      ? { resolvers: [...new Set([...(config.http?.resolverZones ?? []), ...(config.stream?.resolverZones ?? [])])] }
      : {}),
    ...sslSessionCaches(config),
    // status_runtime on: each worker's runtime, after the spec's members.
    ...(config.statusRuntime ? { runtime: true } : {}),
    ...(config.configStore ? { configStore: true } : {}),
    ...(config.stream
      ? {
          stream: {
            serverZones: [...streamZones].map(([name, ssl]) => (ssl ? { name, ssl } : { name })),
            upstreams: config.stream.upstreams.map(upstreamConfig),
            ...(config.stream.limitZones.length ? { limitConns: config.stream.limitZones.map((z) => ({ name: z.name, zoneSize: z.size })) } : {}),
          },
        }
      : {}),
  };
}

/** The shared TLS session caches the servers of both blocks name, once each (the first
 * size written is the zone's). */
function sslSessionCaches(config: ServerConfig): { sslSessionCaches?: Array<{ name: string; zoneSize: number }> } {
  const caches = new Map<string, number>();
  for (const s of [...(config.http?.servers ?? []), ...(config.stream?.servers ?? [])]) {
    const shared = s.ssl?.sessionCache.shared;
    if (shared && !caches.has(shared.name)) caches.set(shared.name, shared.size);
  }
  return caches.size ? { sslSessionCaches: [...caches].map(([name, zoneSize]) => ({ name, zoneSize })) } : {};
}
