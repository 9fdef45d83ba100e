// What answers a request in a location besides `return`, `proxy_pass` and `api`: the HTTP
// core module's content directives (and the index module's `index`), composed into the
// loader's table by config/directives.ts:
//
//   index <file> ...;                              http, server, location
//   alias <path>;                                  location
//   try_files <file> ... <uri> | =<code>;          server, location
//   error_page <code> ... [=[<response>]] <uri>;   http, server, location, if
//   internal;                                      location
//   server_tokens on | off | build;                http, server, location
//   limit_rate <rate>; limit_rate_after <size>;    http, server, location, if
//   log_not_found on | off;                        http, server, location
//   absolute_redirect, server_name_in_redirect,
//   port_in_redirect on | off;                     http, server, location
import type { At, InheritableLevel, LocationLevel } from '../config/levels.js';
import { define, onOff, type DirectiveSpec } from '../config/spec.js';
import { checkVariables, parseSize } from '../config/values.js';
import { knownHttpVariable } from '../config/variables.js';
import type { AddHeader } from '../headers/config.js';
import { NGINX_REDIRECTS, type RedirectSettings } from './pages.js';

/** `try_files`: the files tried in order, then the last argument. */
export interface TryFiles {
  readonly files: readonly string[];
  /** A URI (an internal redirect), `@name` (a named location) or `=<code>`. */
  readonly last: string;
}

/** One code of an `error_page`. */
export interface ErrorPage {
  readonly status: number;
  /** The answer's status: -1 keeps `status` (no `=`), 0 takes the status of what `uri`
   * answers (`=` alone), else this one (`=<code>`). */
  readonly overwrite: number;
  /** `/path` (an internal redirect), `@name`, or a URL (a redirect to the client). */
  readonly uri: string;
}

export type ServerTokens = 'on' | 'off' | 'build';

/** What one block writes. */
export interface ContentLevel {
  index?: string[];
  /** `prefix`: the location's path, which the alias replaces; absent in a regex location. */
  alias?: At<string> & { readonly prefix?: string };
  tryFiles?: TryFiles;
  /** Only those written in this block: a block with any replaces the outer list (nginx). */
  errorPages?: ErrorPage[];
  internal?: boolean;
  serverTokens?: ServerTokens;
  limitRate?: number | string;
  limitRateAfter?: number | string;
  redirect?: Partial<Record<keyof RedirectSettings, boolean>>;
  logNotFound?: boolean;
}

/** A place's content settings once merged. */
export interface ContentConfig {
  readonly index: readonly string[];
  /** `alias`, with variables possibly ($1 of a regex location): replaces the location's
   * part of the URI. */
  readonly alias?: string;
  /** The part of the URI `alias` replaces: the path of the location that set it (nested
   * locations inherit it with the alias, as nginx's); absent when a regex location set
   * it, whose alias is the whole path. */
  readonly aliasPrefix?: string;
  readonly tryFiles?: TryFiles;
  readonly errorPages: readonly ErrorPage[];
  readonly internal: boolean;
  /** Absent: zonal's default, no `Server` header and `zonal` under error pages. */
  readonly serverTokens?: ServerTokens;
  /** Bytes per second, 0 for no limit; a text with variables, read per request. */
  readonly limitRate: number | string;
  readonly limitRateAfter: number | string;
  /** `add_header` in force, for the answers zonal makes itself (return, files, pages). */
  readonly addHeaders: readonly AddHeader[];
  /** How the redirects zonal makes write their Location. */
  readonly redirect: RedirectSettings;
  /** A file or an index directory that is not there is told in the error log. */
  readonly logNotFound: boolean;
}

declare module '../config/levels.js' {
  interface InheritableLevel {
    /** What the content directives say here. */
    content?: ContentLevel;
  }
}
declare module '../config/model.js' {
  interface Inherited {
    /** index, alias, try_files, error_page, internal, server_tokens, limit_rate. */
    readonly content?: ContentConfig;
  }
}

export const TOP_CONTENT: ContentConfig = { index: ['index.html'], errorPages: [], internal: false, limitRate: 0, limitRateAfter: 0, addHeaders: [], redirect: NGINX_REDIRECTS, logNotFound: true };

/** Each of the three inherits on its own, as nginx merges them. */
function mergeRedirect(outer: RedirectSettings, own: ContentLevel['redirect']): RedirectSettings {
  if (!own) return outer;
  const merged = { absolute: own.absolute ?? outer.absolute, serverName: own.serverName ?? outer.serverName, port: own.port ?? outer.port };
  const same = (a: RedirectSettings) => a.absolute === merged.absolute && a.serverName === merged.serverName && a.port === merged.port;
  return same(outer) ? outer : same(NGINX_REDIRECTS) ? NGINX_REDIRECTS : merged;
}

/** nginx's merge: index, error_page, server_tokens and limit_rate inherit; alias goes with
 * root (a block that sets either replaces both); try_files and internal are the block's
 * own, except that an `if` block keeps its location's. */
export function mergeContent(outer: ContentConfig, level: InheritableLevel & { readonly kind: string }, addHeaders: readonly AddHeader[]): ContentConfig {
  const own = level.content ?? {};
  const keep = level.kind === 'if';
  const set = own.alias ?? (level.root !== undefined ? undefined : outer.alias !== undefined ? { value: outer.alias, prefix: outer.aliasPrefix } : undefined);
  const alias = set?.value;
  const aliasPrefix = set?.prefix;
  const tryFiles = own.tryFiles ?? (keep ? outer.tryFiles : undefined);
  const serverTokens = own.serverTokens ?? outer.serverTokens;
  return {
    index: own.index ?? outer.index,
    ...(alias !== undefined ? { alias } : {}),
    ...(aliasPrefix !== undefined ? { aliasPrefix } : {}),
    ...(tryFiles ? { tryFiles } : {}),
    errorPages: own.errorPages ?? outer.errorPages,
    internal: own.internal ?? (keep ? outer.internal : false),
    ...(serverTokens ? { serverTokens } : {}),
    limitRate: own.limitRate ?? outer.limitRate,
    limitRateAfter: own.limitRateAfter ?? outer.limitRateAfter,
    addHeaders,
    redirect: mergeRedirect(outer.redirect, own.redirect),
    logNotFound: own.logNotFound ?? outer.logNotFound,
  };
}

/** Nothing but the defaults: the model leaves `content` out. */
export const defaultContent = (c: ContentConfig): boolean =>
  c.index.length === 1 &&
  c.index[0] === 'index.html' &&
  c.alias === undefined &&
  c.tryFiles === undefined &&
  c.errorPages.length === 0 &&
  !c.internal &&
  c.serverTokens === undefined &&
  c.limitRate === 0 &&
  c.limitRateAfter === 0 &&
  c.addHeaders.length === 0 &&
  c.redirect === NGINX_REDIRECTS &&
  c.logNotFound;

const levelOf = (level: InheritableLevel): ContentLevel => (level.content ??= {});

function redirectFlag(key: keyof RedirectSettings) {
  return define({
    contexts: ['http', 'server', 'location'],
    args: [1, 1],
    apply(d, level, c) {
      const [arg] = d.args;
      if (arg !== 'on' && arg !== 'off') return c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "on" or "off"`);
      (levelOf(level).redirect ??= {})[key] = arg === 'on';
    },
  });
}

function size(name: string, set: (l: ContentLevel, n: number | string) => void, variables: boolean) {
  return define({
    contexts: ['http', 'server', 'location', 'if'],
    args: [1, 1],
    apply(d, level, c) {
      const [arg] = d.args;
      if (arg.includes('$') && variables) {
        const error = checkVariables(arg, knownHttpVariable);
        return error ? c.error(d.origin, error) : set(levelOf(level), arg);
      }
      if (arg.includes('$')) return c.error(d.origin, `variables in "${name}" are not supported`);
      const n = parseSize(arg);
      if (n === undefined) c.error(d.origin, `invalid value "${arg}" in "${name}" directive`);
      else set(levelOf(level), n);
    },
  });
}

export const contentDirectives: Readonly<Record<string, DirectiveSpec>> = {
  index: define({
    contexts: ['http', 'server', 'location'],
    args: [1, Infinity],
    // nginx adds the arguments of every `index` of a block to one list.
    multiple: true,
    apply(d, level, c) {
      for (const [i, name] of d.args.entries()) {
        if (name === '') return c.error(d.origin, `index "${name}" in "index" directive is invalid`);
        const error = checkVariables(name, knownHttpVariable);
        if (error) return c.error(d.origin, error);
        if (name.startsWith('/') && i !== d.args.length - 1) return c.error(d.origin, `only the last index in "index" directive should be absolute`);
      }
      (levelOf(level).index ??= []).push(...d.args);
    },
  }),

  alias: define({
    contexts: ['location'],
    args: [1, 1],
    apply(d, location: LocationLevel, c) {
      if (location.modifier === '@') return c.error(d.origin, `"alias" directive cannot be used inside the named location`);
      if (location.seen.has('root')) return c.error(d.origin, `"alias" directive is duplicate, "root" directive was specified earlier`);
      const error = checkVariables(d.args[0], knownHttpVariable);
      if (error) return c.error(d.origin, error);
      // Relative to the prefix, as root, its final '/' kept (the URI's part is appended
      // to it); a path that begins with a variable is the variable's.
      const [arg] = d.args;
      const value = arg.startsWith('$') ? arg : c.path(arg, 'prefix') + (arg.endsWith('/') && arg !== '/' ? '/' : '');
      const regex = location.modifier === '~' || location.modifier === '~*';
      levelOf(location).alias = { value, origin: d.origin, ...(regex ? {} : { prefix: location.path }) };
    },
  }),

  try_files: define({
    contexts: ['server', 'location'],
    args: [2, Infinity],
    apply(d, level, c) {
      const files = d.args.slice(0, -1);
      const last = d.args[d.args.length - 1];
      for (const arg of d.args) {
        const error = checkVariables(arg, knownHttpVariable);
        if (error) return c.error(d.origin, error);
      }
      if (last.startsWith('=')) {
        const code = /^=\d{3}$/.test(last) ? Number(last.slice(1)) : 0;
        if (code < 100 || code > 999) return c.error(d.origin, `invalid code "${last}"`);
      } else if (last === '' || (!last.startsWith('/') && !last.startsWith('@') && !last.startsWith('$'))) return c.error(d.origin, `invalid URI "${last}" in "try_files" directive`);
      levelOf(level).tryFiles = { files, last };
    },
  }),

  error_page: define({
    contexts: ['http', 'server', 'location', 'if'],
    args: [2, Infinity],
    multiple: true,
    apply(d, level, c) {
      const uri = d.args[d.args.length - 1];
      let codes = d.args.slice(0, -1);
      let overwrite = -1;
      const last = codes[codes.length - 1];
      if (last.startsWith('=')) {
        if (codes.length === 1) return c.error(d.origin, `invalid value "${last}"`);
        overwrite = last === '=' ? 0 : /^=\d{3}$/.test(last) ? Number(last.slice(1)) : NaN;
        if (!(overwrite >= 0)) return c.error(d.origin, `invalid value "${last}"`);
        codes = codes.slice(0, -1);
      }
      if (uri === '') return c.error(d.origin, `invalid URI "${uri}" in "error_page" directive`);
      const error = checkVariables(uri, knownHttpVariable);
      if (error) return c.error(d.origin, error);
      const list = (levelOf(level).errorPages ??= []);
      for (const arg of codes) {
        const status = /^\d{3}$/.test(arg) ? Number(arg) : 0;
        if (status < 300 || status > 599) return c.error(d.origin, `value "${arg}" must be between 300 and 599`);
        if (status === 499) return c.error(d.origin, `value "${arg}" must be between 300 and 599, except 499`);
        list.push({ status, overwrite, uri });
      }
    },
  }),

  internal: define({
    contexts: ['location'],
    args: [0, 0],
    apply(_d, location) {
      levelOf(location).internal = true;
    },
  }),

  server_tokens: define({
    contexts: ['http', 'server', 'location'],
    args: [1, 1],
    apply(d, level, c) {
      const [arg] = d.args;
      if (arg === 'on' || arg === 'off' || arg === 'build') levelOf(level).serverTokens = arg;
      else c.error(d.origin, `invalid value "${arg}" in "server_tokens" directive, it must be "on", "off" or "build"`);
    },
  }),

  log_not_found: define({
    contexts: ['http', 'server', 'location'],
    args: [1, 1],
    apply(d, level, c) {
      const on = onOff(d, c);
      if (on !== undefined) levelOf(level).logNotFound = on;
    },
  }),
  absolute_redirect: redirectFlag('absolute'),
  server_name_in_redirect: redirectFlag('serverName'),
  port_in_redirect: redirectFlag('port'),

  // nginx has taken variables in limit_rate since 1.17.0: the rate is read per request.
  limit_rate: size('limit_rate', (l, n) => (l.limitRate = n), true),
  limit_rate_after: size('limit_rate_after', (l, n) => (l.limitRateAfter = n), true),
};
