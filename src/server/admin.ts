// Admin listeners (`listen ... admin`): served by uWebSockets.js in the primary through
// the API transport (by node:http when uWebSockets.js is not installed: serveApi says so
// in the log). Their servers hold only API locations, `return`, access rules and
// basic auth, and, like Envoy's admin interface, their traffic is counted nowhere.
import type { ApiRequest, ApiResponse } from '../api/types.js';
import type { ConfigStore } from '../api/config.js';
import { apiError, pathNotFound } from '../api/errors.js';
import type { Status } from '../metrics/status.js';
import { serveApi, type ApiServer } from '../transport/uws.js';
import type { ServerConfig, VirtualServerConfig } from './config/model.js';
import type { Verdict } from './http/guard.js';
import { ServerNames } from './http/server-names.js';
import { Site, type Place, type Route } from './http/site.js';
import { absoluteLocation, encodePath, errorPage } from './http/pages.js';
import { normalizeUri } from './http/uri.js';
import { listenGroups } from './listens.js';
import { auditLine, logAudit } from './audit.js';
import type { Log } from './log.js';

/** Paths whose location is kept per admin site: more than a dashboard polls. */
const PLACES_MAX = 1024;

type Handler = (req: ApiRequest) => ApiResponse | undefined | Promise<ApiResponse | undefined>;

interface Listener {
  server: ApiServer;
  /** Swapped on reload: the listening socket stays. */
  handler: Handler;
}

export class AdminListeners {
  private readonly listeners = new Map<string, Listener>();
  /** `config_store`: the primary's store, where the admin API's /config writes are committed. */
  store?: ConfigStore;

  constructor(
    private readonly status: Status,
    private readonly log: Log,
  ) {}

  /** Serves the configuration's admin servers: addresses it keeps get the new servers,
   * new ones are opened, those it no longer has are closed. */
  async apply(config: ServerConfig): Promise<void> {
    const wanted = new Map(listenGroups(config, true).map((g) => [g.key, g]));
    for (const [key, listener] of this.listeners)
      if (!wanted.has(key)) {
        listener.server.close();
        this.listeners.delete(key);
      }
    for (const [key, { listen, servers }] of wanted) {
      const { host, port } = listen;
      const handler = this.handler(servers, { host, port });
      const existing = this.listeners.get(key);
      if (existing) existing.handler = handler;
      else {
        const listener: Listener = { handler, server: undefined as unknown as ApiServer };
        listener.server = await serveApi({ host, port, handler: (req) => listener.handler(req), log: (line) => this.log('warn', line) });
        this.listeners.set(key, listener);
      }
    }
  }

  close(): void {
    for (const l of this.listeners.values()) l.server.close();
    this.listeners.clear();
  }

  private handler(servers: VirtualServerConfig[], address: { host: string; port: number }): Handler {
    const names = new ServerNames(servers, address);
    const sites = new Map(servers.map((s) => [s, new Site(s, { status: this.status, record: false, audit: (change, request) => logAudit(this.log, auditLine(change, request)), ...(this.store ? { configStore: this.store } : {}) })]));
    // One server on the address: every Host selects it, and the Host need not be read.
    const only = servers.length === 1 ? sites.get(servers[0]) : undefined;
    // A client polls the same few paths: where one leads (its site's location) is kept,
    // per site, rather than normalized and matched again. Bounded, as paths are anyone's.
    const places = new Map<Site, Map<string, Route>>();
    return (req) => {
      const site = only ?? sites.get(names.select(req.host))!;
      const head = req.method === 'HEAD';
      let known = places.get(site);
      let route = known?.get(req.path);
      if (route === undefined) {
        const uri = normalizeUri(req.path);
        if (uri === undefined) return apiError(400, 'BadRequest', `The request path "${req.path}" is not valid.`, head);
        route = site.route(uri);
        if (!known) places.set(site, (known = new Map()));
        if (known.size >= PLACES_MAX) known.clear();
        known.set(req.path, route);
      }
      // A location's auto redirect, before its access checks, as on the data plane.
      if (route.redirect !== undefined) return redirect(route.redirect, req, address.port, head);
      const place = route.place;
      if (place.guard.open) return content(place, req, head);
      const verdict = place.guard.check(req.remoteAddress ?? '', req.authorization);
      return typeof verdict === 'number' ? guarded(verdict, place, req, head) : verdict.then((v) => guarded(v, place, req, head));
    };
  }
}

/** The 301 of a location's auto redirect (sendRedirect() of the data plane). */
function redirect(path: string, req: ApiRequest, port: number, head: boolean): ApiResponse {
  const query = req.query === '' ? '' : `?${req.query}`;
  const body = errorPage(301);
  return {
    status: 301,
    headers: {
      Location: absoluteLocation(encodePath(path) + query, { host: req.host, secure: req.secure === true, localAddress: req.address, localPort: port }),
      'Content-Type': 'text/html',
      'Content-Length': String(Buffer.byteLength(body)),
    },
    body: head ? '' : body,
  };
}

function guarded(verdict: Verdict, place: Place, req: ApiRequest, head: boolean): ReturnType<Handler> {
  return verdict === 0 ? content(place, req, head) : place.guard.refusal(verdict, head);
}

function content(place: Place, req: ApiRequest, head: boolean): ReturnType<Handler> {
  if (place.return) return place.return.response(head);
  if (place.api) return place.api(req) ?? pathNotFound(req.path, head);
  if (place.dashboard) return place.dashboard.response(req.method);
  return pathNotFound(req.path, head);
}
