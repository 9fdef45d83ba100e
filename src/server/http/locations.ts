// nginx's location search (ngx_http_core_find_location), step for step, over tables built
// once per server so that a request costs a map lookup, a prefix scan and the regexes.
import type { LocationConfig } from '../config/model.js';

export interface LocationMatch {
  readonly location: LocationConfig;
  /** The groups of the last regex location that matched on the way ($1 is `captures[0]`);
   * a group that took no part in the match is `''`, as nginx's `$n` is empty. */
  readonly captures: string[];
  /** Its named groups, which nginx makes variables. */
  readonly groups?: Readonly<Record<string, string | undefined>>;
  /** nginx's auto redirect: the URI is `location.path` without its final slash, and the
   * answer is a 301 to `location.path` (the query kept), before anything else of the
   * location runs. */
  readonly redirect?: true;
}

/**
 * Whether a request for the location's path without its final slash is redirected to the
 * path (nginx's `auto_redirect`): a prefix or exact location whose path ends with '/' and
 * whose own content is proxied (`proxy_pass`, as nginx's `*_pass` directives) or the API
 * (Angie's `api`). An `if` block's content does not count, as in nginx, whose flag is the
 * location's own.
 */
export function autoRedirects(location: LocationConfig): boolean {
  if (location.modifier === '~' || location.modifier === '~*') return false;
  return location.path.length > 1 && location.path.endsWith('/') && (location.api !== undefined || location.proxy !== undefined);
}

interface Prefix {
  readonly path: string;
  readonly location: LocationConfig;
  /** `^~`: when this is the longest prefix, this level's regexes are not tried. */
  readonly noregex: boolean;
  readonly nested?: Level;
}

interface Regex {
  readonly regex: RegExp;
  readonly location: LocationConfig;
  readonly nested?: Level;
}

interface Level {
  readonly exact: ReadonlyMap<string, LocationConfig>;
  /** Longest first, so the first that matches is the longest. */
  readonly prefixes: readonly Prefix[];
  /** In order of appearance: the first that matches wins. */
  readonly regexes: readonly Regex[];
  /** The locations that auto-redirect (autoRedirects()), by their path without its final
   * slash: the URI a redirect answers. */
  readonly redirects: ReadonlyMap<string, LocationConfig>;
}

/** The search's state, the counterpart of `r->loc_conf` and `r->captures`. */
interface Search {
  location: LocationConfig | undefined;
  captures: RegExpExecArray | undefined;
  /** NGX_DONE: `location` answers with its redirect. */
  redirect: boolean;
}

export class LocationIndex {
  private readonly root: Level;

  constructor(locations: readonly LocationConfig[]) {
    this.root = level(locations);
  }

  /** `uri`: the decoded, normalised path, without the query. */
  match(uri: string): LocationMatch | undefined {
    const search: Search = { location: undefined, captures: undefined, redirect: false };
    find(this.root, uri, search);
    if (search.location === undefined) return undefined;
    if (search.redirect) return { location: search.location, captures: [], redirect: true };
    const groups = search.captures?.groups;
    return { location: search.location, captures: captures(search.captures), ...(groups ? { groups } : {}) };
  }
}

function level(locations: readonly LocationConfig[]): Level {
  const exact = new Map<string, LocationConfig>();
  const prefixes: Prefix[] = [];
  const regexes: Regex[] = [];
  for (const location of locations) {
    const nested = location.locations.length > 0 ? level(location.locations) : undefined;
    switch (location.modifier) {
      case '=':
        // A duplicate is a configuration error; should one get here, the first stands.
        if (!exact.has(location.path)) exact.set(location.path, location);
        break;
      case '':
      case '^~':
        prefixes.push({ path: location.path, location, noregex: location.modifier === '^~', nested });
        break;
      case '~':
      case '~*':
        regexes.push({ regex: searchable(location), location, nested });
        break;
    }
  }
  // Array.prototype.sort is stable: among equal lengths (a duplicate) the first stays first.
  prefixes.sort((a, b) => b.path.length - a.path.length);
  // nginx keeps an exact and a prefix location of the same path in one node of its tree,
  // which redirects when either has the flag, in the exact one's settings when it has one.
  const redirects = new Map<string, LocationConfig>();
  for (const location of locations) {
    if (!autoRedirects(location)) continue;
    const uri = location.path.slice(0, -1);
    if (redirects.has(uri)) continue;
    redirects.set(uri, exact.get(location.path) ?? prefixes.find((p) => p.path === location.path)!.location);
  }
  return { exact, prefixes, regexes, redirects };
}

/** A `g` or `y` flag would make `exec` depend on the previous request through `lastIndex`. */
function searchable(location: LocationConfig): RegExp {
  const regex = location.regex ?? new RegExp(location.path, location.modifier === '~*' ? 'i' : '');
  if (!regex.global && !regex.sticky) return regex;
  return new RegExp(regex.source, regex.flags.replace(/[gy]/g, ''));
}

/** true: the search is over (nginx's NGX_OK): an exact match, or a regex matched; or an
 * auto redirect (NGX_DONE, `search.redirect` set). Otherwise `search.location` holds the
 * longest prefix found so far, if any (NGX_AGAIN / NGX_DECLINED, which the caller treats
 * alike). */
function find(here: Level, uri: string, search: Search): boolean {
  const exact = here.exact.get(uri);
  if (exact !== undefined) {
    search.location = exact;
    return true;
  }

  let longest: Prefix | undefined;
  for (const prefix of here.prefixes) {
    if (uri.startsWith(prefix.path)) {
      longest = prefix;
      break;
    }
  }
  // nginx's tree walk passes every prefix of the URI on its way to the location the URI
  // is one slash short of; that one redirects (and ends the search: no nested location, no
  // regex) unless a location of this level is the URI itself.
  const redirect = here.redirects.get(uri);
  if (redirect !== undefined && (longest === undefined || longest.path.length < uri.length)) {
    search.location = redirect;
    search.redirect = true;
    return true;
  }

  let noregex = false;
  if (longest !== undefined) {
    const prefix = longest;
    search.location = prefix.location;
    // nginx takes noregex from the prefix found at this level, before the nested search:
    // a `^~` nested deeper stops only its own level's regexes, not these.
    noregex = prefix.noregex;
    if (prefix.nested !== undefined && find(prefix.nested, uri, search)) return true;
  }

  if (noregex) return false;
  for (const regex of here.regexes) {
    const groups = regex.regex.exec(uri);
    if (groups === null) continue;
    search.location = regex.location;
    search.captures = groups;
    // A nested match replaces the regex location; none leaves it. Either way the search ends.
    if (regex.nested !== undefined) find(regex.nested, uri, search);
    // nginx turns a redirect found there into a match (`rc == NGX_ERROR ? rc : NGX_OK`):
    // the location it names answers the URI as it is.
    search.redirect = false;
    return true;
  }
  return false;
}

function captures(groups: RegExpExecArray | undefined): string[] {
  if (groups === undefined || groups.length <= 1) return [];
  const out = new Array<string>(groups.length - 1);
  for (let i = 1; i < groups.length; i++) out[i - 1] = groups[i] ?? '';
  return out;
}
