// What the status tree contains: the configured server zones, upstreams, caches and so
// on. It lives in a seqlocked record of the status zone, written by the process that
// creates the zones (and rewritten on reload), so that any process can serve the API
// without having read the configuration itself.

export interface ServerInfo {
  version: string;
  /** Build name; shown only when set. */
  build?: string;
}

export interface ServerZoneConfig {
  name: string;
  /** The server listens with SSL: the zone shows `ssl`. */
  ssl?: boolean;
}

export interface CacheShardConfig {
  path: string;
  maxSize?: number;
}

export interface CacheConfig {
  name: string;
  maxSize?: number;
  /** Cache sharding: one member per shard path. */
  shards?: CacheShardConfig[];
  /** Bytes of the cache's keys zone. */
  zoneSize?: number;
}

export interface LimitZoneConfig {
  name: string;
  /** Bytes of the zone that holds the keys. */
  zoneSize?: number;
  /** Request limits: requests per second each key may make (1r/m is 1/60). */
  rate?: number;
}

export interface PeerConfig {
  /** The server parameter as configured (`backend.local:8080`, `127.0.0.1:8081`). */
  server: string;
  /** The canonical `<ip>:<port>` the peer is keyed by; the server parameter by default. */
  name?: string;
  service?: string;
  weight?: number;
  backup?: boolean;
  down?: boolean;
  maxConns?: number;
  maxFails?: number;
  failTimeout?: number;
  /** Seconds, with millisecond precision. */
  slowStart?: number;
  /** HTTP only. */
  sid?: string;
}

export interface UpstreamConfig {
  name: string;
  /** The upstream's shared-memory zone: name (the upstream's by default) and bytes. */
  zone?: string;
  zoneSize?: number;
  peers: PeerConfig[];
  /** A request queue is configured (HTTP): the upstream shows `queue`. */
  queue?: boolean;
  /** Health probes are configured: peers show `health.probes`. */
  probes?: boolean;
  /** Smoothing factor, in percent, of header_time and response_time (default 90). */
  responseTimeFactor?: number;
  /** The balancing method (round robin when absent): it decides which peer parameters
   * /config accepts (`backup` not with random, hash or ip_hash). */
  method?: 'round_robin' | 'least_conn' | 'least_time' | 'random' | 'hash' | 'ip_hash';
  /** A state file (NGINX Plus's `state`): the peers /config made, kept across restarts. */
  state?: string;
}

export interface HttpConfig {
  serverZones?: ServerZoneConfig[];
  locationZones?: string[];
  caches?: CacheConfig[];
  limitConns?: LimitZoneConfig[];
  limitReqs?: LimitZoneConfig[];
  upstreams?: UpstreamConfig[];
}

export interface StreamConfig {
  serverZones?: ServerZoneConfig[];
  limitConns?: LimitZoneConfig[];
  upstreams?: UpstreamConfig[];
}

/** Everything the tree shows, as configured. */
export interface StatusConfig {
  server?: ServerInfo;
  http?: HttpConfig;
  stream?: StreamConfig;
  /** Resolver zones (`status_zone=` of a resolver). */
  resolvers?: string[];
}

/** The record: the configuration plus what reloads change. */
export interface Catalog extends StatusConfig {
  server: ServerInfo;
  /** Configuration reloads since the start. */
  generation: number;
  /** Time of the last (re)load, epoch milliseconds. */
  loadTime: number;
}

/** The shared-memory zones the configuration implies besides the status zone itself:
 * what `/status/slabs` lists, in order. */
export function slabZones(c: StatusConfig, workers: number): Array<{ name: string; size: number }> {
  const out: Array<{ name: string; size: number }> = [];
  const seen = new Set<string>();
  const add = (name: string, size: number | undefined, fallback: number) => {
    if (seen.has(name)) return;
    seen.add(name);
    out.push({ name, size: size ?? fallback });
  };
  for (const cache of c.http?.caches ?? []) add(cache.name, cache.zoneSize, 1 << 20);
  for (const limit of c.http?.limitConns ?? []) add(limit.name, limit.zoneSize, 1 << 20);
  for (const limit of c.http?.limitReqs ?? []) add(limit.name, limit.zoneSize, 1 << 20);
  for (const u of c.http?.upstreams ?? []) add(u.zone ?? u.name, u.zoneSize, upstreamZoneBytes(u, workers));
  for (const limit of c.stream?.limitConns ?? []) add(limit.name, limit.zoneSize, 1 << 20);
  for (const u of c.stream?.upstreams ?? []) add(u.zone ?? u.name, u.zoneSize, upstreamZoneBytes(u, workers));
  return out;
}

/** Room for an upstream's peers, and as many again added at run time: a peer's counter
 * block takes about 1.4 KiB per worker. */
function upstreamZoneBytes(u: UpstreamConfig, workers: number): number {
  return Math.max(64 * 1024, 2 * u.peers.length * (workers * 1536 + 1024));
}

/** The key a peer is known by: its canonical address. */
export function peerName(p: PeerConfig): string {
  return p.name ?? p.server;
}
