// A `map` at run time: the source value looked up as nginx's ngx_http_map_find does
// (exact keys caseless, then the longest leading wildcard, the longest trailing one,
// the regexes in order, the default), the value found evaluated, with the groups of the
// regex that matched as its $1..$9. A variable the configuration defines is evaluated
// when a value first reads it, and kept for the rest of the request unless `volatile`.
import type { Variable, Variables } from '../../api/variables.js';

/** A map's keys as its block says them. */
export interface MapTable {
  readonly hostnames: boolean;
  readonly volatile: boolean;
  /** Exact keys, lowercase. */
  readonly exact: ReadonlyMap<string, string>;
  /** `*.example.com` and `.example.com` (hostnames): by their suffix `.example.com`. */
  readonly heads: ReadonlyMap<string, string>;
  /** `www.example.*` (hostnames): by their prefix `www.example.`. */
  readonly tails: ReadonlyMap<string, string>;
  readonly regexes: ReadonlyArray<{ readonly regex: RegExp; readonly value: string }>;
  readonly default?: string;
}

/** What a module's variables are evaluated in: the table, what a request's values are
 * kept on, and the same context with a regex's groups as its captures. */
export interface Scope<C> {
  readonly table: Variables<C>;
  owner(c: C): object;
  withCaptures(c: C, groups: readonly string[]): C;
}

/** The value a lookup found: a key's text, with the groups of a regex. */
interface Found {
  readonly value: string;
  readonly groups?: readonly string[];
}

export function lookup(t: MapTable, source: string): Found | undefined {
  let key = source;
  // nginx: a host name's trailing dot is no part of it.
  if (t.hostnames && key.endsWith('.')) key = key.slice(0, -1);
  const low = key.toLowerCase();
  const exact = t.exact.get(low);
  if (exact !== undefined) return { value: exact };
  if (t.heads.size) {
    for (let i = low.indexOf('.'); i >= 0; i = low.indexOf('.', i + 1)) {
      const v = t.heads.get(low.slice(i));
      if (v !== undefined) return { value: v };
    }
  }
  if (t.tails.size) {
    for (let i = low.lastIndexOf('.'); i > 0; i = low.lastIndexOf('.', i - 1)) {
      const v = t.tails.get(low.slice(0, i + 1));
      if (v !== undefined) return { value: v };
    }
  }
  // nginx runs no regex on an empty value.
  if (key !== '') {
    for (const { regex, value } of t.regexes) {
      const m = regex.exec(key);
      if (m) return { value, groups: m.slice(1).map((g) => g ?? '') };
    }
  }
  return t.default === undefined ? undefined : { value: t.default };
}

const VALUES = Symbol('zonal.defined-variables');
/** Being evaluated: a map that reads itself through others finds nothing. */
const EVALUATING = Symbol('zonal.evaluating');
type Owner = { [VALUES]?: Map<string, string | undefined | typeof EVALUATING> };

/** `evaluate` kept per request (or session) under `name`, unless `volatile`. */
export function cached<C>(scope: Scope<C>, name: string, volatile: boolean, evaluate: Variable<C>): Variable<C> {
  if (volatile) return evaluate;
  return (c) => {
    const owner = scope.owner(c) as Owner;
    const values = (owner[VALUES] ??= new Map());
    if (values.has(name)) {
      const v = values.get(name);
      return v === EVALUATING ? undefined : v;
    }
    values.set(name, EVALUATING);
    const v = evaluate(c);
    values.set(name, v);
    return v;
  };
}

/** The variable a `map` defines. Its values are compiled at their first use, once every
 * variable of the configuration is defined. */
export function mapVariable<C>(name: string, source: string, t: MapTable, scope: Scope<C>): Variable<C> {
  let sourceOf: ((c: C) => string) | undefined;
  const compiled = new Map<string, (c: C) => string>();
  const valueOf = (text: string) => {
    let f = compiled.get(text);
    if (!f) compiled.set(text, (f = scope.table.compile(text)));
    return f;
  };
  return cached(scope, name, t.volatile, (c) => {
    const found = lookup(t, (sourceOf ??= scope.table.compile(source))(c));
    if (!found) return '';
    const value = valueOf(found.value);
    return found.groups ? value(scope.withCaptures(c, found.groups)) : value(c);
  });
}
