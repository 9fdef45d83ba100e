// nginx's gzip and gzip_static modules, their directives declared beside their code:
//
//   gzip on | off;                                   http, server, location, if in location
//   gzip_types <mime/type> ... | *;                  http, server, location
//   gzip_min_length <length>;                        http, server, location
//   gzip_comp_level <1-9>;                           http, server, location
//   gzip_proxied off | expired | no-cache | no-store | private | no_last_modified |
//                no_etag | auth | any ...;           http, server, location
//   gzip_vary on | off;                              http, server, location
//   gzip_disable <regex> | msie6 ...;                http, server, location
//   gzip_http_version 1.0 | 1.1;                     http, server, location
//   gzip_buffers <number> <size>;                    http, server, location (accepted: zlib sizes its own)
//   gzip_static on | off | always;                   http, server, location
import type { Checker, InheritableLevel } from '../config/levels.js';
import { compileRegex } from '../config/regex.js';
import { define, onOff, type DirectiveSpec } from '../config/spec.js';
import type { Directive } from '../config/syntax.js';
import { parseSize } from '../config/values.js';

/** gzip_proxied's conditions, nginx's names. */
export type GzipProxied = 'off' | 'expired' | 'no-cache' | 'no-store' | 'private' | 'no_last_modified' | 'no_etag' | 'auth' | 'any';
const PROXIED: ReadonlySet<string> = new Set<GzipProxied>(['off', 'expired', 'no-cache', 'no-store', 'private', 'no_last_modified', 'no_etag', 'auth', 'any']);

export type GzipStatic = 'on' | 'off' | 'always';

/** What one block writes. */
export interface GzipLevel {
  enable?: boolean;
  /** Lowercase types; `*` any. */
  types?: string[];
  minLength?: number;
  compLevel?: number;
  proxied?: GzipProxied[];
  vary?: boolean;
  /** gzip_disable's regexes; `msie6` apart. */
  disable?: { regexes: RegExp[]; msie6: boolean };
  /** gzip_http_version: 10 or 11. */
  httpVersion?: number;
  static?: GzipStatic;
}

/** The gzip settings of a place once merged. */
export interface GzipConfig {
  readonly enable: boolean;
  /** Lowercase MIME types compressed (text/html always is); absent: any (`*`). */
  readonly types?: ReadonlySet<string>;
  readonly minLength: number;
  readonly compLevel: number;
  readonly proxied: ReadonlySet<GzipProxied>;
  readonly vary: boolean;
  readonly disable: readonly RegExp[];
  readonly disableMsie6: boolean;
  /** The least HTTP version compressed for: 10 or 11. */
  readonly httpVersion: number;
  readonly static: GzipStatic;
}

declare module '../config/levels.js' {
  interface InheritableLevel {
    /** What the gzip directives say here. */
    gzip?: GzipLevel;
  }
}
declare module '../config/model.js' {
  interface Inherited {
    /** gzip and gzip_static; absent when neither is on. */
    readonly gzip?: GzipConfig;
  }
}

/** nginx's defaults. */
export const TOP_GZIP: GzipConfig = {
  enable: false,
  types: new Set(['text/html']),
  minLength: 20,
  compLevel: 1,
  proxied: new Set(['off']),
  vary: false,
  disable: [],
  disableMsie6: false,
  httpVersion: 11,
  static: 'off',
};

/** nginx's merge: each setting inherits unless the block sets it. */
export function mergeGzip(outer: GzipConfig, level: InheritableLevel): GzipConfig {
  const own = level.gzip;
  if (!own) return outer;
  const types = own.types === undefined ? outer.types : own.types.includes('*') ? undefined : new Set(['text/html', ...own.types]);
  return {
    enable: own.enable ?? outer.enable,
    ...(types ? { types } : {}),
    minLength: own.minLength ?? outer.minLength,
    compLevel: own.compLevel ?? outer.compLevel,
    proxied: own.proxied ? new Set(own.proxied) : outer.proxied,
    vary: own.vary ?? outer.vary,
    disable: own.disable?.regexes ?? outer.disable,
    disableMsie6: own.disable?.msie6 ?? outer.disableMsie6,
    httpVersion: own.httpVersion ?? outer.httpVersion,
    static: own.static ?? outer.static,
  };
}

/** Whether a place has anything to do with gzip: the model leaves it out otherwise. */
export const gzipInUse = (g: GzipConfig): boolean => g.enable || g.static !== 'off';

const levelOf = (level: InheritableLevel): GzipLevel => (level.gzip ??= {});

const ALL = ['http', 'server', 'location'] as const;

function flag(set: (l: GzipLevel, on: boolean) => void, contexts: readonly ('http' | 'server' | 'location' | 'if')[] = ALL) {
  return define({
    contexts,
    args: [1, 1],
    apply(d, level, c) {
      const on = onOff(d, c);
      if (on !== undefined) set(levelOf(level), on);
    },
  });
}

/** nginx's words for an enumerated value it does not know. */
function invalid(d: Directive, c: Checker, arg = d.args[0]): void {
  c.error(d.origin, `invalid value "${arg}"`);
}

/** nginx's words for a size or count it cannot read. */
const unreadable = (d: Directive, c: Checker) => c.error(d.origin, `"${d.name}" directive invalid value`);

export const gzipDirectives: Readonly<Record<string, DirectiveSpec>> = {
  gzip: flag((l, on) => (l.enable = on), ['http', 'server', 'location', 'if']),
  gzip_vary: flag((l, on) => (l.vary = on)),
  gzip_types: define({
    contexts: ALL,
    args: [1, Infinity],
    // nginx adds the types of every gzip_types of a block to one list.
    multiple: true,
    apply(d, level) {
      const l = levelOf(level);
      l.types = [...(l.types ?? []), ...d.args.map((t) => t.toLowerCase())];
    },
  }),
  gzip_min_length: define({
    contexts: ALL,
    args: [1, 1],
    apply(d, level, c) {
      const n = parseSize(d.args[0]);
      if (n === undefined) unreadable(d, c);
      else levelOf(level).minLength = n;
    },
  }),
  gzip_comp_level: define({
    contexts: ALL,
    args: [1, 1],
    apply(d, level, c) {
      const [arg] = d.args;
      if (!/^\d{1,10}$/.test(arg)) return c.error(d.origin, `"${d.name}" directive invalid number`);
      const n = Number(arg);
      if (n < 1 || n > 9) return c.error(d.origin, 'value must be between 1 and 9');
      levelOf(level).compLevel = n;
    },
  }),
  gzip_proxied: define({
    contexts: ALL,
    args: [1, Infinity],
    multiple: true,
    apply(d, level, c) {
      const bad = d.args.find((a) => !PROXIED.has(a));
      if (bad !== undefined) return invalid(d, c, bad);
      const l = levelOf(level);
      l.proxied = [...(l.proxied ?? []), ...(d.args as GzipProxied[])];
    },
  }),
  gzip_disable: define({
    contexts: ALL,
    args: [1, Infinity],
    apply(d, level, c) {
      const disable = { regexes: [] as RegExp[], msie6: false };
      for (const arg of d.args) {
        if (arg === 'msie6') {
          disable.msie6 = true;
          continue;
        }
        try {
          // nginx compiles them caseless.
          disable.regexes.push(compileRegex(arg, true));
        } catch (e) {
          return c.error(d.origin, `invalid regular expression "${arg}" in "${d.name}" directive: ${(e as Error).message}`);
        }
      }
      levelOf(level).disable = disable;
    },
  }),
  gzip_http_version: define({
    contexts: ALL,
    args: [1, 1],
    apply(d, level, c) {
      const [arg] = d.args;
      if (arg !== '1.0' && arg !== '1.1') return invalid(d, c);
      levelOf(level).httpVersion = arg === '1.0' ? 10 : 11;
    },
  }),
  gzip_buffers: define({
    contexts: ALL,
    args: [2, 2],
    apply(d, _level, c) {
      const [number, size] = d.args;
      if (!/^\d{1,10}$/.test(number) || Number(number) === 0 || !parseSize(size)) unreadable(d, c);
    },
  }),
  gzip_static: define({
    contexts: ALL,
    args: [1, 1],
    apply(d, level, c) {
      const [arg] = d.args;
      if (arg !== 'on' && arg !== 'off' && arg !== 'always') return invalid(d, c);
      levelOf(level).static = arg;
    },
  }),
};
