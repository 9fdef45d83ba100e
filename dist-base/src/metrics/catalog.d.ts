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
export declare function slabZones(c: StatusConfig, workers: number): Array<{
    name: string;
    size: number;
}>;
/** The key a peer is known by: its canonical address. */
export declare function peerName(p: PeerConfig): string;
