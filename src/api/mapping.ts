// The `api <path>` directive as a pure function: which mount a request URI falls in, and
// which element of the API tree it names there.
//
// 1. In a prefix location, the part of the URI that matches the prefix is replaced by
//    <path>: `/stats/` with `api /status/http/server_zones/` maps `/stats/x` to
//    `/status/http/server_zones/x`.
// 2. <path> may hold variables: $uri, $host, $arg_<name>, and captures $1..$9. As with
//    nginx's alias, a path with variables is the whole API path: the rest of the URI is
//    not appended to it.
// 3. In a regex location, <path> is the whole API path, captures substituted.
// 4./5. Each mount exposes its own subtree; nothing a request sends can reach above it:
//    the URI is percent-decoded once, and `..` segments, encoded or not, are refused.
import type { ApiMount } from './types.js';
import { hostOfHeader, Variables } from './variables.js';

export interface Mapped {
  readonly mount: ApiMount;
  /** The API element, normalised: `/status/http/server_zones/x`. */
  readonly path: string;
}

export interface MappingError {
  readonly error: 'BadRequest';
  readonly description: string;
}

export interface RequestVars {
  /** The request path as received, percent-encoded. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly host?: string;
  /** Captures that replace the mount's own (ApiRequest.captures). */
  readonly captures?: readonly string[];
}

/** Percent-decodes once and joins repeated slashes; undefined when the encoding is bad. */
export function decodePath(raw: string): string | undefined {
  // The usual path has nothing to decode or join: it is its own answer.
  if (raw.indexOf('%') < 0) return joinSlashes(raw);
  try {
    return joinSlashes(decodeURIComponent(raw));
  } catch {
    return undefined;
  }
}

function joinSlashes(path: string): string {
  return path.indexOf('//') < 0 ? path : path.replace(/\/{2,}/g, '/');
}

const DOT_DOT = /(?:^|\/)\.\.(?:\/|$)/;

function hasDotDot(path: string): boolean {
  return DOT_DOT.test(path);
}

/** The mount a decoded URI falls in, in nginx's order: an exact location first, then
 * the first regex that matches, in order of appearance, then the longest prefix. */
export function findMount(mounts: readonly ApiMount[], uri: string): { mount: ApiMount; captures: string[] } | undefined {
  for (const m of mounts) if (m.exact && uri === m.location) return { mount: m, captures: [] };
  for (const m of mounts) {
    if (!(m.location instanceof RegExp)) continue;
    const match = m.location.exec(uri);
    if (match) return { mount: m, captures: match.slice(1).map((c) => c ?? '') };
  }
  let best: ApiMount | undefined;
  for (const m of mounts) {
    if (m.exact || typeof m.location !== 'string') continue;
    if (matchesPrefix(uri, m.location) && (!best || m.location.length > (best.location as string).length)) best = m;
  }
  return best && { mount: best, captures: [] };
}

/** `/status/` also takes `/status`: a trailing slash is optional for the API. */
function matchesPrefix(uri: string, prefix: string): boolean {
  return uri.startsWith(prefix) || (prefix.endsWith('/') && uri === prefix.slice(0, -1));
}

const subtrees = new Map<string, string>();

/** The static part of an `api` path before its first variable: what the mount exposes. */
function subtree(api: string): string {
  let s = subtrees.get(api);
  if (s === undefined) subtrees.set(api, (s = subtreeOf(api)));
  return s;
}

function subtreeOf(api: string): string {
  const i = api.indexOf('$');
  const fixed = i < 0 ? api : api.slice(0, i);
  return fixed.slice(0, fixed.lastIndexOf('/') + 1) || '/';
}

/** What an `api` path's variables read. */
interface MappingContext {
  readonly vars: RequestVars;
  readonly uri: string;
  readonly captures: readonly string[];
}

/** The variables an `api` path may hold: the API's own, as nginx's would give them. */
export const apiVariables = new Variables<MappingContext>([
  {
    names: {
      uri: (c) => c.uri,
      host: (c) => (c.vars.host ? hostOfHeader(c.vars.host) : ''),
      ...Object.fromEntries(Array.from({ length: 9 }, (_, i) => [String(i + 1), (c: MappingContext) => c.captures[i]])),
    },
    prefixes: [['arg_', (name) => (c) => c.vars.query.get(name) ?? undefined]],
  },
]);

// Each mount's path compiled once.
const compiled = new Map<string, (c: MappingContext) => string>();

function substitute(api: string, captures: readonly string[], vars: RequestVars, uri: string): string {
  let value = compiled.get(api);
  if (!value) compiled.set(api, (value = apiVariables.compile(api)));
  return value({ vars, uri, captures });
}

/** The API element a request names, or why it names none. undefined: no mount. */
export function mapRequest(mounts: readonly ApiMount[], vars: RequestVars): Mapped | MappingError | undefined {
  const uri = decodePath(vars.path);
  if (uri === undefined) return { error: 'BadRequest', description: `The request path "${vars.path}" is not valid percent-encoding.` };
  if (hasDotDot(uri)) return { error: 'BadRequest', description: `The request path "${vars.path}" contains a ".." segment.` };
  const found = findMount(mounts, uri);
  if (!found) return undefined;
  const { mount } = found;
  const captures = vars.captures ?? found.captures;
  const variables = mount.api.includes('$');
  let path = variables ? substitute(mount.api, captures, vars, uri) : mount.api;
  if (typeof mount.location === 'string' && !mount.exact && !variables)
    path += uri.length >= mount.location.length ? uri.slice(mount.location.length) : '';
  path = joinSlashes(path);
  if (!path.startsWith('/')) path = '/' + path;
  // Variables can carry anything the client sent: check the result again.
  if (hasDotDot(path) || !(path + '/').startsWith(subtree(mount.api)))
    return { error: 'BadRequest', description: `The request path "${vars.path}" leads outside the API subtree "${subtree(mount.api)}".` };
  return { mount, path };
}
