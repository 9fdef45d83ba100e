// The package's front door: `import { ... } from 'zonal'` (and `require('zonal')`) gives
// the whole public API. The only module that may import from every layer (DESIGN.md);
// nothing in src/ imports it. What is not exported here is not public.

// The engine: zones, counter blocks, gauges, cells, records, histograms, limit tables,
// worker slots (what `zonal` exported before it had this file).
export * from './engine/index.js';

// The status: what exists, declared once by the creating process, attached by the others.
export { Status, ZONAL_VERSION, STATUS_ZONE, type CreateStatusOptions, type AttachStatusOptions } from './metrics/status.js';
export type { StatusStore } from './metrics/store.js';
export { peerName } from './metrics/catalog.js';
export type {
  Catalog,
  StatusConfig,
  ServerInfo,
  HttpConfig,
  StreamConfig,
  ServerZoneConfig,
  UpstreamConfig,
  PeerConfig,
  CacheConfig,
  CacheShardConfig,
  LimitZoneConfig,
  HistogramSetting,
} from './metrics/catalog.js';
export { DEFAULT_BOUNDS } from './metrics/histograms.js';

// The recorders of every metric family.
export { connections, Connections } from './metrics/connections.js';
export { serverZones, locationZones, HttpZone } from './metrics/http-zones.js';
export { streamZone, StreamZone, streamServerZones, repairStreamZones, type SessionStatus } from './metrics/stream-zones.js';
export { peer, Peer, upstream, Upstream, PeerState, repairSlot, type Protocol } from './metrics/upstreams.js';
export { peerSet, peerGeneration, type PeerSet, type PeerEntry } from './metrics/peers.js';
export { cache, Cache, caches, type CacheStatus } from './metrics/caches.js';
export { resolver, Resolver, resolvers, type ResolverQuery } from './metrics/resolvers.js';

// Limits: nginx's limit_req and limit_conn across a cluster, and their counts.
export {
  httpLimitReqs,
  httpLimitConns,
  streamLimitConns,
  LimitReq,
  LimitConn,
  RequestLimiter,
  ConnectionLimiter,
  limitRequest,
  repairLimitSlot,
  HOLD_TAKEN,
  HOLD_NONE,
  HOLD_REFUSED,
  type RequestLimit,
  type LimitReqResult,
  type LimitReqDecision,
  type LimitReqOptions,
  type LimitConnOptions,
  type LimitRelease,
} from './metrics/limits.js';

// The API handler: /status/ and /config/, transport-independent.
export { createApi, bodyText, type ApiOptions, type ApiHandler, type ApiMount, type ApiRequest, type ApiResponse, type ApiStream, type ConfigChange } from './api/index.js';
export { liveAnswers } from './api/live.js';

// Both listeners: the API's own (uWebSockets.js when installed, else node:http), and the
// mount into node:http and what is built on it.
export { serveApi, uwsAvailable, type ServeApiOptions, type ApiServer, type TransportHandler } from './transport/uws.js';
export { apiListener, mountApi, serveHttpApi, BODY_LIMIT, type ApiListener, type ApiListenerOptions } from './transport/http.js';

// The server's DNS client, which counts lookups in a resolver zone, and its balancer over
// an upstream's live peers.
export {
  DnsResolver,
  DnsError,
  RCODE,
  type DnsResolverOptions,
  type DnsServer,
  type ResolverRecorder,
  type Addresses,
  type ServiceRecord,
  type Services,
} from './server/resolver/dns.js';
export { Balancer, type BalancerOptions, type Chosen, type NoPeer } from './server/upstream/balancer.js';
export type { BalancingMethod } from './server/config/model.js';

// Zones made at run time, bounded: route and server zones an app names as it runs.
export type { ZoneGroupConfig, ZoneGroup, ZoneFamily } from './metrics/zone-groups.js';

// Each worker's Node runtime (event loop, GC, heap, CPU, handles) under /status/workers.
export { runtimeMetrics, type RuntimeMetrics, type RuntimeMetricsOptions } from './metrics/runtime.js';

// One line per app: the status zonal makes for an app, its API on a listener of its own,
// and a node:http server instrumented. Express and Fastify are `zonal/express` and
// `zonal/fastify`; outgoing calls through undici are `zonal/undici` (each needs its
// framework, which the front door does not).
export { appStatus, appCatalog, serve, ROUTE_GROUP, SERVER_GROUP, type StatusOptions, type ServeOptions } from './embed/app.js';
export { instrument, AppRecorder, type InstrumentOptions, type RecordOptions } from './embed/instrument.js';
