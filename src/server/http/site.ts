// A virtual server at run time: its zone, its guard and `return`, and for each of its
// locations what answers there. The workers' node:http plane and the primary's admin
// listeners both build their servers from this.
import { createApi, type ConfigChange, type ConfigRequest, type ConfigStore } from '../../api/index.js';
import type { ApiMount, ApiRequest, ApiResponse } from '../../api/types.js';
import { serverZones, locationZones, type HttpZone } from '../../metrics/http-zones.js';
import { groupsOf } from '../../metrics/zone-groups.js';
import type { Status } from '../../metrics/status.js';
import type { IfConfig, Inherited, LocationConfig, ProxyConfig, StatusZoneKey, VirtualServerConfig } from '../config/model.js';
import { refuser } from './content.js';
import { apiHostRule } from './api-hosts.js';
import { parseAuthorization } from '../auth-basic/runtime.js';
import { compileCondition } from './conditions.js';
import { Guard } from './guard.js';
import { LocationIndex } from './locations.js';
import { Return } from './pages.js';
import { Proxy } from './proxy.js';
import type { UpstreamRuntime } from './upstream.js';
import { compileValue } from '../config/variables.js';
import type { HttpContext } from './variables.js';
import { PlaceLimits } from '../limits/runtime.js';
import { Dashboard } from '../dashboard/page.js';
import { uwsAvailable } from '../../transport/uws.js';
import { placeLog } from '../log/access-log.js';
import { realipOf } from '../realip/runtime.js';

import type { Place, Route } from './place.js';
import { compileScript } from '../rewrite/script.js';
import { errorLogOf } from '../log/error-log.js';
import { groupNames, hasConfiguredVariables, setGroups } from '../rewrite/variables.js';
import { nameRegex, normaliseHost } from './server-names.js';
import type { IncomingMessage } from 'node:http';
import type { Resolvers } from '../resolver/peers.js';
export type { Place, Route } from './place.js';

/** An `if` block has none in it: nginx allows `if` in a server and a location only. */
const noIf = (): never => {
  throw new Error('"if" in an "if" block');
};

/** Where a block tells of a variable of the configuration used before any `set`
 * (`uninitialized_variable_warn`, on unless turned off): only when there are some. */
const warnOf = (block: Inherited): Pick<Place, 'warn'> =>
  hasConfiguredVariables() && block.rewrite?.warn !== false ? { warn: errorLogOf(block.errorLogs) } : {};

export interface SiteOptions {
  readonly status: Status;
  /** Whether its traffic is counted: admin listeners' is not. */
  readonly record: boolean;
  /** Zone recorders shared by the servers and locations of one process. */
  readonly recorders?: Map<string, HttpZone>;
  /** The process's upstreams by name, for proxy_pass. */
  readonly upstreams?: ReadonlyMap<string, UpstreamRuntime>;
  /** The process's resolvers, for a proxy_pass with variables whose host is a name. */
  readonly resolvers?: Resolvers;
  /** Told of every /config write its API locations took or refused. */
  readonly audit?: (change: ConfigChange, request: ApiRequest) => void;
  /** `config_store`: where /config writes are committed (the primary's store), or sent
   * (a worker's: to the primary). */
  readonly configStore?: ConfigStore;
  readonly forwardConfigWrites?: (request: ConfigRequest) => Promise<ApiResponse>;
}

export class Site {
  readonly config: VirtualServerConfig;
  readonly zone?: HttpZone;
  /** With `status_zone <key> zone=...` in the server: its requests' zone (see Place). */
  readonly zoneOf?: (c: HttpContext) => HttpZone | undefined;
  /** Where a TLS handshake counts when the zone is a request's (zoneOf): the first
   * request's zone, or the group's own for a connection that sends none. */
  readonly groupZone?: HttpZone;
  /** What answers a request no location matches, and a server-level `return`. */
  readonly place: Place;
  /** Some zone of the server (its own, a location's) has a response time histogram: the
   * data plane reads the clock when a request arrives. */
  timed = false;

  /** `$server_name`: the server's first name. */
  /** `$server_name`: the first name, a `.example.com` without its dot, as nginx keeps it. */
  get serverName(): string {
    const first = this.config.names[0] ?? '';
    return first.startsWith('.') ? first.slice(1) : first;
  }
  /** Its `server_name` regexes with named groups: the host that selected the server sets
   * them as variables, as nginx does. */
  private readonly nameGroups?: readonly RegExp[];
  private readonly index: LocationIndex;
  private readonly places = new Map<LocationConfig, Place>();
  /** `location @name` by its name, `@` included. */
  private readonly names = new Map<string, Place>();

  constructor(config: VirtualServerConfig, options: SiteOptions) {
    this.config = config;
    const recorders = options.recorders ?? new Map<string, HttpZone>();
    const record = (kind: 'server' | 'location', name: string | undefined): HttpZone | undefined => {
      if (!options.record || !name) return undefined;
      const key = `${kind}\0${name}`;
      let r = recorders.get(key);
      if (!r) recorders.set(key, (r = (kind === 'server' ? serverZones : locationZones).recorder(options.status, name)));
      if (r.timed) this.timed = true;
      return r;
    };
    // A zone that is a group (a key, and a count somewhere in the configuration): the
    // request's key chooses. A group with no count is its zone alone.
    const keyed = (kind: 'server' | 'location', name: string | undefined, key: StatusZoneKey | undefined) => {
      if (!options.record || !name || !key) return undefined;
      if (!groupsOf(options.status.catalog().http, kind === 'server' ? 'server_zones' : 'location_zones').some((g) => g.name === name)) return undefined;
      const group = (kind === 'server' ? serverZones : locationZones).group(options.status, name);
      // Its zones have the group's histogram: timed when the group's own zone is.
      if (group.recorder(name)?.timed) this.timed = true;
      const value = compileValue(key.key);
      return (c: HttpContext) => group.recorder(value(c));
    };
    const zoneOf = (kind: 'server' | 'location', block: { readonly statusZone?: string; readonly statusZoneKey?: StatusZoneKey }) => {
      const chooser = keyed(kind, block.statusZone, block.statusZoneKey);
      return chooser ? { zoneOf: chooser } : { zone: record(kind, block.statusZone) };
    };
    const own = zoneOf('server', config);
    this.zone = own.zone;
    if (own.zoneOf) {
      this.zoneOf = own.zoneOf;
      this.groupZone = record('server', config.statusZone);
    }
    const serverName = config.names[0] ?? '';
    const limits = (l: { readonly limits?: LocationConfig['limits']; readonly errorLogs?: LocationConfig['errorLogs']; readonly content?: Inherited['content'] }) =>
      options.record && l.limits ? { limits: new PlaceLimits(l.limits, options.status, serverName, l.errorLogs, refuser(l.content)) } : {};
    const guard = new Guard(config);
    const logs = (l: Parameters<typeof placeLog>[0]) => (options.record ? placeLog(l, serverName) : {});
    const files = (block: Inherited) => ({
      ...(block.root ? { root: block.root } : {}),
      ...(block.content ? { content: block.content } : {}),
      ...(block.gzip ? { gzip: block.gzip } : {}),
    });
    const bare: Place = { guard, ...files(config), ...limits(config), ...logs(config), ...(config.core ? { core: config.core } : {}), ...realipOf(config) };
    const server: Place = { ...bare, ...warnOf(config), ...(config.return && !config.script ? { return: new Return(config.return) } : {}) };
    // The server's `if` blocks run the rewrite directives in them; the rest of a block's
    // settings mean nothing before a location is found.
    const serverIf = (index: number) => {
      const i = config.ifs![index];
      return { condition: compileCondition(i.condition), place: { ...server, script: compileScript(i.script, config.rewrite, config.errorLogs, noIf) } };
    };
    this.place = config.script ? { ...server, script: compileScript(config.script, config.rewrite, config.errorLogs, serverIf) } : server;
    const named = config.names.filter((n) => n.startsWith('~') && groupNames(n).length > 0);
    if (named.length) this.nameGroups = named.map((n) => nameRegex(n.slice(1)));
    this.index = new LocationIndex(config.locations);
    const acceptHost = apiHostRule(config);
    const audit = options.audit;
    // `block`: the location, or an `if` block in it, whose settings the API takes.
    const api = (l: LocationConfig, block: LocationConfig | IfConfig) =>
      createApi({
        status: options.status,
        mounts: [mountOf(l, block)],
        acceptHost,
        origins: block.apiOrigins,
        ...(options.configStore ? { configStore: options.configStore } : {}),
        ...(options.forwardConfigWrites ? { forwardConfigWrites: options.forwardConfigWrites } : {}),
        // The user is the one basic auth let through; without auth_basic there is none.
        ...(audit ? { onConfigChange: (change, request) => audit(change, block.authBasic ? { ...request, user: parseAuthorization(request.authorization)?.user } : request) } : {}),
      });
    const visit = (locations: readonly LocationConfig[]) => {
      for (const l of locations) {
        const place: Place = {
          ...zoneOf('location', l),
          guard: new Guard(l),
          ...warnOf(l),
          ...(l.return && !l.script ? { return: new Return(l.return) } : {}),
          ...(l.api ? { api: api(l, l) } : {}),
          ...(l.dashboard !== undefined ? { dashboard: new Dashboard(l.dashboard, config.admin && uwsAvailable()) } : {}),
          ...(l.proxy ? { proxy: proxyOf(options, l.proxy, l) } : {}),
          ...files(l),
          ...limits(l),
          ...logs(l),
          ...(l.core ? { core: l.core } : {}),
          ...realipOf(l),
        };
        const ifBlock = (i: IfConfig): Place => {
          // What answers is the block's own, or else the location's: nginx keeps the
          // location's content handler, and merges its `proxy_pass` into the block.
          const own = i.return !== undefined || i.api !== undefined || i.proxy !== undefined;
          return {
            ...zoneOf('location', i),
            guard: new Guard(i),
            ...warnOf(i),
            ...(i.return && !i.script ? { return: new Return(i.return) } : {}),
            ...(i.script ? { script: compileScript(i.script, i.rewrite, i.errorLogs, noIf) } : {}),
            ...(i.api ? { api: api(l, i) } : !own && place.api ? { api: place.api } : {}),
            ...(!own && place.dashboard ? { dashboard: place.dashboard } : {}),
            ...(i.proxy ? { proxy: proxyOf(options, i.proxy, l) } : !own && place.proxy ? { proxy: place.proxy } : {}),
            ...files(i),
            // An `if` block is a location nested in its own: its limits are its own or,
            // when it sets none, the location's (merged when the configuration was read).
            ...limits(i),
            ...logs(i),
            ...(i.core ? { core: i.core } : {}),
            ...realipOf(i),
          };
        };
        const ifAt = (index: number) => ({ condition: compileCondition(l.ifs![index].condition), place: ifBlock(l.ifs![index]) });
        this.places.set(l, l.script ? { ...place, script: compileScript(l.script, l.rewrite, l.errorLogs, ifAt) } : place);
        if (l.modifier === '@') this.names.set(l.path, this.places.get(l)!);
        visit(l.locations);
      }
    };
    visit(config.locations);
  }

  /** The place that answers `uri` (a location's, or the server's own when none matches),
   * with the groups of the regex location that matched ($1 is `captures[0]`); or the path
   * a location's auto redirect answers `uri` with: a 301 to it, in the place of that
   * location (its zone counts it), before its `if` blocks, limits and access checks (nginx
   * redirects as it finds the location). */
  /** The named location `name` (`@fallback`), if the server has it. */
  named(name: string): Place | undefined {
    return this.names.get(name);
  }

  /** Sets the named groups of the `server_name` regex the request's Host matches. */
  nameVariables(req: IncomingMessage): void {
    if (!this.nameGroups) return;
    const host = normaliseHost(req.headers.host ?? '');
    for (const regex of this.nameGroups) {
      const m = regex.exec(host);
      if (m) return setGroups(req, m.groups);
    }
  }

  route(uri: string): Route {
    if (this.place.return) return this;
    const match = this.index.match(uri);
    if (match === undefined) return this;
    const place = this.places.get(match.location)!;
    return match.redirect ? { place, redirect: match.location.path } : { place, captures: match.captures, ...(match.groups ? { groups: match.groups } : {}) };
  }
}

/** The proxy of a location (or its `if` block): its upstream, or with variables in its
 * host, the process's upstreams its URLs may name. */
function proxyOf(options: SiteOptions, config: ProxyConfig, l: LocationConfig): Proxy {
  const status = options.record ? options.status : undefined;
  if (config.url !== undefined) return new Proxy(config, l, undefined, status, options.upstreams, options.resolvers);
  const u = options.upstreams?.get(config.upstream);
  if (!u) throw new Error(`proxy_pass names upstream "${config.upstream}", which this process does not run`);
  return new Proxy(config, l, u, status);
}

/** The API mount of an `api` location: the location itself, so that the API maps the
 * URI as nginx would replace the location's part of it. */
function mountOf(l: LocationConfig, block: LocationConfig | IfConfig): ApiMount {
  return {
    location: l.regex ?? l.path,
    ...(l.modifier === '=' ? { exact: true } : {}),
    api: block.api!,
    ...(block.apiConfigFiles ? { configFiles: true } : {}),
  };
}
