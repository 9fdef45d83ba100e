// The log module's configuration: nginx's core `error_log` and ngx_http_log_module, declared
// beside their code and composed into the loader's table by config/directives.ts.
//
//   error_log <file>|stderr [debug|info|notice|warn|error|crit|alert|emerg];
//       main, http, server, location, stream, stream server; several per block
//   log_format <name> [escape=default|json|none] <string>...;      http, stream
//   access_log <path> [<format> [buffer=<size>] [flush=<time>] [if=<condition>]] | off;
//       http, server, location, if in location, stream, stream server; several per block
//       (in stream the format is not optional: there is no predefined one)
//   open_log_file_cache max=<N> [inactive=<time>] [min_uses=<N>] [valid=<time>] | off;
//
// A block with any `error_log` (or `access_log`) replaces the outer list, as nginx merges
// them; `access_log off` leaves none. Paths are absolute or relative to the configuration
// file's folder (nginx's prefix, until the command line has one).
import fs from 'node:fs';
import path from 'node:path';
import { define, type DirectiveSpec } from '../config/spec.js';
import type { Checker, InheritableLevel, MainLevel } from '../config/levels.js';
import type { Directive } from '../config/syntax.js';
import { checkVariables, parseSize } from '../config/values.js';
import { parseTime } from '../../metrics/peers.js';
import { isLevel, LEVELS, type ErrorLogTarget, type Level } from './error-log.js';
import { knownLogVariable } from './variables.js';
import { streamVariables } from '../config/variables.js';
import { DEFAULT_ACCESS_LOG_ENV } from './default-access-log.js';

export type Escape = 'default' | 'json' | 'none';

/** A `log_format`: its strings joined, variables and all. */
export interface LogFormat {
  readonly name: string;
  readonly escape: Escape;
  readonly text: string;
}

/** One `access_log` as it writes. */
export interface AccessLogSpec {
  /** Absolute. */
  readonly path: string;
  readonly format: LogFormat;
  /** Bytes gathered before a write; 0: each line written as it comes. */
  readonly buffer: number;
  /** Milliseconds a buffered line may wait; 0: until the buffer fills. */
  readonly flush: number;
  /** `if=`: a line is written unless this is empty or "0". */
  readonly condition?: string;
}

/** nginx's predefined format. */
export const COMBINED: LogFormat = {
  name: 'combined',
  escape: 'default',
  text: '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"',
};

/** What one block says of logs. */
export interface LogSettings {
  /** Only those written in this block. */
  readonly errorLogs: ErrorLogTarget[];
  readonly accessLogs: AccessLogSpec[];
  /** `access_log off` here. */
  accessOff?: boolean;
}

declare module '../config/levels.js' {
  interface InheritableLevel {
    /** What the log module's directives say here. */
    logs?: LogSettings;
  }
  interface MainLevel {
    /** `error_log` of the main context. */
    errorLogs?: ErrorLogTarget[];
  }
}
declare module '../stream/config.js' {
  interface StreamLevel {
    /** `error_log` and `access_log` of the stream block. */
    errorLogs?: ErrorLogTarget[];
    accessLogs?: AccessLogSpec[];
    accessOff?: boolean;
  }
  interface StreamServerLevel {
    errorLogs?: ErrorLogTarget[];
    accessLogs?: AccessLogSpec[];
    accessOff?: boolean;
  }
  interface StreamServerConfig {
    /** `error_log` of the server, else of the stream block; absent: the main context's. */
    readonly errorLogs?: readonly ErrorLogTarget[];
    /** `access_log` in force (none: nothing is logged). */
    readonly accessLogs?: readonly AccessLogSpec[];
  }
}
declare module '../config/model.js' {
  interface Inherited {
    /** `access_log` in force here (none: nothing is logged). */
    readonly accessLogs?: readonly AccessLogSpec[];
    /** `error_log` in force here; absent: the main context's. */
    readonly errorLogs?: readonly ErrorLogTarget[];
  }
  interface ServerConfig {
    /** `error_log` of the main context; absent: the startup log (stderr, or `-e`). */
    readonly errorLogs?: readonly ErrorLogTarget[];
  }
}

const settingsOf = (level: InheritableLevel): LogSettings => (level.logs ??= { errorLogs: [], accessLogs: [] });

type Module = 'http' | 'stream';
const moduleOf = (kind: string): Module => (kind === 'stream' || kind === 'stream_server' ? 'stream' : 'http');

/** The formats of one configuration, by module and name: `access_log` finds only those
 * written before it, as in nginx; the stream module has no predefined one. */
const formats = new WeakMap<Checker, Record<Module, Map<string, LogFormat>>>();
function formatsOf(c: Checker, module: Module): Map<string, LogFormat> {
  let m = formats.get(c);
  if (!m) formats.set(c, (m = { http: new Map([[COMBINED.name, COMBINED]]), stream: new Map() }));
  return m[module];
}

const knownIn = (module: Module) => (module === 'stream' ? streamVariables.known : knownLogVariable);

/** A log's path: `stderr`, else absolute; its folder must exist when the disk is read
 * (nginx opens it at `-t`; zonal creates nothing then). */
function logPath(d: Directive, arg: string, c: Checker, stderr: boolean): string | undefined {
  if (arg === 'stderr' && stderr) return 'stderr';
  if (arg.startsWith('syslog:')) return void c.error(d.origin, `syslog logging in "${d.name}" is not supported`);
  if (arg.startsWith('memory:')) return void c.error(d.origin, `memory logging in "${d.name}" is not supported`);
  if (arg.includes('$')) return void c.error(d.origin, `variables in the path of "${d.name}" are not supported`);
  const file = c.path(arg, 'prefix');
  if (c.disk) {
    try {
      if (!fs.statSync(path.dirname(file)).isDirectory()) throw new Error('not a directory');
      fs.accessSync(path.dirname(file), fs.constants.W_OK);
    } catch (e) {
      return void c.error(d.origin, `cannot open "${file}" of the "${d.name}" directive: its folder ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : 'is not writable'}`);
    }
  }
  return file;
}

function errorLogTarget(d: Directive, c: Checker): ErrorLogTarget | undefined {
  const [file, level = 'error'] = d.args;
  if (!isLevel(level)) return void c.error(d.origin, `invalid log level "${level}" in "error_log" directive, it must be one of ${LEVELS.map((l) => `"${l}"`).join(', ')}`);
  const p = logPath(d, file, c, true);
  return p === undefined ? undefined : { path: p, level: level as Level };
}

const errorLog = define({
  contexts: ['main', 'http', 'server', 'location', 'stream', 'stream_server'],
  args: [1, 2],
  multiple: true,
  apply(d, level, c) {
    const target = errorLogTarget(d, c);
    if (!target) return;
    if (level.kind === 'main') (level.errorLogs ??= []).push(target);
    else if (level.kind === 'stream' || level.kind === 'stream_server') (level.errorLogs ??= []).push(target);
    else settingsOf(level).errorLogs.push(target);
  },
});

const logFormat = define({
  contexts: ['http', 'stream'],
  args: [2, 1000],
  multiple: true,
  apply(d, level, c) {
    const module = moduleOf(level.kind);
    const [name, ...rest] = d.args;
    let escape: Escape = 'default';
    if (rest[0]?.startsWith('escape=')) {
      const e = rest.shift()!.slice(7);
      if (e !== 'default' && e !== 'json' && e !== 'none') return c.error(d.origin, `unknown log format escaping "${e}"`);
      escape = e;
    }
    if (rest.length === 0) return c.error(d.origin, `invalid number of arguments in "log_format" directive`);
    const all = formatsOf(c, module);
    if (all.has(name)) return c.error(d.origin, `duplicate "log_format" name "${name}"`);
    const text = rest.join('');
    const error = checkVariables(text, knownIn(module));
    if (error) return c.error(d.origin, error);
    all.set(name, { name, escape, text });
  },
});

const accessLog = define({
  contexts: ['http', 'server', 'location', 'if', 'stream', 'stream_server'],
  args: [1, 6],
  multiple: true,
  apply(d, level, c) {
    const module = moduleOf(level.kind);
    const [file, name = module === 'http' ? 'combined' : undefined, ...params] = d.args;
    const settings: { accessLogs?: AccessLogSpec[]; accessOff?: boolean } =
      level.kind === 'stream' || level.kind === 'stream_server' ? level : settingsOf(level);
    if (file === 'off') {
      if (d.args.length > 1) return c.error(d.origin, `invalid parameter "${d.args[1]}"`);
      settings.accessOff = true;
      return;
    }
    if (name === undefined) return c.error(d.origin, `invalid number of arguments in "access_log" directive`);
    const p = logPath(d, file, c, false);
    if (p === undefined) return;
    const format = formatsOf(c, module).get(name);
    if (!format) return c.error(d.origin, `unknown log format "${name}"`);
    let buffer = 0;
    let flush = 0;
    let condition: string | undefined;
    for (const param of params) {
      if (param.startsWith('buffer=')) {
        const size = parseSize(param.slice(7));
        if (size === undefined || size === 0) return c.error(d.origin, `invalid buffer size "${param.slice(7)}"`);
        if (size > 1024 * 1024) return c.error(d.origin, `buffer size "${param.slice(7)}" of "access_log" is more than 1m`);
        buffer = size;
      } else if (param.startsWith('flush=')) {
        const s = parseTime(param.slice(6), true);
        if (s === undefined || s === 0) return c.error(d.origin, `invalid flush time "${param.slice(6)}"`);
        flush = s * 1000;
      } else if (param.startsWith('if=')) {
        condition = param.slice(3);
        const error = checkVariables(condition, knownIn(module));
        if (error) return c.error(d.origin, error);
      } else if (param === 'gzip' || param.startsWith('gzip=')) {
        return c.error(d.origin, `"gzip" of "access_log" is not supported`);
      } else return c.error(d.origin, `invalid parameter "${param}"`);
    }
    if (flush && !buffer) return c.error(d.origin, `no buffer is defined for access_log "${file}"`);
    (settings.accessLogs ??= []).push({ path: p, format, buffer, flush, ...(condition !== undefined ? { condition } : {}) });
  },
});

/** Accepted for nginx's configurations: it caches the descriptors of log paths with
 * variables, which zonal refuses; every path it opens stays open. */
const openLogFileCache = define({
  contexts: ['http', 'server', 'location'],
  args: [1, 4],
  apply(d, _level, c) {
    if (d.args[0] === 'off') {
      if (d.args.length > 1) c.error(d.origin, `invalid parameter "${d.args[1]}"`);
      return;
    }
    let max = false;
    for (const a of d.args) {
      const eq = a.indexOf('=');
      const key = a.slice(0, eq);
      const value = a.slice(eq + 1);
      const ok =
        key === 'max' || key === 'min_uses' ? /^\d+$/.test(value) && Number(value) > 0 : key === 'inactive' || key === 'valid' ? parseTime(value, false) !== undefined : false;
      if (eq < 0 || !ok) return c.error(d.origin, `invalid "open_log_file_cache" parameter "${a}"`);
      if (key === 'max') max = true;
    }
    if (!max) c.error(d.origin, `"open_log_file_cache" must have "max" parameter`);
  },
});

/** The log module's directives, composed into the loader's table. */
export const logDirectives: Readonly<Record<string, DirectiveSpec>> = {
  error_log: errorLog,
  log_format: logFormat,
  access_log: accessLog,
  open_log_file_cache: openLogFileCache,
};

/** The logs in force at a level, as nginx merges them. */
export interface MergedLogs {
  readonly access: readonly AccessLogSpec[];
  readonly error?: readonly ErrorLogTarget[];
}

/** The top of the http levels: the default access log, read when a configuration is. */
export const TOP_LOGS: MergedLogs = {
  get access(): readonly AccessLogSpec[] {
    const path = process.env[DEFAULT_ACCESS_LOG_ENV];
    return path ? [{ path, format: COMBINED, buffer: 0, flush: 0 }] : [];
  },
};

export function mergeLogs(outer: MergedLogs, level: InheritableLevel): MergedLogs {
  const l = level.logs;
  if (!l) return outer;
  return {
    access: l.accessOff ? l.accessLogs : l.accessLogs.length ? l.accessLogs : outer.access,
    ...(l.errorLogs.length ? { error: l.errorLogs } : outer.error ? { error: outer.error } : {}),
  };
}

/** What a location, `if` block or server keeps of them. */
export function settleLogs(m: MergedLogs): { accessLogs?: readonly AccessLogSpec[]; errorLogs?: readonly ErrorLogTarget[] } {
  return { ...(m.access.length ? { accessLogs: m.access } : {}), ...(m.error ? { errorLogs: m.error } : {}) };
}

/** The main context's error logs, for the configuration's top. */
export const mainLogs = (main: MainLevel): { errorLogs?: readonly ErrorLogTarget[] } => (main.errorLogs?.length ? { errorLogs: main.errorLogs } : {});

type StreamLogLevel = { readonly errorLogs?: readonly ErrorLogTarget[]; readonly accessLogs?: readonly AccessLogSpec[]; readonly accessOff?: boolean };

/** A stream server's logs: its own, else its block's (nginx's merge; `access_log off`
 * leaves none). */
export function streamLogs(stream: StreamLogLevel, server: StreamLogLevel): { errorLogs?: readonly ErrorLogTarget[]; accessLogs?: readonly AccessLogSpec[] } {
  const errors = server.errorLogs?.length ? server.errorLogs : stream.errorLogs;
  const own = server.accessOff || server.accessLogs?.length ? server.accessLogs : stream.accessOff ? undefined : stream.accessLogs;
  return { ...(errors?.length ? { errorLogs: errors } : {}), ...(own?.length ? { accessLogs: own } : {}) };
}

/** Every file a configuration's logs write, for a reload to close the others. */
export function logPaths(targets: Iterable<ErrorLogTarget | AccessLogSpec>): Set<string> {
  const out = new Set<string>();
  for (const t of targets) if (t.path !== 'stderr') out.add(t.path);
  return out;
}
