// The proxy cache's configuration, declared beside its code (composed into the loader's
// table by config/directives.ts), with nginx's and Angie's syntax and defaults:
//
//   proxy_cache_path <path> [levels=1:2] keys_zone=<name>:<size> [inactive=10m]
//                    [max_size=<size>] [min_free=<size>] [use_temp_path=on|off];      http
//   proxy_cache <zone> | off;   proxy_cache_key <string>;   proxy_cache_valid [codes|any] <time>;
//   proxy_cache_methods GET|HEAD|POST ...;   proxy_cache_min_uses <n>;
//   proxy_cache_bypass <string> ...;   proxy_no_cache <string> ...;
//   proxy_cache_use_stale off | error timeout invalid_header updating http_500 http_502 http_503 http_504 http_403 http_404 http_429;
//   proxy_cache_background_update on|off;   proxy_cache_revalidate on|off;   proxy_cache_convert_head on|off;
//   proxy_cache_lock on|off;   proxy_cache_lock_timeout <time>;   proxy_cache_lock_age <time>;
//
// Sharding (Angie): several proxy_cache_path directives naming one keys_zone are the
// shards of one cache, one per path; a key's MD5 picks its shard. The zone's size is
// given once (the first that gives it), each shard has its own max_size.
import { addon } from '../../engine/native.js';
import { parseTime } from '../../metrics/peers.js';
import { onOff, type DirectiveSpec } from '../config/spec.js';
import type { AnyLevel, Checker, Context, InheritableLevel } from '../config/levels.js';
import type { Origin } from '../config/model.js';
import type { Directive } from '../config/syntax.js';
import { checkVariables, isZoneName } from '../config/values.js';
import { knownHttpVariable } from '../config/variables.js';
import type { ValidRule } from './policy.js';

export type StaleCondition = 'error' | 'timeout' | 'invalid_header' | 'updating' | 'http_500' | 'http_502' | 'http_503' | 'http_504' | 'http_403' | 'http_404' | 'http_429';
const STALE: readonly StaleCondition[] = ['error', 'timeout', 'invalid_header', 'updating', 'http_500', 'http_502', 'http_503', 'http_504', 'http_403', 'http_404', 'http_429'];

export interface CacheShardPath {
  /** Absolute. */
  readonly path: string;
  readonly levels: readonly number[];
  /** Bytes; 0: none. */
  readonly maxSize: number;
  readonly minFree: number;
  readonly useTempPath: boolean;
  /** The loader: files per batch, and ms between batches. */
  readonly loaderFiles: number;
  readonly loaderSleep: number;
  readonly origin: Origin;
}

/** One keys_zone: a cache, with one path, or one per shard. */
export interface CacheZone {
  readonly name: string;
  /** Bytes of the keys zone. */
  readonly size: number;
  /** ms. */
  readonly inactive: number;
  readonly paths: readonly CacheShardPath[];
  readonly origin: Origin;
}

/** What one block says of the cache. */
export interface CacheLevel {
  readonly zones: CacheZone[];
  /** `false`: proxy_cache off. */
  cache?: { readonly zone: string | false; readonly origin: Origin };
  key?: string;
  /** Only those written in this block: a block with any replaces the outer list. */
  valid?: ValidRule[];
  methods?: string[];
  minUses?: number;
  bypass?: string[];
  noCache?: string[];
  useStale?: StaleCondition[];
  backgroundUpdate?: boolean;
  revalidate?: boolean;
  convertHead?: boolean;
  lock?: boolean;
  lockTimeout?: number;
  lockAge?: number;
}

/** A location's cache once merged. */
export interface CacheUse {
  readonly zone: CacheZone;
  readonly key: string;
  readonly valid: readonly ValidRule[];
  readonly methods: readonly string[];
  readonly minUses: number;
  readonly bypass: readonly string[];
  readonly noCache: readonly string[];
  readonly useStale: readonly StaleCondition[];
  readonly backgroundUpdate: boolean;
  readonly revalidate: boolean;
  /** proxy_cache_convert_head: a HEAD goes to the peer as a GET, whose answer is stored. */
  readonly convertHead: boolean;
  readonly lock: boolean;
  /** ms. */
  readonly lockTimeout: number;
  readonly lockAge: number;
}

// The loader's levels and model carry the cache's settings by augmenting their
// interfaces (see limits/config.ts): the loader's types never import this module.
declare module '../config/levels.js' {
  interface InheritableLevel {
    /** What the proxy cache's directives say here. */
    cache?: CacheLevel;
  }
}
declare module '../config/model.js' {
  interface ProxyConfig {
    /** `proxy_cache` and its settings; absent: not cached. */
    readonly cache?: CacheUse;
  }
  interface HttpBlockConfig {
    /** `proxy_cache_path`: one per keys zone, with its paths (shards); absent: none. */
    readonly caches?: readonly CacheZone[];
  }
}

export type MergedCache = Omit<CacheLevel, 'zones'>;

/** nginx's defaults. */
export const TOP_CACHE: MergedCache = {};
const DEFAULTS = {
  key: '$scheme$proxy_host$request_uri',
  methods: ['GET', 'HEAD'],
  minUses: 1,
  lockTimeout: 5000,
  lockAge: 5000,
  inactive: 600_000,
};

const levelOf = (level: InheritableLevel): CacheLevel => (level.cache ??= { zones: [] });

const define = <const K extends Context>(spec: DirectiveSpec<Extract<AnyLevel, { kind: K }>> & { contexts: readonly K[] }) =>
  spec as unknown as DirectiveSpec;
const inheritable = ['http', 'server', 'location'] as const;

/** An on|off directive of http, server and location. */
const flag = (set: (level: CacheLevel, on: boolean) => void) =>
  define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const v = onOff(d, c);
      if (v !== undefined) set(levelOf(level), v);
    },
  });

/** nginx's sizes: bytes, k, m, g. */
export function parseBytes(arg: string): number | undefined {
  const m = /^(\d{1,12})([kKmMgG]?)$/.exec(arg);
  if (!m) return undefined;
  const unit = m[2].toLowerCase();
  return Number(m[1]) * (unit === '' ? 1 : unit === 'k' ? 1024 : unit === 'm' ? 1 << 20 : 1 << 30);
}

function time(d: Directive, arg: string, c: Checker): number | undefined {
  const s = parseTime(arg, true);
  if (s === undefined) c.error(d.origin, `invalid time value "${arg}" in "${d.name}" directive`);
  return s === undefined ? undefined : s * 1000;
}

function values(d: Directive, c: Checker): string[] | undefined {
  for (const a of d.args) {
    const e = checkVariables(a, knownHttpVariable);
    if (e) return void c.error(d.origin, e);
  }
  return [...d.args];
}

const cachePath = define({
  contexts: ['http'],
  args: [2, 16],
  multiple: true,
  apply(d, http, c) {
    const [dir, ...params] = d.args;
    let levels: number[] = [];
    let zone: { name: string; size?: number } | undefined;
    let inactive: number | undefined;
    let maxSize = 0;
    let minFree = 0;
    let useTempPath = true;
    let loaderFiles = 100;
    let loaderSleep = 50;
    for (const p of params) {
      const eq = p.indexOf('=');
      const name = eq < 0 ? p : p.slice(0, eq);
      const value = p.slice(eq + 1);
      if (name === 'levels') {
        const parts = value.split(':');
        if (parts.length > 3 || !parts.every((l) => l === '1' || l === '2')) return c.error(d.origin, `invalid "levels" "${value}": one to three levels of 1 or 2`);
        levels = parts.map(Number);
      } else if (name === 'keys_zone') {
        const colon = value.lastIndexOf(':');
        const zname = colon < 0 ? value : value.slice(0, colon);
        if (!isZoneName(zname)) return c.error(d.origin, `invalid keys zone name "${zname}": letters, digits, "_", "-" and "." only`);
        if (colon < 0) zone = { name: zname };
        else {
          const size = parseBytes(value.slice(colon + 1));
          if (size === undefined) return c.error(d.origin, `invalid keys zone size "${value.slice(colon + 1)}"`);
          if (size < 8 * addon.pageSize) return c.error(d.origin, `keys zone "${zname}" is too small: at least ${(8 * addon.pageSize) / 1024}k (8 pages)`);
          if (size > 1 << 30) return c.error(d.origin, `keys zone "${zname}" is too large: at most 1024m`);
          zone = { name: zname, size };
        }
      } else if (name === 'inactive') {
        inactive = time(d, value, c);
        if (inactive === undefined) return;
      } else if (name === 'max_size' || name === 'min_free') {
        const n = parseBytes(value);
        if (n === undefined) return c.error(d.origin, `invalid "${name}" value "${value}"`);
        if (name === 'max_size') maxSize = n;
        else minFree = n;
      } else if (name === 'loader_files' || name === 'manager_files') {
        if (!/^[1-9]\d{0,6}$/.test(value)) return c.error(d.origin, `invalid "${name}" value "${value}"`);
        if (name === 'loader_files') loaderFiles = Number(value);
      } else if (name === 'loader_sleep' || name === 'loader_threshold' || name === 'manager_sleep' || name === 'manager_threshold') {
        const ms = time(d, value, c);
        if (ms === undefined) return;
        if (name === 'loader_sleep') loaderSleep = ms;
      } else if (name === 'use_temp_path') {
        if (value !== 'on' && value !== 'off') return c.error(d.origin, `invalid "use_temp_path" value "${value}", it must be "on" or "off"`);
        useTempPath = value === 'on';
      } else {
        return c.error(d.origin, `invalid parameter "${p}"`);
      }
    }
    if (!zone) return c.error(d.origin, `"${d.name}" must have "keys_zone" parameter`);
    const zones = levelOf(http).zones;
    const abs = c.path(dir, 'prefix');
    for (const z of zones)
      for (const p of z.paths) if (p.path === abs) return c.error(d.origin, `cache "${zone.name}" uses the "${abs}" cache path, which is used by cache "${z.name}" already`);
    const shard: CacheShardPath = { path: abs, levels, maxSize, minFree, useTempPath, loaderFiles, loaderSleep, origin: d.origin };
    const i = zones.findIndex((z) => z.name === zone!.name);
    if (i < 0) {
      if (zone.size === undefined) return c.error(d.origin, `keys zone "${zone.name}" needs a size ("keys_zone=${zone.name}:10m") where it is first defined`);
      zones.push({ name: zone.name, size: zone.size, inactive: inactive ?? DEFAULTS.inactive, paths: [shard], origin: d.origin });
    } else {
      const z = zones[i];
      if (zone.size !== undefined && zone.size !== z.size) return c.error(d.origin, `keys zone "${zone.name}" has the size ${z.size} already`);
      zones[i] = { ...z, inactive: inactive ?? z.inactive, paths: [...z.paths, shard] };
    }
  },
});

const STALE_SET = new Set<string>(STALE);

export const cacheDirectives: Record<string, DirectiveSpec> = {
  proxy_cache_path: cachePath,
  // In `if` blocks too (zonal's addition, nginx has it in http, server and location): a
  // block with proxy_cache answers through its location's proxy_pass with its own cache.
  proxy_cache: define({
    contexts: [...inheritable, 'if'],
    args: [1, 1],
    apply(d, level) {
      levelOf(level).cache = { zone: d.args[0] === 'off' ? false : d.args[0], origin: d.origin };
    },
  }),
  proxy_cache_key: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const e = checkVariables(d.args[0], knownHttpVariable);
      if (e) return c.error(d.origin, e);
      levelOf(level).key = d.args[0];
    },
  }),
  proxy_cache_valid: define({
    contexts: inheritable,
    args: [1, 20],
    multiple: true,
    apply(d, level, c) {
      const ms = time(d, d.args[d.args.length - 1], c);
      if (ms === undefined) return;
      const codes: number[] = [];
      let any = false;
      for (const a of d.args.slice(0, -1)) {
        if (a === 'any') any = true;
        else if (/^[1-5]\d\d$/.test(a)) codes.push(Number(a));
        else return c.error(d.origin, `invalid status "${a}" in "${d.name}" directive`);
      }
      const rules = (levelOf(level).valid ??= []);
      if (any) rules.push({ codes: [], ms });
      else rules.push({ codes: d.args.length === 1 ? [200, 301, 302] : codes, ms });
    },
  }),
  proxy_cache_methods: define({
    contexts: inheritable,
    args: [1, 3],
    apply(d, level, c) {
      for (const m of d.args) if (!['GET', 'HEAD', 'POST'].includes(m)) return c.error(d.origin, `invalid value "${m}" in "${d.name}" directive: GET, HEAD or POST`);
      // nginx always caches GET and HEAD.
      levelOf(level).methods = [...new Set(['GET', 'HEAD', ...d.args])];
    },
  }),
  proxy_cache_min_uses: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      if (!/^[1-9]\d{0,5}$/.test(d.args[0])) return c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
      levelOf(level).minUses = Number(d.args[0]);
    },
  }),
  proxy_cache_bypass: define({
    contexts: inheritable,
    args: [1, 20],
    multiple: true,
    apply(d, level, c) {
      const v = values(d, c);
      if (v) (levelOf(level).bypass ??= []).push(...v);
    },
  }),
  proxy_no_cache: define({
    contexts: inheritable,
    args: [1, 20],
    multiple: true,
    apply(d, level, c) {
      const v = values(d, c);
      if (v) (levelOf(level).noCache ??= []).push(...v);
    },
  }),
  proxy_cache_use_stale: define({
    contexts: inheritable,
    args: [1, 11],
    apply(d, level, c) {
      if (d.args.length === 1 && d.args[0] === 'off') return void (levelOf(level).useStale = []);
      for (const a of d.args) if (!STALE_SET.has(a)) return c.error(d.origin, `invalid value "${a}" in "${d.name}" directive`);
      levelOf(level).useStale = d.args as StaleCondition[];
    },
  }),
  proxy_cache_background_update: flag((l, on) => (l.backgroundUpdate = on)),
  proxy_cache_revalidate: flag((l, on) => (l.revalidate = on)),
  proxy_cache_convert_head: flag((l, on) => (l.convertHead = on)),
  proxy_cache_lock: flag((l, on) => (l.lock = on)),
  proxy_cache_lock_timeout: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const v = time(d, d.args[0], c);
      if (v !== undefined) levelOf(level).lockTimeout = v;
    },
  }),
  proxy_cache_lock_age: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const v = time(d, d.args[0], c);
      if (v !== undefined) levelOf(level).lockAge = v;
    },
  }),
};

/** A level's settings over the outer ones, as nginx merges them. */
export function mergeCache(outer: MergedCache, level: InheritableLevel): MergedCache {
  const l = level.cache;
  if (!l) return outer;
  const { zones: _zones, ...own } = l;
  const merged: MergedCache = { ...outer };
  for (const [k, v] of Object.entries(own)) if (v !== undefined) (merged as Record<string, unknown>)[k] = v;
  return merged;
}

/** The http block's caches. */
export function cacheZones(level: InheritableLevel): readonly CacheZone[] {
  return level.cache?.zones ?? [];
}

/** A location's cache, or undefined without one (or with `proxy_cache off`). */
export function resolveCache(m: MergedCache, zones: readonly CacheZone[], c: Checker, reported: Set<object>): CacheUse | undefined {
  const use = m.cache;
  if (!use || use.zone === false) return undefined;
  const zone = zones.find((z) => z.name === use.zone);
  if (!zone) {
    if (!reported.has(use)) {
      reported.add(use);
      c.error(use.origin, `"proxy_cache" zone "${use.zone}" is unknown`);
    }
    return undefined;
  }
  return {
    zone,
    key: m.key ?? DEFAULTS.key,
    valid: m.valid ?? [],
    methods: m.methods ?? DEFAULTS.methods,
    minUses: m.minUses ?? DEFAULTS.minUses,
    bypass: m.bypass ?? [],
    noCache: m.noCache ?? [],
    useStale: m.useStale ?? [],
    backgroundUpdate: m.backgroundUpdate ?? false,
    revalidate: m.revalidate ?? false,
    convertHead: m.convertHead ?? true,
    lock: m.lock ?? false,
    lockTimeout: m.lockTimeout ?? DEFAULTS.lockTimeout,
    lockAge: m.lockAge ?? DEFAULTS.lockAge,
  };
}
