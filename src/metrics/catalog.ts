// What the status tree contains: the configured server zones, upstreams, caches and so
// on. It lives in a seqlocked record of the status zone, written by the process that
// creates the zones (and rewritten on reload), so that any process can serve the API
// without having read the configuration itself.
import { isIP } from 'node:net';

export interface ServerInfo {
  version: string;
  /** Build name; shown only when set. */
  build?: string;
}

/** `status_zone_histogram`: bounds in milliseconds, ascending; `true`: the default
 * bounds (metrics/histograms.ts); `false` or absent: no histogram (zonal's extension is
 * asked for, so that a tree is Angie's, and renders as fast, without it). */
export type HistogramSetting = readonly number[] | boolean;

export interface ServerZoneConfig {
  name: string;
  /** The server listens with SSL: the zone shows `ssl`. */
  ssl?: boolean;
  /** Bounds of the zone's response time histogram (HTTP zones). */
  histogram?: HistogramSetting;
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
  /** The canonical `<ip>:<port>` the peer connects to; the server parameter by default. */
  name?: string;
  /** The key of a further server of an address (`127.0.0.1:8081~2`, see peerKeyOf);
   * absent for the first, whose key is its address. */
  key?: string;
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
  /** The upstream's shared-memory zone: name (the upstream's by default) and bytes.
   * Several upstreams of one protocol may name one zone; its size is the one any gives. */
  zone?: string;
  zoneSize?: number;
  peers: PeerConfig[];
  /** A request queue is configured (HTTP): the upstream shows `queue`. */
  queue?: boolean;
  /** Health probes are configured: peers show `health.probes`. */
  probes?: boolean;
  /** An `essential` probe is configured: a peer starts `checking`, and takes traffic only
   * once a probe passed. */
  essential?: boolean;
  /** Smoothing factor, in percent, of header_time and response_time (default 90). */
  responseTimeFactor?: number;
  /** Bounds of the peers' histograms: response time (HTTP), connect and session time
   * (stream). */
  histogram?: HistogramSetting;
  /** The balancing method (round robin when absent): it decides which peer parameters
   * /config accepts (`backup` not with random, hash or ip_hash). */
  method?: 'round_robin' | 'least_conn' | 'least_time' | 'random' | 'hash' | 'ip_hash';
  /** A state file (NGINX Plus's `state`): the peers /config made, kept across restarts. */
  state?: string;
  /** Servers whose peers a resolver makes (`server <name> resolve`), as `server` and
   * `service` of the peers it makes: room is kept for their addresses (and for those
   * they replace while requests to them end), and a reload keeps their peers. */
  resolve?: Array<{ server: string; service?: string; params?: Omit<PeerConfig, 'server' | 'service' | 'name'> }>;
  /** The upstream has a resolver: /config takes host names and services too. */
  resolver?: boolean;
}

/**
 * Zones made at run time (Angie 1.8's `status_zone <key> zone=<name>:<count>`): each
 * request's key names a zone of the group, made the first time any worker records it, up
 * to `count` zones; past those, keys count in the zone `name`, which the group always has
 * (metrics/zone-groups.ts). A reload that keeps the group keeps its zones.
 */
export interface ZoneGroupConfig {
  /** The group, and its own zone: where keys past `count` are counted. */
  name: string;
  /** Most zones the group makes (Angie's `:count`); 0: every key counts in `name`. */
  count: number;
  /** Server zones: the group's zones show `ssl`. */
  ssl?: boolean;
  /** Bounds of the response time histogram of each of the group's zones. */
  histogram?: HistogramSetting;
}

export interface HttpConfig {
  serverZones?: ServerZoneConfig[];
  locationZones?: string[];
  /** Server zones made at run time, by group (`status_zone $host zone=hosts:100` in a
   * server). */
  serverZoneGroups?: ZoneGroupConfig[];
  /** Location zones made at run time, by group (`status_zone $uri zone=routes:100` in a
   * location; route zones of an embedding framework). */
  locationZoneGroups?: ZoneGroupConfig[];
  /** Location zones whose histogram is not the default, by name. */
  locationHistograms?: Record<string, HistogramSetting>;
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
  /** Shared TLS session caches (`ssl_session_cache shared:<name>:<size>`), of both
   * blocks: zones of their own, in /status/slabs as nginx's are in Angie's. */
  sslSessionCaches?: Array<{ name: string; zoneSize: number }>;
  /** zonal's `workers` member: each worker's Node runtime metrics, as the workers that
   * run runtimeMetrics() (metrics/runtime.ts) sample them. Absent by default, so that the
   * tree is the spec's unless asked. */
  runtime?: boolean;
  /** zonal's `config_store` member: the upstreams are kept in a store the primary
   * watches (metrics/config-store.ts). */
  configStore?: boolean;
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
  const upstreams = (list: readonly UpstreamConfig[] | undefined) => {
    for (const u of list ?? []) {
      const zone = u.zone ?? u.name;
      if (seen.has(zone)) continue;
      // Several upstreams may share a zone: its size is the one given (once is enough),
      // else room for all of them.
      const sharing = list!.filter((x) => (x.zone ?? x.name) === zone);
      const given = sharing.find((x) => x.zoneSize !== undefined)?.zoneSize;
      add(zone, given, Math.max(64 * 1024, sharing.reduce((n, x) => n + upstreamBytes(x, workers), 0)));
    }
  };
  for (const cache of c.http?.caches ?? []) add(cache.name, cache.zoneSize, 1 << 20);
  for (const limit of c.http?.limitConns ?? []) add(limit.name, limit.zoneSize, 1 << 20);
  for (const limit of c.http?.limitReqs ?? []) add(limit.name, limit.zoneSize, 1 << 20);
  upstreams(c.http?.upstreams);
  for (const limit of c.stream?.limitConns ?? []) add(limit.name, limit.zoneSize, 1 << 20);
  upstreams(c.stream?.upstreams);
  for (const cache of c.sslSessionCaches ?? []) add(cache.name, cache.zoneSize, 1 << 20);
  return out;
}

/** Room for an upstream's peers, and as many again added at run time: a peer's counter
 * block takes about 1.4 KiB per worker, its histograms (two for stream peers) about
 * 0.3 KiB each per worker. A name's addresses may change every TTL, and a
 * peer that went keeps its memory for a minute (metrics/peers.ts RETIRE_MS): 32 peers'
 * room for each. */
function upstreamBytes(u: UpstreamConfig, workers: number): number {
  return 2 * (u.peers.length + 16 * (u.resolve?.length ?? 0)) * (workers * 2304 + 1536);
}

/** The key a peer is known by in /status and /config: its canonical address, or for a
 * further server of one address, that address and its ordinal (peerKeyOf). */
export function peerName(p: PeerConfig): string {
  return p.key ?? p.name ?? p.server;
}

/** Where a peer connects: its canonical address (the server parameter when it is one). */
export function peerAddress(p: PeerConfig): string {
  return p.name ?? p.server;
}

/**
 * nginx keeps `server A; server A;` as two peers. Both are keyed in URL paths, where the
 * key must need no escaping: the first by the address, each further one by the address,
 * `~` (unreserved in URLs, in no address) and an ordinal from 2: `127.0.0.1:8081~2`.
 */
export const peerKeyOf = (address: string, ordinal: number): string => (ordinal === 1 ? address : `${address}~${ordinal}`);

/** A key of a further server (`<server>~<n>`, n from 2): the server as written and n;
 * undefined for a name with no `~`; an error for a `~` not followed by such an n. */
export function splitPeerKey(text: string): { server: string; ordinal: number } | { error: string } | undefined {
  const tilde = text.lastIndexOf('~');
  if (tilde < 0) return undefined;
  const ordinal = text.slice(tilde + 1);
  if (!/^[1-9]\d{0,5}$/.test(ordinal) || ordinal === '1')
    return { error: `"${text}" is no server key: a further server of an address is keyed "<address>~<n>", n a whole number from 2` };
  return { server: text.slice(0, tilde), ordinal: Number(ordinal) };
}

/** A peer's address as the upstream `server` directive and /config take it. */
export interface PeerAddress {
  /** `127.0.0.1`, `::1` (no brackets, compressed). */
  readonly host: string;
  readonly port: number;
  /** Canonical `<ip>:<port>`, IPv6 in brackets: the key the peer goes by. */
  readonly address: string;
}

/** Why a server name was refused; `resolver` when it is a name only a resolver could
 * turn into addresses (a host name, an SRV service). */
export interface PeerAddressError {
  readonly error: string;
  readonly resolver?: true;
}

/**
 * The one reader of a peer's server name, for the configuration file, the state file and
 * /config alike, so that each takes exactly the forms the others take: an IPv4 address or
 * a bracketed IPv6 address, with a port (80 when absent, as nginx has it), or `localhost`,
 * which is 127.0.0.1 (what nginx's resolution of it gives on a usual /etc/hosts). A name
 * resolved at every connect by the OS would be a peer keyed by name whose addresses
 * nobody counts: any other host name, and the `<service>@` of SRV lookups, are refused
 * with a message saying a resolver is needed. The configuration's `server <name>
 * resolve` takes them (server/resolver/config.ts): its resolver makes the peers, each
 * keyed by its address.
 * Messages are nginx's (`invalid port in upstream "..."`).
 */
export function parsePeerAddress(text: string): PeerAddress | PeerAddressError {
  // A unix domain socket: named `unix:<path>` (as Angie's API names it), with no port.
  if (text.startsWith('unix:')) return text.length > 5 ? { host: text, port: 0, address: text } : { error: `no path in upstream "${text}"` };
  const at = text.indexOf('@');
  if (at >= 0)
    return {
      error: `the server "${text}" names the service "${text.slice(0, at)}", which needs a resolver to look up its SRV records: the configuration follows one with "server ${text.slice(at + 1)} service=${text.slice(0, at)} resolve" and a "resolver"; here write an IP address and port`,
      resolver: true,
    };
  let host: string;
  let port: string | undefined;
  let v6 = false;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    const inner = close < 0 ? '' : text.slice(1, close);
    const rest = close < 0 ? '' : text.slice(close + 1);
    if (close < 0 || isIP(inner) !== 6 || (rest !== '' && !rest.startsWith(':'))) return { error: `invalid IPv6 address in upstream "${text}"` };
    // The compressed spelling, so that `[0::1]` and `[::1]` are one peer.
    host = new URL(`http://[${inner}]/`).hostname.slice(1, -1);
    port = rest ? rest.slice(1) : undefined;
    v6 = true;
  } else {
    const colon = text.lastIndexOf(':');
    host = colon < 0 ? text : text.slice(0, colon);
    port = colon < 0 ? undefined : text.slice(colon + 1);
    if (host === '') return { error: `no host in upstream "${text}"` };
  }
  const n = port === undefined ? 80 : /^\d{1,5}$/.test(port) ? Number(port) : 0;
  if (n < 1 || n > 65535) return { error: `invalid port in upstream "${text}"` };
  if (!v6) {
    if (host.toLowerCase() === 'localhost') host = '127.0.0.1';
    else if (isIP(host) !== 4) {
      // A colon left in the host is an IPv6 address without its brackets, no name.
      if (host.includes(':')) return { error: `invalid IPv6 address in upstream "${text}": IPv6 addresses are written in brackets` };
      return {
        error: `the server "${text}" is a host name, which needs a resolver: the configuration follows one with "server ${text} resolve" and a "resolver"; here write an IP address and port`,
        resolver: true,
      };
    }
  }
  return { host, port: n, address: `${v6 ? `[${host}]` : host}:${n}` };
}

export const isPeerAddressError = (a: PeerAddress | PeerAddressError): a is PeerAddressError => 'error' in a;

/** A name a resolver follows, as /config and the state file write one: `host[:port]`
 * (port 80 when absent) or `<service>@host` (the ports from its SRV records). */
export interface PeerName {
  /** As a peer made from it shows it: `app.test:8080`, or `app.test` with a service. */
  readonly server: string;
  readonly service?: string;
  readonly host: string;
  /** 0 with a service. */
  readonly port: number;
}

const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

export function parsePeerName(text: string): PeerName | PeerAddressError {
  const at = text.indexOf('@');
  const service = at < 0 ? undefined : text.slice(0, at);
  const rest = at < 0 ? text : text.slice(at + 1);
  if (service !== undefined && !/^[A-Za-z0-9_.-]{1,63}$/.test(service)) return { error: `invalid service "${service}" in "${text}"` };
  const colon = rest.lastIndexOf(':');
  const host = (colon < 0 ? rest : rest.slice(0, colon)).toLowerCase();
  const port = colon < 0 ? undefined : rest.slice(colon + 1);
  if (!HOST_NAME.test(host)) return { error: `invalid host name "${host}" in "${text}"` };
  if (service !== undefined && port !== undefined) return { error: `the server "${text}" has a port and a service: the SRV records give the ports` };
  const n = port === undefined ? 80 : /^\d{1,5}$/.test(port) ? Number(port) : 0;
  if (n < 1 || n > 65535) return { error: `invalid port in "${text}"` };
  return service !== undefined ? { server: host, service, host, port: 0 } : { server: `${host}:${n}`, host, port: n };
}
