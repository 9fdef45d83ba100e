// nginx's http core module, the part of it zonal takes as is: the MIME types of files,
// the connection and request body limits, and the temporary paths. Declared beside the
// code that applies them (plane.ts, static.ts), as the other modules do, and spread into
// the loader's table by config/directives.ts.
//
//   types { <mime/type> <extension>...; }  default_type <mime/type>;   http, server, location
//   keepalive_timeout <time> [<header time>]; keepalive_requests <n>; keepalive_time <time>;
//   keepalive_disable none | msie6 | safari ...;
//   client_max_body_size <size>; client_body_buffer_size <size>; client_body_timeout <time>;
//   send_timeout <time>;                                                 http, server, location
//   client_header_timeout <time>; client_header_buffer_size <size>;
//   large_client_header_buffers <n> <size>;                              http, server
//   client_body_temp_path, proxy_temp_path, fastcgi_temp_path, uwsgi_temp_path,
//   scgi_temp_path <path> [<level1> [<level2> [<level3>]]];              http, server, location
//   sendfile, tcp_nopush, tcp_nodelay on|off;                            http, server, location
//   types_hash_max_size, types_hash_bucket_size <size>;                 http, server, location
//   server_names_hash_max_size, server_names_hash_bucket_size <size>;   http
//   open_file_cache off | max=<n> [inactive=<time>]; open_file_cache_errors on|off;
//   open_file_cache_min_uses <n>; open_file_cache_valid <time>;          http, server, location
//   aio on|off|threads[=<pool>]; aio_write on|off; directio <size>|off; directio_alignment,
//   read_ahead, sendfile_max_chunk, postpone_output <size>; output_buffers <n> <size>;
//                                                                        http, server, location
//   variables_hash_max_size, variables_hash_bucket_size <size>;         http
//   etag on|off;                                                         http, server, location
import fs from 'node:fs';
import { parseTime } from '../../../metrics/peers.js';
import { define, onOff, type DirectiveSpec } from '../../config/spec.js';
import type { Context, InheritableLevel } from '../../config/levels.js';
import type { Directive } from '../../config/syntax.js';

/** A temporary directory: where a request body too large for its buffer is written. */
export interface TempPath {
  /** Absolute. */
  readonly path: string;
  /** nginx's `levels`: the lengths (1 or 2) of the subdirectory names, from the file name's end. */
  readonly levels: readonly number[];
}

export interface KeepaliveDisable {
  readonly msie6: boolean;
  readonly safari: boolean;
}

/** What the core module's directives say in one block; unset fields inherit. */
export interface CoreLevel {
  /** `types {}`: extension (lowercase) -> type. A block with one replaces the outer map. */
  types?: Map<string, string>;
  defaultType?: string;
  clientMaxBodySize?: number;
  clientBodyBufferSize?: number;
  clientBodyTimeout?: number;
  sendTimeout?: number;
  keepaliveTimeout?: number;
  /** `keepalive_timeout`'s second argument: absent, no `Keep-Alive` header. */
  keepaliveHeader?: number | null;
  keepaliveRequests?: number;
  keepaliveTime?: number;
  keepaliveDisable?: KeepaliveDisable;
  clientHeaderTimeout?: number;
  clientHeaderBufferSize?: number;
  largeClientHeaderBuffers?: { readonly number: number; readonly size: number };
  clientBodyTempPath?: TempPath;
  proxyTempPath?: TempPath;
  etag?: boolean;
}

/** The core settings in force at a server, location or `if` block. Times in ms, sizes in bytes. */
export interface CoreSettings {
  readonly types: ReadonlyMap<string, string>;
  readonly defaultType: string;
  /** 0: no limit. */
  readonly clientMaxBodySize: number;
  readonly clientBodyBufferSize: number;
  readonly clientBodyTimeout: number;
  readonly sendTimeout: number;
  /** 0: no keep-alive. */
  readonly keepaliveTimeout: number;
  /** Seconds the `Keep-Alive: timeout=` header says; null: no header. */
  readonly keepaliveHeader: number | null;
  readonly keepaliveRequests: number;
  readonly keepaliveTime: number;
  /** `keepalive_disable`: the browsers that get no keep-alive (msie6: on POST only). */
  readonly keepaliveDisable: KeepaliveDisable;
  readonly clientHeaderTimeout: number;
  readonly clientHeaderBufferSize: number;
  readonly largeClientHeaderBuffers: { readonly number: number; readonly size: number };
  readonly clientBodyTempPath?: TempPath;
  readonly proxyTempPath?: TempPath;
  /** `etag off`: static files go without an ETag (absent: with one, nginx's default). */
  readonly etag?: boolean;
}

declare module '../../config/levels.js' {
  interface InheritableLevel {
    /** What the http core module's directives say here. */
    core?: CoreLevel;
  }
}
declare module '../../config/model.js' {
  interface Inherited {
    /** The http core module's settings in force here (absent only in configurations built by hand). */
    readonly core?: CoreSettings;
  }
}

/** nginx's types when no `types` block is written anywhere (ngx_http_core_default_types). */
const DEFAULT_TYPES: ReadonlyMap<string, string> = new Map([
  ['html', 'text/html'],
  ['gif', 'image/gif'],
  ['jpg', 'image/jpeg'],
]);

/** nginx's defaults (the 64-bit ones for the buffers: 16k of body buffer). */
export const TOP_CORE: CoreSettings = {
  types: DEFAULT_TYPES,
  defaultType: 'text/plain',
  clientMaxBodySize: 1024 * 1024,
  clientBodyBufferSize: 16 * 1024,
  clientBodyTimeout: 60_000,
  sendTimeout: 60_000,
  keepaliveTimeout: 75_000,
  keepaliveHeader: null,
  keepaliveRequests: 1000,
  keepaliveTime: 3_600_000,
  keepaliveDisable: { msie6: true, safari: false },
  clientHeaderTimeout: 60_000,
  clientHeaderBufferSize: 1024,
  largeClientHeaderBuffers: { number: 4, size: 8 * 1024 },
};

export function mergeCore(outer: CoreSettings, level: InheritableLevel): CoreSettings {
  const l = level.core;
  if (!l) return outer;
  const out: { -readonly [K in keyof CoreSettings]: CoreSettings[K] } = { ...outer };
  for (const key of Object.keys(l) as Array<keyof CoreLevel>) {
    if (l[key] !== undefined) (out as Record<string, unknown>)[key] = l[key];
  }
  return out;
}

const levelOf = (level: InheritableLevel): CoreLevel => (level.core ??= {});

/** The largest time nginx and Node's timers take, in ms. */
const MAX_MS = 2147483647;

/** A size with nginx's units: k, m and (`offset`: for sizes of files) g. */
function size(arg: string, offset = false): number | undefined {
  const m = (offset ? /^(\d{1,12})([kKmMgG]?)$/ : /^(\d{1,10})([kKmM]?)$/).exec(arg);
  if (!m) return undefined;
  const unit = m[2].toLowerCase();
  return Number(m[1]) * (unit === '' ? 1 : unit === 'k' ? 1024 : unit === 'm' ? 1024 ** 2 : 1024 ** 3);
}

/** A time in ms (`ms` allowed, as nginx's ngx_parse_time); 0 allowed. */
function time(arg: string): number | undefined {
  const s = parseTime(arg, true);
  return s === undefined || s * 1000 > MAX_MS ? undefined : Math.round(s * 1000);
}

const inheritable = ['http', 'server', 'location'] as const;

type Field<T> = { [K in keyof CoreLevel]-?: NonNullable<CoreLevel[K]> extends T ? K : never }[keyof CoreLevel];

function sizeDirective(field: Field<number>, contexts: readonly ('http' | 'server' | 'location')[], offset = false) {
  return define({
    contexts,
    args: [1, 1],
    apply(d, level, c) {
      const n = size(d.args[0], offset);
      if (n === undefined) c.error(d.origin, `"${d.name}" directive invalid value`);
      else levelOf(level)[field] = n;
    },
  });
}

function timeDirective(field: Field<number>, contexts: readonly ('http' | 'server' | 'location')[]) {
  return define({
    contexts,
    args: [1, 1],
    apply(d, level, c) {
      const ms = time(d.args[0]);
      if (ms === undefined) c.error(d.origin, `"${d.name}" directive invalid value`);
      else levelOf(level)[field] = ms;
    },
  });
}

/** A temporary path's directory is made when the configuration is read from the disk, as
 * nginx makes it at start (and at `-t`). */
function tempPath(field?: 'clientBodyTempPath' | 'proxyTempPath') {
  return define({
    contexts: inheritable,
    args: [1, 4],
    apply(d, level, c) {
      const [dir, ...levelArgs] = d.args;
      const levels: number[] = [];
      for (const arg of levelArgs) {
        if (arg !== '1' && arg !== '2') return c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive`);
        levels.push(Number(arg));
      }
      const absolute = c.path(dir, 'prefix');
      if (c.disk) {
        try {
          fs.mkdirSync(absolute, { recursive: true, mode: 0o700 });
        } catch (e) {
          return c.error(d.origin, `mkdir() "${absolute}" failed (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
        }
      }
      if (field) levelOf(level)[field] = { path: absolute, levels };
    },
  });
}

/** A type is `type/subtype`; the extensions are words. */
const isMimeType = (s: string) => /^[^\s/;{}]+\/[^\s;{}]+$/.test(s);

const types = define({
  contexts: inheritable,
  args: [0, 0],
  block: true,
  multiple: true,
  apply(d, level, c) {
    const map = new Map<string, string>();
    // A `types` block holds no directives but `type ext...;` lines, and `include`s of
    // such lines (mime.types is one), as nginx's types handler reads it.
    const read = (lines: readonly Directive[]) => {
      for (const line of lines) {
        if (line.name === 'include' && line.args.length === 1 && !line.block) {
          read(line.included ?? []);
          continue;
        }
        if (line.block) return c.error(line.origin, `unexpected "{" in "types" block`);
        if (!isMimeType(line.name)) return c.error(line.origin, `invalid MIME type "${line.name}"`);
        if (line.args.length === 0) return c.error(line.origin, `invalid number of arguments in MIME type "${line.name}"`);
        // nginx keeps the first type of an extension (with a warning).
        for (const ext of line.args) if (!map.has(ext.toLowerCase())) map.set(ext.toLowerCase(), line.name);
      }
    };
    read(d.block ?? []);
    // Two blocks at one level add up in nginx; the later ones' duplicates lose.
    const own = levelOf(level);
    if (own.types) for (const [ext, type] of map) own.types.has(ext) || own.types.set(ext, type);
    else own.types = map;
  },
});

/** What a tuning's value is, and whether an argument is one. */
const TUNING_VALUES = {
  flag: (a: string) => a === 'on' || a === 'off',
  size: (a: string) => size(a) !== undefined,
  number: (a: string) => /^\d+$/.test(a),
  time: (a: string) => parseTime(a, false) !== undefined,
};

/** A tuning of nginx's own I/O, caches or hash tables, which node's have no use for:
 * checked as nginx checks it, and nothing more (Debian's nginx.conf writes sendfile,
 * tcp_nopush and types_hash_max_size). */
export function tuning(kind: keyof typeof TUNING_VALUES, contexts: readonly Context[] = inheritable) {
  return define({
    contexts,
    args: [1, 1],
    apply(d, _level, c) {
      const [arg] = d.args;
      if (!TUNING_VALUES[kind](arg))
        c.error(d.origin, kind === 'flag' ? `invalid value "${arg}" in "${d.name}" directive, it must be "on" or "off"` : `"${d.name}" directive invalid value`);
    },
  });
}

/** nginx caches open descriptors and the metadata of files it serves; node opens each file
 * it sends, and the kernel caches the rest. Checked as nginx checks it. */
const openFileCache = define({
  contexts: inheritable,
  args: [1, 2],
  apply(d, _level, c) {
    if (d.args[0] === 'off') {
      if (d.args.length > 1) c.error(d.origin, `invalid "open_file_cache" parameter "${d.args[1]}"`);
      return;
    }
    let max = false;
    for (const a of d.args) {
      const [key, value] = [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)];
      const ok = a.includes('=') && (key === 'max' ? /^\d+$/.test(value) && Number(value) > 0 : key === 'inactive' && TUNING_VALUES.time(value));
      if (!ok) return c.error(d.origin, `invalid "open_file_cache" parameter "${a}"`);
      if (key === 'max') max = true;
    }
    if (!max) c.error(d.origin, `"open_file_cache" must have the "max" parameter`);
  },
});

/** `aio`: nginx's asynchronous file reads; node reads files off the event loop (libuv's
 * thread pool) whatever it says. */
const aio = define({
  contexts: inheritable,
  args: [1, 1],
  apply(d, _level, c) {
    const [arg] = d.args;
    if (arg !== 'on' && arg !== 'off' && !/^threads(=\S+)?$/.test(arg)) c.error(d.origin, `"${d.name}" directive invalid value`);
  },
});

/** `directio <size> | off`. */
const directio = define({
  contexts: inheritable,
  args: [1, 1],
  apply(d, _level, c) {
    if (d.args[0] !== 'off' && !TUNING_VALUES.size(d.args[0])) c.error(d.origin, `"${d.name}" directive invalid value`);
  },
});

/** `output_buffers <number> <size>`. */
const outputBuffers = define({
  contexts: inheritable,
  args: [2, 2],
  apply(d, _level, c) {
    const [n, bytes] = d.args;
    if (!/^\d+$/.test(n) || Number(n) < 1 || !TUNING_VALUES.size(bytes)) c.error(d.origin, `"${d.name}" directive invalid value`);
  },
});

export const httpSettingsDirectives: Readonly<Record<string, DirectiveSpec>> = {
  // node writes files through streams, and sets TCP_NODELAY on its sockets itself.
  sendfile: tuning('flag'),
  tcp_nopush: tuning('flag'),
  tcp_nodelay: tuning('flag'),
  types_hash_max_size: tuning('size'),
  types_hash_bucket_size: tuning('size'),
  server_names_hash_max_size: tuning('size', ['http']),
  server_names_hash_bucket_size: tuning('size', ['http']),
  open_file_cache: openFileCache,
  open_file_cache_errors: tuning('flag'),
  open_file_cache_min_uses: tuning('number'),
  open_file_cache_valid: tuning('time'),
  aio,
  aio_write: tuning('flag'),
  directio,
  directio_alignment: tuning('size'),
  read_ahead: tuning('size'),
  sendfile_max_chunk: tuning('size'),
  postpone_output: tuning('size'),
  output_buffers: outputBuffers,
  variables_hash_max_size: tuning('size', ['http']),
  variables_hash_bucket_size: tuning('size', ['http']),
  etag: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const on = onOff(d, c);
      if (on !== undefined) levelOf(level).etag = on;
    },
  }),
  types,
  default_type: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level) {
      levelOf(level).defaultType = d.args[0];
    },
  }),
  keepalive_timeout: define({
    contexts: inheritable,
    args: [1, 2],
    apply(d, level, c) {
      const ms = time(d.args[0]);
      const header = d.args[1] === undefined ? null : parseTime(d.args[1], false);
      if (ms === undefined || header === undefined || (header !== null && header > MAX_MS / 1000)) return c.error(d.origin, `invalid value in "keepalive_timeout" directive`);
      const l = levelOf(level);
      l.keepaliveTimeout = ms;
      l.keepaliveHeader = header;
    },
  }),
  keepalive_requests: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const n = /^\d{1,10}$/.test(d.args[0]) ? Number(d.args[0]) : NaN;
      if (!(n <= 2147483647)) c.error(d.origin, `invalid value "${d.args[0]}" in "keepalive_requests" directive`);
      else levelOf(level).keepaliveRequests = n;
    },
  }),
  keepalive_time: timeDirective('keepaliveTime', inheritable),
  keepalive_disable: define({
    contexts: inheritable,
    args: [1, 3],
    apply(d, level, c) {
      const bad = d.args.find((a) => a !== 'none' && a !== 'msie6' && a !== 'safari');
      if (bad !== undefined) return c.error(d.origin, `invalid value "${bad}" in "keepalive_disable" directive`);
      levelOf(level).keepaliveDisable = { msie6: d.args.includes('msie6'), safari: d.args.includes('safari') };
    },
  }),
  client_max_body_size: sizeDirective('clientMaxBodySize', inheritable, true),
  client_body_buffer_size: sizeDirective('clientBodyBufferSize', inheritable),
  client_body_timeout: timeDirective('clientBodyTimeout', inheritable),
  send_timeout: timeDirective('sendTimeout', inheritable),
  client_header_timeout: timeDirective('clientHeaderTimeout', ['http', 'server']),
  client_header_buffer_size: sizeDirective('clientHeaderBufferSize', ['http', 'server']),
  large_client_header_buffers: define({
    contexts: ['http', 'server'],
    args: [2, 2],
    apply(d, level, c) {
      const number = /^\d{1,4}$/.test(d.args[0]) ? Number(d.args[0]) : 0;
      const bytes = size(d.args[1]);
      if (number < 1 || bytes === undefined || bytes < 1) return c.error(d.origin, `invalid value in "large_client_header_buffers" directive`);
      levelOf(level).largeClientHeaderBuffers = { number, size: bytes };
    },
  }),
  client_body_temp_path: tempPath('clientBodyTempPath'),
  proxy_temp_path: tempPath('proxyTempPath'),
  // The modules these belong to are not zonal's: their paths are made and never used, so
  // that nginx's configurations (and its test harness's) load unchanged.
  fastcgi_temp_path: tempPath(),
  uwsgi_temp_path: tempPath(),
  scgi_temp_path: tempPath(),
};

/** The type of a file by its name's extension, as nginx's ngx_http_set_content_type. */
export function contentType(core: CoreSettings | undefined, file: string): string {
  const settings = core ?? TOP_CORE;
  const dot = file.lastIndexOf('.');
  const slash = file.lastIndexOf('/');
  if (dot <= slash || dot === file.length - 1) return settings.defaultType;
  return settings.types.get(file.slice(dot + 1).toLowerCase()) ?? settings.defaultType;
}

/** Whether `keepalive_disable` takes keep-alive from a request, by its User-Agent as
 * nginx's ngx_http_process_user_agent reads it: MSIE 4 to 6 (6 without SV1), on POST
 * only; Safari on Mac OS X (not Chrome, Gecko, Opera). */
export function keepaliveDisabled(disable: KeepaliveDisable, method: string | undefined, agent: string | undefined): boolean {
  if (agent === undefined || (!disable.safari && !(disable.msie6 && method === 'POST'))) return false;
  if (agent.includes('Opera')) return false;
  const msie = agent.indexOf('MSIE ');
  if (msie >= 0 && msie + 7 < agent.length) return disable.msie6 && method === 'POST' && isMsie6(agent);
  return disable.safari && !agent.includes('Gecko/') && !agent.includes('Chrome/') && agent.includes('Safari/') && agent.includes('Mac OS X');
}

/** nginx's `msie6` browser (its request's msie6 flag): MSIE 4 and 5, and 6 without SV1
 * (XP SP2 fixed its gzip and keep-alive bugs); Opera says MSIE and is not. */
export function isMsie6(agent: string): boolean {
  if (agent.includes('Opera')) return false;
  const msie = agent.indexOf('MSIE ');
  if (msie < 0 || msie + 7 >= agent.length || agent[msie + 6] !== '.') return false;
  const major = agent[msie + 5];
  return major === '4' || major === '5' || (major === '6' && !agent.slice(msie + 8).includes('SV1'));
}
