// What answers a request once its place is found and its checks passed, as nginx's content
// phase does: `return`, the API, the dashboard, `proxy_pass`, or files (`root`, `alias`,
// `index`, `try_files`); and nginx's special responses: `error_page`, `internal`,
// `server_tokens`, `add_header` and `limit_rate` on the answers zonal makes itself.
//
// nginx's internal redirects (an index file, try_files' last URI, an error page's URI)
// search the location again for the new URI, run its `if` blocks and access checks, and
// serve there; a named location (`@name`) is entered directly. The request keeps the
// zones it was counted in first, and its limits are not applied again (nginx applies
// limit_req and limit_conn once per request).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { apiListener, type ApiListener } from '../../transport/http.js';
import type { StoreApiHandler } from '../../api/index.js';
import { ZONAL_VERSION } from '../../metrics/status.js';
import { AddHeaders } from '../headers/runtime.js';
import { TOP_CONTENT, type ContentConfig } from './content-config.js';
import { absoluteLocation, encodePath, errorPage, queryOf, requestOrigin, sendRedirect, special, SPECIAL, type Special } from './pages.js';
import type { Place, Route } from './place.js';
import { rewriteLocation, rewriteServer, uriChanged } from '../rewrite/script.js';
import { warnUninitialized } from '../rewrite/variables.js';
import { serveStatic } from './static.js';
import { filterGzip } from '../gzip/filter.js';
import { gzipStatic } from '../gzip/static.js';
import { setErrorPages, setInternalRedirect } from './error-pages.js';
import { paceResponse, requestRate } from './pace.js';
import { parseSize } from '../config/values.js';
import { contentType, TOP_CORE } from './core/config.js';
import { isChunked, readBody } from './core/body.js';
import { normalizeUri } from './uri.js';
import { compileValue } from '../config/variables.js';
import { clientAddress, isRewrittenHere, requestContext, retarget, rewrittenHere, SERVER as SITE, type HttpContext } from './variables.js';

/** What an internal redirect needs of the virtual server (site.ts's Site). */
export interface Router {
  readonly serverName: string;
  /** The server's own place: its rewrite directives run for every internal redirect. */
  readonly place: Place;
  route(uri: string): Route;
  named(name: string): Place | undefined;
}


const STATE = Symbol('zonal.content');

/** A request's content state, made at its first internal redirect or error page. */
interface State {
  /** It reached its place by an internal redirect: an `internal` location serves it. */
  internal: boolean;
  /** An error page is being served: a second error gets the default page (nginx's
   * `recursive_error_pages off`). */
  erring: boolean;
  /** Answered as a GET (an error page's redirect): files serve any method. */
  get: boolean;
}

type Carried = ServerResponse & { [SITE]?: Router; [STATE]?: State; [PLACE]?: Place };
const PLACE = Symbol('zonal.place');

/** Ties a response to its virtual server, for the internal redirects of its content. */
export function enter(res: ServerResponse, site: Router): void {
  (res as Carried)[SITE] = site;
}

const stateOf = (res: ServerResponse): State => ((res as Carried)[STATE] ??= { internal: false, erring: false, get: false });

const apis = new WeakMap<StoreApiHandler, ApiListener>();
const compiled = new Map<string, (c: HttpContext) => string>();
const addHeadersOf = new WeakMap<ContentConfig, AddHeaders | null>();

function expand(text: string, c: HttpContext): string {
  if (!text.includes('$')) return text;
  let f = compiled.get(text);
  if (!f) compiled.set(text, (f = compileValue(text)));
  return f(c);
}

const contentOf = (place: Place): ContentConfig => place.content ?? TOP_CONTENT;

/** The `Server` header and the error pages' footer: nginx prints its version unless
 * `server_tokens off`; zonal prints nothing unless server_tokens is written. */
const VERSIONED = `zonal/${ZONAL_VERSION}`;
const serverHeader = (c: ContentConfig): string | undefined => (c.serverTokens === undefined ? undefined : c.serverTokens === 'off' ? 'zonal' : VERSIONED);
const footer = (c: ContentConfig): string => (c.serverTokens === 'on' || c.serverTokens === 'build' ? VERSIONED : 'zonal');

/** Sets the headers nginx's filters add to an answer of `status`: `Server`, `add_header`. */
function addHeaders(res: ServerResponse, content: ContentConfig, status: number, c: HttpContext): void {
  const server = serverHeader(content);
  if (server !== undefined) res.setHeader('Server', server);
  if (content.addHeaders.length === 0) return;
  let add = addHeadersOf.get(content);
  if (add === undefined) addHeadersOf.set(content, (add = new AddHeaders(content.addHeaders)));
  if (!add) return;
  const list: string[] = [];
  add.addTo(list, status, c);
  if (add.replacing && list.some((name, i) => i % 2 === 0 && name === 'Expires')) {
    res.removeHeader('expires');
    res.removeHeader('cache-control');
  }
  for (let i = 0; i < list.length; i += 2) res.appendHeader(list[i], list[i + 1]);
}

/** A size that may be read per request (limit_rate, limit_rate_after): an invalid one is 0. */
const sizeOf = (size: number | string, c: HttpContext): number => (typeof size === 'number' ? size : (parseSize(expand(size, c)) ?? 0));

/** The rate a request's body goes at: its own (`set $limit_rate`, X-Accel-Limit-Rate),
 * else its place's `limit_rate` (read now when it has variables). */
const limitRateOf = (req: IncomingMessage, content: ContentConfig, c: HttpContext): number => requestRate(req) ?? sizeOf(content.limitRate, c);

const contextOf = (req: IncomingMessage, res: ServerResponse, uri: string, captures: readonly string[] | undefined): HttpContext => requestContext(req, res, uri, captures);

/** Answers the request at its place. `captures`: its `$1`..`$9`. A `return` with no
 * add_header, server_tokens or variables allocates nothing here. */
export function serveContent(req: IncomingMessage, res: ServerResponse, uri: string, place: Place, captures: readonly string[] | undefined): void {
  const content = contentOf(place);
  filterGzip(res, place.gzip);
  if (content.internal && !(res as Carried)[STATE]?.internal) return answerError(req, res, 404, content, contextOf(req, res, uri, captures));
  const ret = place.return;
  if (ret) {
    // `return <code>` without text for an error is nginx's special response: error_page applies.
    if (ret.page) return answerError(req, res, ret.status, content, contextOf(req, res, uri, captures));
    const c = ret.variables || content.addHeaders.length > 0 ? contextOf(req, res, uri, captures) : undefined;
    // A redirect is a special response too: its Location stays, and its error page answers.
    if (ret.redirect && hasPage(res, content, ret.status)) {
      res.setHeader('Location', ret.location(c ?? { req, res, uri }));
      return answerError(req, res, ret.status, content, c ?? contextOf(req, res, uri, captures));
    }
    if (content !== TOP_CONTENT) addHeaders(res, content, ret.status, c ?? { req, res, uri });
    const absolute = ret.relative && content.redirect.absolute ? (path: string) => absoluteLocation(path, requestOrigin(req), content.redirect, (res as Carried)[SITE]?.serverName) : undefined;
    return ret.send(res, req.method === 'HEAD', ret.variables ? c : undefined, absolute);
  }
  if (place.api) {
    let listener = apis.get(place.api);
    if (!listener) apis.set(place.api, (listener = apiListener(place.api)));
    // The mount would find its own location's captures, not an `if`'s or an outer one's.
    listener(req, res, undefined, captures);
    return;
  }
  if (place.dashboard) return place.dashboard.send(res, req.method ?? 'GET');
  if (place.proxy) {
    // For proxy_intercept_errors: the error pages of the place.
    if (content !== TOP_CONTENT && content.errorPages.length > 0) {
      (res as Carried)[PLACE] = place;
      setErrorPages(res, { has: (status) => hasErrorPage(res, status), answer: (status) => answerWithErrorPage(req, res, status, uri) });
    }
    if (content.limitRate !== 0 || requestRate(req) !== undefined) {
      const c = contextOf(req, res, uri, captures);
      paceResponse(res, limitRateOf(req, content, c), sizeOf(content.limitRateAfter, c));
    }
    const proxy = place.proxy;
    // A chunked body is read whole first (client_max_body_size, client_body_timeout, the
    // temp path), as nginx reads one; a body with a length streams.
    if (!isChunked(req)) return proxy.handle(req, res, uri, captures);
    return readBody(req, place.core ?? TOP_CORE, (listener) => res.once('close', listener), (status) => {
      if (status === 0) proxy.handle(req, res, uri, captures);
      else if (!res.headersSent) {
        res.shouldKeepAlive = false;
        answerError(req, res, status, content, contextOf(req, res, uri, captures));
      }
    });
  }
  const c = contextOf(req, res, uri, captures);
  if (content.tryFiles || place.root !== undefined || content.alias !== undefined) {
    const served = content.tryFiles ? tryFiles(req, res, place, c) : files(req, res, uri, place, c);
    served.catch(() => {
      if (!res.headersSent) answerError(req, res, 500, content, c);
      else res.destroy();
    });
    return;
  }
  answerError(req, res, 404, content, c);
}

/** The file a URI names at a place: under `root`, or `alias` in the location's part;
 * undefined when the part the request gave climbs out of the alias (`location /i` with
 * `alias /data/` and `/i../etc/passwd`, which nginx serves: zonal answers 404). */
function pathOf(uri: string, place: Place, c: HttpContext): string | undefined {
  const { alias, aliasPrefix } = contentOf(place);
  if (alias === undefined) return join(place.root ?? '', uri);
  // A regex location's alias is the whole path (its captures say which); a prefix
  // location's replaces the prefix.
  return aliased(expand(alias, c), aliasPrefix === undefined ? '' : uri.slice(Math.min(aliasPrefix.length, uri.length)));
}

const aliased = (alias: string, rest: string): string | undefined => {
  const path = alias + rest;
  return /(^|\/)\.\.(\/|$)/.test(path) ? undefined : path;
};

type Found = { file: boolean; dir: boolean } | { error: string };

async function look(path: string): Promise<Found> {
  try {
    const s = await stat(path);
    return { file: s.isFile(), dir: s.isDirectory() };
  } catch (e) {
    return { error: (e as NodeJS.ErrnoException).code ?? 'EIO' };
  }
}

const refused = (f: Found) => 'error' in f && (f.error === 'EACCES' || f.error === 'EPERM');

/** Static files: a URI ending with '/' by its index (an internal redirect to the first
 * index file that exists), any other by the file. */
async function files(req: IncomingMessage, res: ServerResponse, uri: string, place: Place, c: HttpContext, path = pathOf(uri, place, c)): Promise<void> {
  const content = contentOf(place);
  if (path === undefined) return answerError(req, res, 404, contentOf(place), c);
  if (uri.endsWith('/')) {
    for (const written of content.index) {
      // nginx evaluates an index with variables for each request (it may name anything).
      const name = expand(written, c);
      // A value a client's variable made cannot climb out of the directory.
      if (name === '' || /(^|\/)\.\.(\/|$)/.test(name)) continue;
      // An absolute last index is redirected to without looking (nginx's fallback).
      if (name.startsWith('/')) return internalRedirect(req, res, name);
      const found = await look(join(path, name));
      if (res.destroyed) return;
      if ('error' in found) {
        if (refused(found)) return answerError(req, res, 403, contentOf(place), c);
        continue;
      }
      if (found.file || found.dir) return internalRedirect(req, res, uri + name);
    }
    // nginx: no index, no autoindex: a directory is forbidden, nothing is not found.
    const dir = await look(path);
    if (res.destroyed) return;
    return answerError(req, res, 'error' in dir ? (refused(dir) ? 403 : 404) : 403, contentOf(place), c);
  }
  paceResponse(res, limitRateOf(req, content, c), sizeOf(content.limitRateAfter, c));
  const get = (res as Carried)[STATE]?.get === true;
  const gz = await gzipStatic(req, res, path, place.gzip, get);
  if (res.destroyed) return;
  await serveStatic(place.root ?? '', uri, req, res, {
    path: gz ?? path,
    ...(gz ? { contentType: contentType(place.core, path), contentEncoding: 'gzip' } : {}),
    get,
    error: (code, extra) => answerError(req, res, code, contentOf(place), c, extra),
    headers: (status) => addHeaders(res, content, status, c),
    ...(place.core ? { core: place.core } : {}),
    redirect: content.redirect,
    serverName: (res as Carried)[SITE]?.serverName,
  });
}

/** `try_files`: the first file (or, for a name written with a final '/', directory) that
 * exists is served here, its name the request's URI from then on; else the last argument:
 * a URI, a named location, or `=code`. */
async function tryFiles(req: IncomingMessage, res: ServerResponse, place: Place, c: HttpContext): Promise<void> {
  const { files: list, last } = contentOf(place).tryFiles!;
  for (const file of list) {
    const tried = triedFile(file, place, c);
    if (tried === undefined) continue;
    const found = await look(tried.path);
    if (res.destroyed) return;
    if ('error' in found || (tried.dir ? !found.dir : !found.file)) continue;
    return files(req, res, tried.uri, place, { ...c, uri: tried.uri }, tried.served);
  }
  if (last.startsWith('=')) return answerError(req, res, Number(last.slice(1)), contentOf(place), c);
  if (last.startsWith('@')) return namedLocation(req, res, last, contentOf(place), c);
  internalRedirect(req, res, expand(last, c));
}

/** One name of try_files as nginx's try files phase reads it: the final '/' of a name
 * as written asks for a directory and is not part of the name, so `$uri/` finding
 * `/dir` makes the URI `/dir`, which the static module redirects to `/dir/`. The name is
 * looked for under root, or after the alias: a prefix location's alias takes the name
 * without the location's part (when the name has variables, which give the whole URI),
 * and the URI becomes that part and the rest; a regex location's alias takes the whole
 * name, and a file found there is served as alias and URI, the URI being the name. */
function triedFile(file: string, place: Place, c: HttpContext): { path: string; dir: boolean; uri: string; served?: string } | undefined {
  const dir = file.endsWith('/');
  const written = dir ? file.slice(0, -1) : file;
  const name = expand(written, c);
  if (name === '') return undefined;
  const { alias, aliasPrefix } = contentOf(place);
  if (alias === undefined) return { path: join(place.root ?? '', name), dir, uri: name };
  if (aliasPrefix === undefined) {
    const path = aliased(expand(alias, c), name);
    if (path === undefined) return undefined;
    return dir ? { path, dir, uri: c.uri } : { path, dir, uri: name, served: path };
  }
  const rest = written.includes('$') && name.startsWith(aliasPrefix) ? name.slice(aliasPrefix.length) : name;
  const path = aliased(expand(alias, c), rest);
  return path === undefined ? undefined : { path, dir, uri: aliasPrefix + rest };
}

/** Checks access at the new place, then answers there. */
function enterPlace(req: IncomingMessage, res: ServerResponse, site: Router, uri: string, place: Place, captures: readonly string[] | undefined, groups?: Route['groups']): void {
  ({ uri, place, captures } = rewriteLocation(site, { place, captures, ...(groups ? { groups } : {}) }, req, res, uri));
  warnUninitialized(req, place.warn);
  if (place.guard.open) return serveContent(req, res, uri, place, captures);
  const answer = (verdict: number) => {
    if (res.destroyed) return;
    if (verdict === 0) serveContent(req, res, uri, place, captures);
    else answerError(req, res, verdict, contentOf(place), { req, res, uri }, verdict === 401 ? { 'WWW-Authenticate': place.guard.challenge() } : undefined);
  };
  const verdict = place.guard.check(clientAddress(req), req.headers.authorization, contextOf(req, res, uri, captures));
  if (typeof verdict === 'number') answer(verdict);
  else verdict.then(answer, () => answer(403));
}

/** Counts an internal redirect or a jump to a named location among the request's URI
 * changes, which nginx limits (rewrite/script.ts): past the limit, a 500. */
function tooMany(req: IncomingMessage, res: ServerResponse, what: string): boolean {
  stateOf(res).internal = true;
  return uriChanged(req, res, what);
}

/** nginx's internal redirect: the location of `target` (a path, maybe with a query)
 * answers it. */
function internalRedirect(req: IncomingMessage, res: ServerResponse, target: string): void {
  const site = (res as Carried)[SITE];
  if (!site || tooMany(req, res, `internally redirecting to "${target}"`)) return defaultPage(req, res, 500, undefined);
  const q = target.indexOf('?');
  const uri = normalizeUri(q < 0 ? target : target.slice(0, q));
  if (uri === undefined) return defaultPage(req, res, 500, undefined);
  // The new URI is the request's from now on (a proxy_pass without a URI part passes it),
  // and new arguments replace the request's (nginx's r->args).
  retarget(req, encodePath(uri) + (q >= 0 ? target.slice(q) : queryOf(req.url ?? '')));
  if (isRewrittenHere(req)) rewrittenHere(req, false);
  // The server's rewrite directives run again for the new URI, as nginx's do.
  const server = site.place.script ? rewriteServer(site, req, res, uri) : undefined;
  if (server?.answered) return serveContent(req, res, server.uri, server.place, server.captures);
  const route = site.route(server?.uri ?? uri);
  // A location's auto redirect answers here too, as nginx's search does.
  if (route.redirect !== undefined) return sendRedirect(req, res, route.redirect, route.place.content?.redirect, site.serverName);
  enterPlace(req, res, site, server?.uri ?? uri, route.place, route.captures, route.groups);
}

// A peer's X-Accel-Redirect (proxy.ts): a URI or a named location, the request's URI
// kept for the latter as nginx keeps it.
setInternalRedirect((req, res, target, uri) => {
  if (target.startsWith('@')) namedLocation(req, res, target, TOP_CONTENT, { req, res, uri });
  else internalRedirect(req, res, target);
});

function namedLocation(req: IncomingMessage, res: ServerResponse, name: string, from: ContentConfig, c: HttpContext): void {
  const site = (res as Carried)[SITE];
  const place = site?.named(name);
  // nginx logs "could not find named location" and answers 500.
  if (!place || !site || tooMany(req, res, 'redirect to named location')) return defaultPage(req, res, 500, from);
  enterPlace(req, res, site, c.uri, place, undefined);
}

/** The page nginx writes for `status` itself, with the place's headers. */
function defaultPage(req: IncomingMessage, res: ServerResponse, status: number, given: ContentConfig | undefined, extra?: Record<string, string>, c?: HttpContext): void {
  if (cannotAnswer(res)) return;
  special(res);
  const content = given ?? TOP_CONTENT;
  if (given) addHeaders(res, given, status, c ?? { req, res, uri: '' });
  // Statuses below 400 (a `=code` of try_files) answer with no page, as nginx's.
  const body = status >= 400 || (status >= 300 && status !== 304) ? errorPage(status, footer(content)) : '';
  res.writeHead(status, { ...(body ? { 'Content-Type': 'text/html' } : {}), 'Content-Length': Buffer.byteLength(body), ...extra });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** A later writeHead of this response gets `status`: an error page's `=code`, or the
 * error's own code when the page's URI answers with another. */
function overrideStatus(res: ServerResponse, status: number): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, code: number, ...rest: unknown[]) {
    // A special response (an error's page, a redirect) has its own status, as nginx's.
    if ((this as Special)[SPECIAL]) return (writeHead as (...a: unknown[]) => ServerResponse).call(this, code, ...rest);
    // The reason phrase of the other code would be wrong.
    if (typeof rest[0] === 'string') rest.shift();
    return (writeHead as (...a: unknown[]) => ServerResponse).call(this, status, ...rest);
  } as ServerResponse['writeHead'];
}

/** An answer already begun cannot become an error page: the connection is closed, as
 * nginx closes it. */
function cannotAnswer(res: ServerResponse): boolean {
  if (res.destroyed) return true;
  if (!res.headersSent) return false;
  if (!res.writableEnded) res.destroy();
  return true;
}

/** The error page of `status` at a place, unless one is being answered already. */
const hasPage = (res: ServerResponse, content: ContentConfig, status: number) =>
  (res as Carried)[STATE]?.erring ? undefined : content.errorPages.find((p) => p.status === status);

function answerError(req: IncomingMessage, res: ServerResponse, status: number, content: ContentConfig, c: HttpContext, extra?: Record<string, string>): void {
  if (cannotAnswer(res)) return;
  const page = hasPage(res, content, status);
  if (!page) return defaultPage(req, res, status, content, extra, c);
  stateOf(res).erring = true;
  const uri = expand(page.uri, c);
  const answer = page.overwrite < 0 ? status : page.overwrite;
  if (uri.startsWith('/')) {
    if (answer !== 0) overrideStatus(res, answer);
    // nginx answers an error page as a GET (a HEAD stays a HEAD).
    stateOf(res).get = true;
    return internalRedirect(req, res, uri);
  }
  if (uri.startsWith('@')) {
    if (answer !== 0) overrideStatus(res, answer);
    return namedLocation(req, res, uri, content, c);
  }
  // A URL: the client is sent there, with 302 unless `=` names another redirect.
  const code = answer === 301 || answer === 302 || answer === 303 || answer === 307 || answer === 308 ? answer : 302;
  defaultPage(req, res, code, content, { Location: uri }, c);
}

/** What `proxy_intercept_errors` answers an upstream's error `status` with: the
 * error_page of the place the request was proxied from, or nginx's own page. Call it
 * before anything of the upstream's response is written. */
export function answerWithErrorPage(req: IncomingMessage, res: ServerResponse, status: number, uri: string): void {
  const place = (res as Carried)[PLACE];
  answerError(req, res, status, place ? contentOf(place) : TOP_CONTENT, { req, res, uri });
}

/** Whether the place `res` was served at has an `error_page` for `status`: nginx's
 * `proxy_intercept_errors on` intercepts only those. */
export function hasErrorPage(res: ServerResponse, status: number): boolean {
  const place = (res as Carried)[PLACE];
  return place !== undefined && !(res as Carried)[STATE]?.erring && contentOf(place).errorPages.some((p) => p.status === status);
}

/** An access check's refusal (401, 403) at `place`, as its `error_page` says. */
export function refuse(req: IncomingMessage, res: ServerResponse, status: number, uri: string, place: Place, extra?: Record<string, string>): void {
  (res as Carried)[PLACE] = place;
  answerError(req, res, status, contentOf(place), { req, res, uri }, extra);
}

/** How a place's limit_req and limit_conn refusals are answered: by its `error_page`
 * for the status, else the default page. */
export function refuser(content: ContentConfig | undefined): (req: IncomingMessage, res: ServerResponse, status: number) => void {
  const settings = content ?? TOP_CONTENT;
  return (req, res, status) => answerError(req, res, status, settings, { req, res, uri: normalizeUri(req.url ?? '/') ?? '/' });
}
