// nginx's error log: eight levels, each `error_log` a file (or stderr) with the least
// severe level it takes, several at once; lines in nginx's format
//
//   2026/11/28 13:05:31 [error] 1234#0: *5 limiting requests, client: 127.0.0.1, ...
//
// (the process id, thread 0, and `*N` the connection a message is about). The process's
// own messages go to the main context's logs; a request's to those of its location.
import { logFile, type LogFile } from './files.js';

/** nginx's levels, most severe first. */
export const LEVELS = ['emerg', 'alert', 'crit', 'error', 'warn', 'notice', 'info', 'debug'] as const;
export type Level = (typeof LEVELS)[number];

export const isLevel = (s: string): s is Level => (LEVELS as readonly string[]).includes(s);

/** One `error_log`: an absolute path, or `stderr`, and the least severe level it takes. */
export interface ErrorLogTarget {
  readonly path: string;
  readonly level: Level;
}

/** `2026/11/28 13:05:31`, local time, made once a second. */
let stampSecond = -1;
let stamp = '';
const two = (n: number) => (n < 10 ? `0${n}` : String(n));
function timestamp(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== stampSecond) {
    const d = new Date(now);
    stampSecond = second;
    stamp = `${d.getFullYear()}/${two(d.getMonth() + 1)}/${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  }
  return stamp;
}

/** A line of the error log, as nginx writes it. */
export function errorLine(level: Level, message: string, connection?: number): string {
  return `${timestamp()} [${level}] ${process.pid}#0: ${connection !== undefined ? `*${connection} ` : ''}${message}\n`;
}

type Sink = { readonly rank: number; readonly file?: LogFile };

/** The default log's lines, before any `error_log` or `-e` says where: zonal's own
 * `zonal: [notice] message`, as the terminal has always shown them. */
const plainLine = (level: Level, message: string) => `zonal: [${level}] ${message}\n`;

/** The logs of one context: a message goes to each whose level takes it. */
export class ErrorLog {
  private readonly sinks: Sink[];
  /** The least severe rank any of them takes: a message below it is not even formatted. */
  private readonly most: number;

  constructor(
    readonly targets: readonly ErrorLogTarget[],
    private readonly plain = false,
  ) {
    this.sinks = targets.map((t) => ({ rank: LEVELS.indexOf(t.level), ...(t.path === 'stderr' ? {} : { file: logFile(t.path) }) }));
    this.most = Math.max(-1, ...this.sinks.map((s) => s.rank));
  }

  enabled(level: Level): boolean {
    return LEVELS.indexOf(level) <= this.most;
  }

  log(level: Level, message: string, connection?: number): void {
    const rank = LEVELS.indexOf(level);
    if (rank > this.most) return;
    const line = this.plain ? plainLine(level, message) : errorLine(level, message, connection);
    for (const s of this.sinks) {
      if (rank > s.rank) continue;
      if (s.file) s.file.write(line);
      else process.stderr.write(line);
    }
  }
}

/** Where a process logs before its configuration is read, and when the configuration's
 * main context has no `error_log`: standard error at `notice`, in zonal's own lines,
 * until the command line says otherwise (setStartupErrorLog). */
let startup = new ErrorLog([{ path: 'stderr', level: 'notice' }], true);

/** How the primary's startup log reaches its workers (`<level> <path>`): node:cluster
 * forks them with its environment. */
export const STARTUP_LOG_ENV = 'ZONAL_STARTUP_ERROR_LOG';
const inherited = /^(\w+) (.+)$/.exec(process.env[STARTUP_LOG_ENV] ?? '');
if (inherited && isLevel(inherited[1])) startup = new ErrorLog([{ path: inherited[2], level: inherited[1] }]);
let main = startup;

/**
 * The command line's `-e file|stderr` (and the default `<prefix>/logs/error.log`): the log
 * of the startup, and of a configuration whose main context has no `error_log`. nginx's
 * level for it is `error`; `path` is absolute or `stderr`.
 */
export function setStartupErrorLog(path: string, level: Level = 'error'): void {
  const wasMain = main === startup;
  startup = new ErrorLog([{ path, level }]);
  if (wasMain) main = startup;
  // The workers forked from now on use it too.
  process.env[STARTUP_LOG_ENV] = `${level} ${path}`;
}

/** The main context's `error_log` directives of the configuration now in force: the
 * process's own messages go there (the startup log when there are none). */
export function useMainErrorLogs(targets: readonly ErrorLogTarget[] | undefined): void {
  main = targets?.length ? new ErrorLog(targets) : startup;
}

/** The process's log: the main context's. */
export function mainErrorLog(): ErrorLog {
  return main;
}

const byTargets = new WeakMap<readonly ErrorLogTarget[], ErrorLog>();

/** The log of a place (a location, a stream server): its merged `error_log` list, or the
 * main context's without one. */
export function errorLogOf(targets: readonly ErrorLogTarget[] | undefined): ErrorLog {
  if (!targets?.length) return main;
  let log = byTargets.get(targets);
  if (!log) byTargets.set(targets, (log = new ErrorLog(targets)));
  return log;
}
