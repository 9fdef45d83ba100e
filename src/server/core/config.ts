// nginx's core and events modules: the main context's directives, declared beside what
// runs them (cli.ts, primary.ts, core/process.ts) and spread into the loader's table.
//
//   include <glob>;                    any block; relative to the main file's directory
//   worker_processes N | auto;         main; default 1
//   pid <file>;                        main; default none (nginx: logs/nginx.pid)
//   daemon on | off;                   main; default off (nginx: on)
//   master_process on | off;           main; accepted, zonal always runs a primary
//   worker_rlimit_nofile N;            main; cannot be applied by Node: said at start
//   env VAR[=value];                   main; the workers' environment, as nginx's
//   user name [group];                 main; ignored with a warning unless root, refused as root
//   load_module <file>;                main; only the modules zonal implements
//   lock_file, timer_resolution, pcre_jit, worker_priority, worker_cpu_affinity,
//   working_directory, worker_shutdown_timeout;  main
//   events { worker_connections N; use epoll; multi_accept on|off;
//            accept_mutex on|off; accept_mutex_delay time; }
import fs from 'node:fs';
import { define, onOff, type DirectiveSpec } from '../config/spec.js';
import type { Checker, MainLevel } from '../config/levels.js';
import type { Origin } from '../config/model.js';
import type { Directive } from '../config/syntax.js';
import { parseTime } from '../../metrics/peers.js';
import { moduleOfFile } from './modules.js';

/** The `events {}` block. */
export interface EventsLevel {
  readonly kind: 'events';
  readonly seen: Set<string>;
  workerConnections?: number;
}

declare module '../config/levels.js' {
  interface LevelKinds {
    events: EventsLevel;
  }
  interface MainLevel {
    workerProcesses?: number;
    pid?: string | false;
    daemon?: boolean;
    masterProcess?: boolean;
    workerRlimitNofile?: number;
    env?: Array<{ readonly name: string; readonly value?: string }>;
    user?: { readonly user: string; readonly group?: string; readonly origin: Origin };
    workerShutdownTimeout?: number;
    events?: EventsLevel;
  }
}
declare module '../config/model.js' {
  interface ServerConfig {
    /** `-p`, or the main file's directory: what relative paths are relative to. */
    readonly prefix: string;
    /** `-g`: main-context directives read before the main file's. */
    readonly globals?: string;
    readonly core: CoreConfig;
  }
}

/** What the core and events directives say, as the primary and the workers use it. */
export interface CoreConfig {
  /** Absolute; absent: no pid file. */
  readonly pid?: string;
  readonly daemon: boolean;
  /** `events { worker_connections }`: open client connections per worker. */
  readonly workerConnections: number;
  readonly workerRlimitNofile?: number;
  /** `env`: a name alone keeps the primary's value, with a value sets it. */
  readonly env: ReadonlyArray<{ readonly name: string; readonly value?: string }>;
  readonly user?: { readonly user: string; readonly group?: string };
  /** Milliseconds a stopping or replaced worker may take; absent: zonal's default. */
  readonly workerShutdownTimeout?: number;
}

/** nginx's default `worker_connections`. */
export const DEFAULT_WORKER_CONNECTIONS = 512;

/** The most nginx takes as a count (NGX_MAX_INT_T_VALUE on 32 bits). */
const MAX = 2147483647;

function count(d: Directive, c: Checker, least: number): number | undefined {
  const [arg] = d.args;
  if (/^\d{1,10}$/.test(arg) && Number(arg) >= least && Number(arg) <= MAX) return Number(arg);
  c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive`);
  return undefined;
}

/** Accepted and without effect: what they tune has no counterpart in Node's runtime. */
function harmless(args: readonly [number, number], check?: (d: Directive, c: Checker) => void) {
  return define({ contexts: ['main'], args, apply: (d, _main, c) => check?.(d, c) });
}

function time(d: Directive, c: Checker): number | undefined {
  const s = parseTime(d.args[0], true);
  if (s === undefined || s * 1000 > MAX) {
    c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
    return undefined;
  }
  return Math.round(s * 1000);
}

const eventsFlag = define({ contexts: ['events'], args: [1, 1], apply: (d, _events, c) => void onOff(d, c) });

export const coreDirectives: Record<string, DirectiveSpec> = {
  include: define({
    // Anywhere, as nginx's: its lines belong to the block it is in.
    contexts: ['main', 'events', 'http', 'server', 'location', 'upstream', 'server_if', 'if', 'limit_except'],
    args: [1, 1],
    multiple: true,
    admin: true,
    apply: (d, level, c) => c.walk(d.included ?? [], level),
  }),

  worker_processes: define({
    contexts: ['main'],
    args: [1, 1],
    apply(d, main, c) {
      const [arg] = d.args;
      if (arg === 'auto') main.workerProcesses = c.cpus;
      else if (/^\d{1,3}$/.test(arg) && Number(arg) >= 1 && Number(arg) <= 128) main.workerProcesses = Number(arg);
      else c.error(d.origin, `invalid value "${arg}" in "worker_processes" directive, it must be "auto" or a number from 1 to 128`);
    },
  }),

  pid: define({
    contexts: ['main'],
    args: [1, 1],
    apply(d, main, c) {
      main.pid = d.args[0] === 'off' ? false : c.path(d.args[0], 'prefix');
    },
  }),

  daemon: define({
    contexts: ['main'],
    args: [1, 1],
    apply(d, main, c) {
      const on = onOff(d, c);
      if (on !== undefined) main.daemon = on;
    },
  }),

  master_process: define({
    contexts: ['main'],
    args: [1, 1],
    apply(d, main, c) {
      const on = onOff(d, c);
      if (on !== undefined) main.masterProcess = on;
    },
  }),

  worker_rlimit_nofile: define({
    contexts: ['main'],
    args: [1, 1],
    apply(d, main, c) {
      const n = count(d, c, 1);
      if (n !== undefined) main.workerRlimitNofile = n;
    },
  }),

  env: define({
    contexts: ['main'],
    args: [1, 1],
    multiple: true,
    apply(d, main, c) {
      const [arg] = d.args;
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg : arg.slice(0, eq);
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return c.error(d.origin, `invalid variable name "${name}" in "env" directive`);
      (main.env ??= []).push(eq < 0 ? { name } : { name, value: arg.slice(eq + 1) });
    },
  }),

  user: define({
    contexts: ['main'],
    args: [1, 2],
    apply(d, main, c) {
      const [user, group] = d.args;
      // As root, the workers would have to run as another user, and the zones in /dev/shm
      // are the primary's, readable by it alone: refused rather than half applied.
      if (process.getuid?.() === 0)
        return c.error(d.origin, `the "user" directive is not supported when zonal runs as root: start zonal as the user "${user}" instead`);
      main.user = { user, ...(group !== undefined ? { group } : {}), origin: d.origin };
    },
  }),

  load_module: define({
    contexts: ['main'],
    args: [1, 1],
    multiple: true,
    apply(d, _main, c) {
      const module = moduleOfFile(d.args[0]);
      if (!module?.implemented) c.error(d.origin, `module "${d.args[0]}" is not supported by zonal: zonal has no dynamic modules, and this module is not built in`);
    },
  }),

  worker_shutdown_timeout: define({
    contexts: ['main'],
    args: [1, 1],
    apply(d, main, c) {
      const ms = time(d, c);
      if (ms !== undefined) main.workerShutdownTimeout = ms;
    },
  }),

  // nginx's lock file serialises accept() across workers: zonal's workers accept on the
  // shared socket with no lock, so there is nothing to put in it.
  lock_file: harmless([1, 1]),
  // Node's timers have their own resolution (a millisecond).
  timer_resolution: harmless([1, 1], (d, c) => void time(d, c)),
  // Regular expressions are JavaScript's, compiled by V8 (which compiles them anyway).
  pcre_jit: harmless([1, 1], (d, c) => {
    if (d.args[0] !== 'on' && d.args[0] !== 'off') c.error(d.origin, `invalid value "${d.args[0]}" in "pcre_jit" directive, it must be "on" or "off"`);
  }),
  worker_priority: harmless([1, 1], (d, c) => {
    if (!/^-?\d{1,2}$/.test(d.args[0]) || Math.abs(Number(d.args[0])) > 20) c.error(d.origin, `invalid value "${d.args[0]}" in "worker_priority" directive`);
  }),
  worker_cpu_affinity: define({ contexts: ['main'], args: [1, 64], apply: () => {} }),
  working_directory: define({ contexts: ['main'], args: [1, 1], apply: () => {} }),

  events: define({
    contexts: ['main'],
    args: [0, 0],
    block: true,
    apply(d, main, c) {
      const events: EventsLevel = (main.events = { kind: 'events', seen: new Set() });
      c.walk(d.block ?? [], events);
    },
  }),

  worker_connections: define({
    contexts: ['events'],
    args: [1, 1],
    apply(d, events, c) {
      const n = count(d, c, 1);
      if (n !== undefined) events.workerConnections = n;
    },
  }),

  // libuv's event method on Linux is epoll; nginx refuses a method it was not built with.
  use: define({
    contexts: ['events'],
    args: [1, 1],
    apply(d, _events, c) {
      if (d.args[0] !== 'epoll') c.error(d.origin, `invalid event type "${d.args[0]}": zonal's event loop (libuv's) uses "epoll"`);
    },
  }),
  multi_accept: eventsFlag,
  accept_mutex: eventsFlag,
  accept_mutex_delay: define({ contexts: ['events'], args: [1, 1], apply: (d, _events, c) => void time(d, c) }),
};

/** The core and events settings of a main block once it is read; warnings (nginx's, not
 * errors) go to `warn`. */
export function coreConfigOf(main: MainLevel, warn: (at: Origin, message: string) => void): CoreConfig {
  if (main.user) warn(main.user.origin, 'the "user" directive makes sense only if the master process runs with super-user privileges, ignored');
  return {
    ...(main.pid ? { pid: main.pid } : {}),
    daemon: main.daemon ?? false,
    workerConnections: main.events?.workerConnections ?? DEFAULT_WORKER_CONNECTIONS,
    ...(main.workerRlimitNofile !== undefined ? { workerRlimitNofile: main.workerRlimitNofile } : {}),
    env: main.env ?? [],
    ...(main.user ? { user: { user: main.user.user, ...(main.user.group !== undefined ? { group: main.user.group } : {}) } } : {}),
    ...(main.workerShutdownTimeout !== undefined ? { workerShutdownTimeout: main.workerShutdownTimeout } : {}),
  };
}

/** The soft limit of open files of this process, from /proc (Node has no getrlimit). */
export function openFilesLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    return line ? (line[1] === 'unlimited' ? Infinity : Number(line[1])) : undefined;
  } catch {
    return undefined;
  }
}
