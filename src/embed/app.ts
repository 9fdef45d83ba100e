// The status of an app that zonal instruments, and its API in one call: what the
// adapters (instrument.ts, express.ts, fastify.ts) record into when given no status.
import cluster from 'node:cluster';
import { isMainThread } from 'node:worker_threads';
import { INSTANCE_ENV } from '../engine/identity.js';
import { createApi, type ApiOptions } from '../api/index.js';
import type { HistogramSetting, StatusConfig } from '../metrics/catalog.js';
import { Status } from '../metrics/status.js';
import { serveApi, type ApiServer } from '../transport/uws.js';

/** The group whose zones instrumented servers are (and where names past its cap count). */
export const SERVER_GROUP = 'servers';
/** The group whose zones routes are (and where routes past its cap count). */
export const ROUTE_GROUP = 'routes';

export interface StatusOptions {
  /** Processes (or threads) that record at once: the workers a primary forks, which
   * makes this process record nothing itself. Without it, this process alone records. */
  readonly workers?: number;
  /** Most route zones (default 200); routes past it count in the zone `routes`. */
  readonly routes?: number;
  /** Most server zones (default 16); servers past it count in the zone `servers`. */
  readonly servers?: number;
  /** Response time histograms for the server and route zones: true for the default
   * bounds, or the bounds in milliseconds. */
  readonly histogram?: HistogramSetting;
  /** Each worker's Node runtime metrics under /status/workers (default true). */
  readonly runtime?: boolean;
}

/** What a status made by zonal for an app declares: the groups its zones are made in. */
export function appCatalog(options: StatusOptions = {}): StatusConfig {
  const histogram = options.histogram !== undefined && options.histogram !== false ? { histogram: options.histogram } : {};
  return {
    http: {
      serverZoneGroups: [{ name: SERVER_GROUP, count: options.servers ?? 16, ...histogram }],
      locationZoneGroups: [{ name: ROUTE_GROUP, count: options.routes ?? 200, ...histogram }],
    },
    ...(options.runtime === false ? {} : { runtime: true }),
  };
}

let shared: Status | undefined;

/**
 * The status an app records into: the one its cluster's primary created (found through
 * the environment the primary passes its workers), or, in a process that is no cluster
 * worker, one made here. A primary calls it with `workers` before it forks: it records
 * nothing itself, and its workers attach to it. A lone process records its own traffic.
 */
export function appStatus(options: StatusOptions = {}): Status {
  if (shared) return shared;
  if (process.env[INSTANCE_ENV]) return (shared = Status.attach());
  if (cluster.isWorker || !isMainThread)
    throw new Error(
      'zonal: this worker has no status to attach to: call appStatus({ workers }) (or serve()) in the primary before it forks, so that its workers share one status',
    );
  // With `workers`, this process makes the status for the workers it forks (or the
  // threads it starts) and records nothing itself.
  shared = Status.create(appCatalog(options), { workers: options.workers ?? 1, writer: options.workers === undefined });
  return shared;
}

export interface ServeOptions extends StatusOptions, Omit<ApiOptions, 'status'> {
  /** Default 127.0.0.1: the API shows and changes the app's insides. */
  readonly host?: string;
  /** Default 9100; 0 picks a free port. */
  readonly port?: number;
}

/** The app's status (appStatus()) and its API on a listener of its own: the primary's one
 * line in a cluster (before it forks), or a lone process's. */
export async function serve(options: ServeOptions = {}): Promise<ApiServer & { readonly status: Status }> {
  const { host = '127.0.0.1', port = 9100, workers, routes, servers, histogram, runtime, ...api } = options;
  const status = appStatus({ workers, routes, servers, histogram, runtime });
  const server = await serveApi({ host, port, handler: createApi({ ...api, status }) });
  return Object.assign(server, { status });
}
