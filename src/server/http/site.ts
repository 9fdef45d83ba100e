// A virtual server at run time: its zone, its guard and `return`, and for each of its
// locations what answers there. The workers' node:http plane and the primary's admin
// listeners both build their servers from this.
import { createApi, type ApiHandler, type ConfigChange } from '../../api/index.js';
import type { ApiMount, ApiRequest } from '../../api/types.js';
import { serverZones, locationZones, type HttpZone } from '../../metrics/http-zones.js';
import type { Status } from '../../metrics/status.js';
import type { LocationConfig, VirtualServerConfig } from '../config/model.js';
import { apiHostRule } from './api-hosts.js';
import { parseAuthorization } from './auth.js';
import { Guard } from './guard.js';
import { LocationIndex } from './locations.js';
import { Return } from './pages.js';
import { Proxy } from './proxy.js';
import type { UpstreamRuntime } from './upstream.js';

export interface Place {
  /** The location zone (absent: `status_zone off`, none set, or not recording). */
  readonly zone?: HttpZone;
  readonly guard: Guard;
  readonly return?: Return;
  readonly api?: ApiHandler;
  /** Static files. */
  readonly root?: string;
  readonly proxy?: Proxy;
}

export interface SiteOptions {
  readonly status: Status;
  /** Whether its traffic is counted: admin listeners' is not. */
  readonly record: boolean;
  /** Zone recorders shared by the servers and locations of one process. */
  readonly recorders?: Map<string, HttpZone>;
  /** The process's upstreams by name, for proxy_pass. */
  readonly upstreams?: ReadonlyMap<string, UpstreamRuntime>;
  /** Told of every /config write its API locations took or refused. */
  readonly audit?: (change: ConfigChange, request: ApiRequest) => void;
}

export class Site {
  readonly config: VirtualServerConfig;
  readonly zone?: HttpZone;
  /** What answers a request no location matches, and a server-level `return`. */
  readonly place: Place;
  private readonly index: LocationIndex;
  private readonly places = new Map<LocationConfig, Place>();

  constructor(config: VirtualServerConfig, options: SiteOptions) {
    this.config = config;
    const recorders = options.recorders ?? new Map<string, HttpZone>();
    const record = (kind: 'server' | 'location', name: string | undefined): HttpZone | undefined => {
      if (!options.record || !name) return undefined;
      const key = `${kind}\0${name}`;
      let r = recorders.get(key);
      if (!r) recorders.set(key, (r = (kind === 'server' ? serverZones : locationZones).recorder(options.status, name)));
      return r;
    };
    this.zone = record('server', config.statusZone);
    this.place = { guard: new Guard(config), ...(config.return ? { return: new Return(config.return) } : {}), ...(config.root ? { root: config.root } : {}) };
    this.index = new LocationIndex(config.locations);
    const acceptHost = apiHostRule(config);
    const audit = options.audit;
    const api = (l: LocationConfig) =>
      createApi({
        status: options.status,
        mounts: [mountOf(l)],
        acceptHost,
        origins: l.apiOrigins,
        // The user is the one basic auth let through; without auth_basic there is none.
        ...(audit ? { onConfigChange: (change, request) => audit(change, l.authBasic ? { ...request, user: parseAuthorization(request.authorization)?.user } : request) } : {}),
      });
    const visit = (locations: readonly LocationConfig[]) => {
      for (const l of locations) {
        this.places.set(l, {
          zone: record('location', l.statusZone),
          guard: new Guard(l),
          ...(l.return ? { return: new Return(l.return) } : {}),
          ...(l.api ? { api: api(l) } : {}),
          ...(l.proxy ? { proxy: new Proxy(l.proxy, l, upstreamOf(options, l.proxy.upstream), options.record ? options.status : undefined) } : {}),
          ...(l.root ? { root: l.root } : {}),
        });
        visit(l.locations);
      }
    };
    visit(config.locations);
  }

  /** The place that answers `uri`: a location's, or the server's own when none matches. */
  find(uri: string): Place {
    if (this.place.return) return this.place;
    const match = this.index.match(uri);
    return match ? this.places.get(match.location)! : this.place;
  }
}

function upstreamOf(options: SiteOptions, name: string): UpstreamRuntime {
  const u = options.upstreams?.get(name);
  if (!u) throw new Error(`proxy_pass names upstream "${name}", which this process does not run`);
  return u;
}

/** The API mount of an `api` location: the location itself, so that the API maps the
 * URI as nginx would replace the location's part of it. */
function mountOf(l: LocationConfig): ApiMount {
  return {
    location: l.regex ?? l.path,
    ...(l.modifier === '=' ? { exact: true } : {}),
    api: l.api!,
    ...(l.apiConfigFiles ? { configFiles: true } : {}),
  };
}
