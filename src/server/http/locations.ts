// nginx's location search (ngx_http_core_find_location), step for step, over tables built
// once per server so that a request costs a map lookup, a prefix scan and the regexes.
import type { LocationConfig } from '../config/model.js';

export interface LocationMatch {
  readonly location: LocationConfig;
  /** The groups of the last regex location that matched on the way ($1 is `captures[0]`);
   * a group that took no part in the match is `''`, as nginx's `$n` is empty. */
  readonly captures: string[];
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
}

/** The search's state, the counterpart of `r->loc_conf` and `r->captures`. */
interface Search {
  location: LocationConfig | undefined;
  captures: RegExpExecArray | undefined;
}

export class LocationIndex {
  private readonly root: Level;

  constructor(locations: readonly LocationConfig[]) {
    this.root = level(locations);
  }

  /** `uri`: the decoded, normalised path, without the query. */
  match(uri: string): LocationMatch | undefined {
    const search: Search = { location: undefined, captures: undefined };
    find(this.root, uri, search);
    if (search.location === undefined) return undefined;
    return { location: search.location, captures: captures(search.captures) };
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
  return { exact, prefixes, regexes };
}

/** A `g` or `y` flag would make `exec` depend on the previous request through `lastIndex`. */
function searchable(location: LocationConfig): RegExp {
  const regex = location.regex ?? new RegExp(location.path, location.modifier === '~*' ? 'i' : '');
  if (!regex.global && !regex.sticky) return regex;
  return new RegExp(regex.source, regex.flags.replace(/[gy]/g, ''));
}

/** true: the search is over (nginx's NGX_OK): an exact match, or a regex matched. Otherwise
 * `search.location` holds the longest prefix found so far, if any (NGX_AGAIN / NGX_DECLINED,
 * which the caller treats alike). */
function find(here: Level, uri: string, search: Search): boolean {
  const exact = here.exact.get(uri);
  if (exact !== undefined) {
    search.location = exact;
    return true;
  }

  let noregex = false;
  for (const prefix of here.prefixes) {
    if (!uri.startsWith(prefix.path)) continue;
    search.location = prefix.location;
    // nginx takes noregex from the prefix found at this level, before the nested search:
    // a `^~` nested deeper stops only its own level's regexes, not these.
    noregex = prefix.noregex;
    if (prefix.nested !== undefined && find(prefix.nested, uri, search)) return true;
    break;
  }

  if (noregex) return false;
  for (const regex of here.regexes) {
    const groups = regex.regex.exec(uri);
    if (groups === null) continue;
    search.location = regex.location;
    search.captures = groups;
    // A nested match replaces the regex location; none leaves it. Either way the search ends.
    if (regex.nested !== undefined) find(regex.nested, uri, search);
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
