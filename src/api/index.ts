// The transport-independent API: a request in, a response out. It maps the request to an
// element of the API tree through its mounts, resolves that element down to a single
// field, and renders it as JSON or text.
import type { Status } from '../metrics/status.js';
import { statusRoot } from '../metrics/root.js';
import type { RenderContext } from '../metrics/shape.js';
import { JsonNode, ObjectNode, type StatusNode } from '../metrics/tree.js';
import { configJson, handleConfig, type ConfigChange, type ConfigRequest, type ConfigStore } from './config.js';
import { JsonWriter } from '../metrics/json.js';
import { inReadPass } from '../engine/index.js';
import { apiError, methodNotAllowed, pathNotFound, textResponse } from './errors.js';
import { liveAnswers } from './live.js';
import { mapRequest, type Mapped } from './mapping.js';
import { literalOrLocalhost, normaliseOrigin, originAllowed } from './origin.js';
import { exposition, TEXT_CONTENT_TYPE, type Step } from './text.js';
import { keepFields, parseFields } from './fields.js';
import type { ApiMount, ApiRequest, ApiResponse } from './types.js';

export type { ApiMount, ApiRequest, ApiResponse, ApiStream } from './types.js';
export type { ConfigChange, ConfigRequest, ConfigStore, StoreCommit } from './config.js';
export { mapRequest, findMount, decodePath } from './mapping.js';

export type ApiHandler = (request: ApiRequest) => ApiResponse | undefined;
/** The API of a configuration kept in a store (ApiOptions.configStore,
 * forwardConfigWrites): a /config write answers once the store committed it; every read
 * still answers at once. */
export type StoreApiHandler = (request: ApiRequest) => ApiResponse | undefined | Promise<ApiResponse>;

/** A response's body as text, whether it came as text or as bytes. */
export function bodyText(response: ApiResponse): string {
  const b = response.body;
  return typeof b === 'string' ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
}

export interface ApiOptions {
  readonly status: Status;
  /** Where the API answers; by default `/status/` as itself. */
  readonly mounts?: readonly ApiMount[];
  /** Told of every /config write that reached the configuration, applied or refused:
   * an audit log's source. */
  readonly onConfigChange?: (change: ConfigChange, request: ApiRequest) => void;
  /**
   * Whether the API answers a request with this Host header (a DNS-rebinding page sends
   * its own domain): by default an address literal or `localhost`, any port. `write`:
   * the request would change /config. A request without Host (not a browser's) is answered.
   */
  readonly acceptHost?: (host: string, request: ApiRequest, write: boolean) => boolean;
  /** Origins (`https://dash.example.com`) besides the API's own whose pages may write. */
  readonly origins?: readonly string[];
  /** The upstreams are kept in a store (`config_store`) this process writes to: a
   * /config write is committed there first, and answered once it is. */
  readonly configStore?: ConfigStore;
  /** The upstreams are kept in a store another process holds (a worker's primary):
   * /config writes are sent to it, and its answer is theirs. */
  readonly forwardConfigWrites?: (request: ConfigRequest) => Promise<ApiResponse>;
}

const WRITES = new Set(['PUT', 'PATCH', 'DELETE', 'POST']);
/** How much of a written value an audit line keeps. */
const AUDIT_VALUE_CHARS = 200;

const READ_METHODS = 'GET, HEAD';
/** Paths whose mapping is kept (createApi's routes): more than a dashboard polls. */
const ROUTES_MAX = 1024;

interface Route {
  readonly mapped: Mapped;
  readonly segments: readonly string[];
}
const NO_QUERY: URLSearchParams = new URLSearchParams();

/** Walks the tree from `root` along `segments`; undefined when a step does not exist. */
export function resolve(root: StatusNode, segments: readonly string[], ctx: RenderContext): Step[] | undefined {
  const trail: Step[] = [{ name: '', node: root }];
  let node = root;
  for (const name of segments) {
    if (node.kind === 'leaf') return undefined;
    const next = node.child(name, ctx);
    if (!next) return undefined;
    trail.push({ name, node: next });
    node = next;
  }
  return trail;
}

export function createApi(options: ApiOptions & { configStore?: undefined; forwardConfigWrites?: undefined }): ApiHandler;
export function createApi(options: ApiOptions): StoreApiHandler;
export function createApi(options: ApiOptions): StoreApiHandler {
  const mounts = options.mounts ?? [
    { location: '/status/', api: '/status/' },
    { location: '/config/', api: '/config/' },
  ];
  const status = options.status;
  const acceptHost = options.acceptHost ?? literalOrLocalhost;
  const origins = (options.origins ?? []).map((o) => normaliseOrigin(o) ?? o);
  const audit = options.onConfigChange;
  // The last Host a read was answered for: a client sends the same one each time, and
  // the rule (a regular expression or two) need not run again for it.
  let lastHost: string | undefined;
  let lastAddress: string | undefined;
  const hostAccepted = (host: string, request: ApiRequest, write: boolean): boolean => {
    if (!write && host === lastHost && request.address === lastAddress) return true;
    const ok = acceptHost(host, request, write);
    if (ok && !write) {
      lastHost = host;
      lastAddress = request.address;
    }
    return ok;
  };
  // The API root: `/` lists the trees there are. Built once: its branches read the
  // catalog each time they are walked, so a reload shows without rebuilding them.
  const statusTree = statusRoot(status);
  const configTree = new JsonNode(() => configJson(status));
  const trees: Array<[string, StatusNode]> = [
    ['status', statusTree],
    ['config', configTree],
  ];
  const root = new ObjectNode(() => trees);

  // Where a path leads through a mount without variables depends on the path alone: the
  // mapping and its segments are kept per raw path (a client polls the same few), which
  // saves decoding, matching and splitting it again.
  const routes = new Map<string, Route>();

  const forward = options.forwardConfigWrites;
  const answer: StoreApiHandler = (request) => {
    // Most requests have no query: they share one empty, never written, set of parameters.
    const bare = request.query === '';
    const query = bare ? NO_QUERY : new URLSearchParams(request.query);
    let route = request.captures ? undefined : routes.get(request.path);
    if (route === undefined) {
      const found = mapRequest(mounts, { path: request.path, query, host: request.host, ...(request.captures ? { captures: request.captures } : {}) });
      if (!found) return undefined;
      if ('error' in found) return apiError(400, found.error, found.description, request.method === 'HEAD');
      route = { mapped: found, segments: found.path.split('/').filter(Boolean) };
      if (!request.captures && !found.mount.api.includes('$')) {
        if (routes.size >= ROUTES_MAX) routes.clear();
        routes.set(request.path, route);
      }
    }
    const { mapped, segments } = route;
    const head = request.method === 'HEAD';

    const ctx = new ReadContext(!bare && query.get('date') === 'epoch', request.address, !!mapped.mount.configFiles);
    const write = WRITES.has(request.method);
    const refused = refusal(request, write, hostAccepted, origins);
    if (refused) {
      const response = apiError(403, 'Forbidden', refused, head);
      if (audit && write && segments[0] === 'config') audit(changeOf(request, mapped.path, response), request);
      return response;
    }
    if (segments[0] === 'config') {
      const configRequest: ConfigRequest = {
        method: request.method,
        segments: segments.slice(1),
        path: mapped.path,
        query,
        body: request.body,
        contentType: request.contentType,
        ifMatch: request.ifMatch,
        ifNoneMatch: request.ifNoneMatch,
      };
      const response = write && forward ? forward(configRequest) : handleConfig(status, configRequest, options.configStore);
      if (!audit || !write) return response;
      if (!(response instanceof Promise)) {
        audit(changeOf(request, mapped.path, response), request);
        return response;
      }
      return response.then((r) => {
        audit(changeOf(request, mapped.path, r), request);
        return r;
      });
    }
    let trail: Step[] | undefined;
    try {
      trail = resolve(root, segments, ctx);
    } catch (e) {
      return apiError(500, 'InternalError', `Reading "${mapped.path}" failed: ${(e as Error).message}`, head);
    }
    if (!trail) return pathNotFound(mapped.path, head);
    if (request.method !== 'GET' && !head) return methodNotAllowed(request.method, mapped.path, READ_METHODS);

    const format = bare ? null : query.get('format');
    let target = trail[trail.length - 1].node;
    const fields = bare ? null : query.get('fields');
    if (fields !== null) {
      const keep = parseFields(fields);
      if ('error' in keep) return apiError(400, 'BadRequest', keep.error, head);
      if (target.kind === 'leaf') return apiError(400, 'BadRequest', `The "fields" argument keeps members of an object, and "${mapped.path}" is a single value.`, head);
      target = keepFields(target, keep);
      trail[trail.length - 1] = { name: trail[trail.length - 1].name, node: target };
    }
    if (format !== null) {
      if (format !== 'prometheus')
        return apiError(400, 'BadRequest', `The "${format}" format is not supported: the one text format is "prometheus".`, head);
      if (segments[0] !== 'status') return apiError(400, 'BadRequest', 'The text format is only for the /status tree.', head);
      return textResponse(200, TEXT_CONTENT_TYPE, inReadPass(() => exposition(trail.slice(1), ctx)), head);
    }
    const w = new JsonWriter(bare || query.get('pretty') !== 'off');
    inReadPass(() => target.write(w, 0, ctx));
    w.newline();
    const response: { -readonly [K in keyof ApiResponse]: ApiResponse[K] } = textResponse(200, 'application/json', w.result(), head);
    response.release = w.recycle();
    return response;
  };
  // A read answers at once: only writes wait for a store, and live answers are reads.
  const live = liveAnswers(answer as ApiHandler);
  return (request) => (request.stream ? (request.method === 'GET' ? live(request) : answer({ ...request, stream: false })) : answer(request));
}

/** A read's context. Most answers never ask the time (only a peer's downtime does): the
 * clock is read at the first ask, and is then the same for the whole answer. */
class ReadContext implements RenderContext {
  private time = 0;
  constructor(
    readonly dateEpoch: boolean,
    readonly address: string,
    readonly configFiles: boolean,
  ) {}

  get now(): number {
    if (this.time === 0) this.time = Date.now();
    return this.time;
  }
}

/** Why a request from a browser page is refused, or undefined. */
function refusal(request: ApiRequest, write: boolean, acceptHost: NonNullable<ApiOptions['acceptHost']>, origins: readonly string[]): string | undefined {
  const host = request.host;
  if (host !== undefined && !acceptHost(host, request, write))
    return `The Host "${host}" is not a name of this API's server: a page of another site may not reach it (DNS rebinding).`;
  if (write && !originAllowed(request.origin, host, request.secure === true, origins))
    return `Writes from the origin "${request.origin}" are not allowed: list it in "api_origins" to let its pages change the configuration.`;
  return undefined;
}

/** A /config write and its outcome, as the audit tells it. */
function changeOf(request: ApiRequest, path: string, response: ApiResponse): ConfigChange {
  let description = '';
  try {
    description = String((JSON.parse(bodyText(response)) as { description?: unknown }).description ?? '');
  } catch {
    // every /config answer is JSON; an odd one is told without its description
  }
  const body = request.body;
  let value: string | undefined;
  if (body && body.length > 0) {
    // Whitespace folded, so that a value is one line of the log.
    const text = Buffer.from(body.buffer, body.byteOffset, Math.min(body.byteLength, AUDIT_VALUE_CHARS * 4)).toString('utf8').replace(/\s+/g, ' ');
    value = text.length > AUDIT_VALUE_CHARS || body.byteLength > AUDIT_VALUE_CHARS * 4 ? `${text.slice(0, AUDIT_VALUE_CHARS)}...` : text;
  }
  return { method: request.method, path, status: response.status, description, ...(value !== undefined ? { value } : {}) };
}
