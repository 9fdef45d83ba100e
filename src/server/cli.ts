// The `zonal` command, with nginx's options:
//
//   zonal [-p prefix] [-c file] [-e file|stderr] [-g 'directives;'] [-t | -T] [-q]
//         [-s stop|quit|reload|reopen] [-v | -V]
//
// Nothing but the command line is read before the first worker is forked: the
// configuration's modules, the primary's own and the worker's load at the same time (see
// core/workers.ts). What a branch needs is imported when it runs.
import fs from 'node:fs';
import path from 'node:path';
import type { LoadOptions } from './config/load.js';
import type { ServerConfig } from './config/model.js';
import type { Preforked } from './core/workers.js';
import { setDefaultAccessLog } from './log/default-access-log.js';

const USAGE = `usage: zonal [-?hvVtTq] [-s signal] [-p prefix] [-e filename] [-c filename] [-g directives]

Options:
  -?,-h         : this help
  -v            : show version and exit
  -V            : show version and configure options then exit
  -t            : test configuration and exit
  -T            : test configuration, dump it and exit
  -q            : suppress non-error messages during configuration testing
  -s signal     : send signal to the primary process: stop, quit, reopen, reload
  -p prefix     : set prefix path (default: the configuration file's directory)
  -e filename   : set error log file (default: stderr)
  -c filename   : set configuration file (required)
  -g directives : set global directives out of configuration file`;

/** The command line, read. */
export interface CommandLine {
  readonly file?: string;
  readonly prefix?: string;
  readonly errorLog?: string;
  readonly globals?: string;
  readonly test?: 'test' | 'dump';
  readonly quiet: boolean;
  readonly signal?: string;
  readonly version?: 'short' | 'long';
  readonly help: boolean;
}

/** nginx's parsing: flags may be grouped (`-tq`), an option's value is the rest of its
 * word or the next word (`-cfile`, `-c file`). */
export function parseCommandLine(argv: readonly string[]): CommandLine | { error: string } {
  const line: { -readonly [K in keyof CommandLine]: CommandLine[K] } = { quiet: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    if (word === '--version') {
      line.version ??= 'short';
      continue;
    }
    if (word === '--help') {
      line.help = true;
      continue;
    }
    if (!word.startsWith('-') || word.length < 2) return { error: `invalid option: "${word}"` };
    for (let j = 1; j < word.length; j++) {
      const flag = word[j];
      if (flag === '?' || flag === 'h') line.help = true;
      else if (flag === 'v') line.version ??= 'short';
      else if (flag === 'V') line.version = 'long';
      else if (flag === 't') line.test ??= 'test';
      else if (flag === 'T') line.test = 'dump';
      else if (flag === 'q') line.quiet = true;
      else if ('pcegs'.includes(flag)) {
        const value = j + 1 < word.length ? word.slice(j + 1) : argv[++i];
        if (value === undefined) return { error: `option "-${flag}" requires ${({ p: 'directory name', c: 'file name', e: 'file name', g: 'parameter', s: 'parameter' } as Record<string, string>)[flag]}` };
        if (flag === 'p') line.prefix = value;
        else if (flag === 'c') line.file = value;
        else if (flag === 'e') line.errorLog = value;
        else if (flag === 'g') line.globals = line.globals === undefined ? value : `${line.globals} ${value}`;
        else line.signal = value;
        break;
      } else return { error: `invalid option: "${word.slice(j)}"` };
    }
  }
  return line;
}

async function printVersion(long: boolean): Promise<void> {
  const { ZONAL_VERSION } = await import('../metrics/status.js');
  // nginx prints its version on stderr; tools read it there (nginx's test harness does).
  let text = `zonal version: zonal/${ZONAL_VERSION}\n`;
  if (long) {
    const { NGINX_VERSION, configureArguments } = await import('./core/modules.js');
    text +=
      `nginx version: nginx/${NGINX_VERSION} (the nginx whose configuration zonal follows)\n` +
      `built with OpenSSL ${process.versions.openssl} (Node ${process.versions.node}'s)\n` +
      `TLS SNI support enabled\n` +
      `configure arguments: ${configureArguments()}\n`;
  }
  process.stderr.write(text);
}

export async function main(argv: string[]): Promise<number> {
  const line = parseCommandLine(argv);
  if ('error' in line) {
    process.stderr.write(`zonal: ${line.error}\n${USAGE}\n`);
    return 2;
  }
  if (line.help) {
    process.stderr.write(`${USAGE}\n`);
    return 0;
  }
  if (line.version) {
    await printVersion(line.version === 'long');
    if (!line.test) return 0;
  }
  // nginx: `-c` is relative to the prefix when one is given.
  const prefix = line.prefix !== undefined ? path.resolve(line.prefix) : undefined;
  if (line.file === undefined) {
    process.stderr.write(`zonal: no configuration file: -c <file> is required\n${USAGE}\n`);
    return 2;
  }
  const file = path.resolve(prefix ?? process.cwd(), line.file);
  const base = prefix ?? path.dirname(file);
  // nginx's compiled-in `access_log logs/access.log combined`, under the prefix: only
  // where that folder exists (nginx refuses to start without it; zonal, which has no
  // compiled-in prefix to fall back on, logs nothing instead).
  const logs = prefix === undefined ? undefined : path.join(prefix, 'logs');
  setDefaultAccessLog(logs !== undefined && fs.statSync(logs, { throwIfNoEntry: false })?.isDirectory() ? path.join(logs, 'access.log') : undefined);
  const options: LoadOptions = { ...(prefix !== undefined ? { prefix } : {}), ...(line.globals !== undefined ? { globals: line.globals } : {}) };
  // The server of `daemon on` (core/daemon.ts): its workers do not inherit that.
  const daemonChild = process.env.ZONAL_DAEMON === 'child';
  delete process.env.ZONAL_DAEMON;
  const early = line.test === undefined && line.signal === undefined ? await forkFirstWorker() : [];

  // -e: the error log before the configuration is read. Its file is created now, as
  // nginx opens it, and the log module writes there until a main error_log says otherwise.
  const errorLog = line.errorLog === undefined || line.errorLog === 'stderr' ? undefined : path.resolve(base, line.errorLog);
  if (errorLog !== undefined) {
    try {
      fs.closeSync(fs.openSync(errorLog, 'a'));
      (await import('./log/error-log.js')).setStartupErrorLog(errorLog);
    } catch (e) {
      process.stderr.write(`zonal: [alert] could not open error log file: open() "${errorLog}" failed (${(e as Error).message})\n`);
    }
  }

  const { formatConfigError, formatConfigWarning, loadConfig } = await import('./config/load.js');
  const report = (errors: ReturnType<typeof loadConfig>['errors']) => errors.forEach((e) => process.stderr.write(`${formatConfigError(e)}\n`));
  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig(file, options);
  } catch (e) {
    // The reader's own failure is reported, not thrown with a stack.
    loaded = { errors: [{ file, line: 0, message: `the configuration cannot be read: ${(e as Error).message}` }], warnings: [] };
  }
  const { config, errors, warnings } = loaded;

  if (line.signal !== undefined) {
    if (!config) return report(errors), 1;
    const { signalThroughPidFile } = await import('./core/process.js');
    const failure = signalThroughPidFile(line.signal, config.core.pid);
    if (failure) process.stderr.write(`zonal: [error] ${failure}\n`);
    return failure ? 1 : 0;
  }

  if (line.test) {
    if (!line.quiet) for (const w of warnings) process.stderr.write(`${formatConfigWarning(w)}\n`);
    if (config) {
      // What the start would do with the shared memory, tried.
      const { tryZones } = await import('./core/zones.js');
      const failure = tryZones(config);
      if (failure) errors.push({ file, line: 0, message: failure });
    }
    report(errors);
    if (config && !errors.length && line.test === 'dump') for (const [name, text] of Object.entries(config.files)) process.stdout.write(`# configuration file ${name}:\n${text}\n`);
    if (errors.length || !line.quiet) process.stderr.write(`zonal: configuration file ${file} test ${errors.length ? 'failed' : 'is successful'}\n`);
    return errors.length ? 1 : 0;
  }

  const { killPreforked } = await import('./core/workers.js');
  if (!config) return killPreforked(early), report(errors), 1;
  for (const w of warnings) process.stderr.write(`${formatConfigWarning(w)}\n`);
  if (config.core.daemon && !daemonChild) {
    // The detached server forks its own workers.
    killPreforked(early);
    const { daemonize } = await import('./core/daemon.js');
    return daemonize(errorLog);
  }
  return run(file, config, options, early, daemonChild);
}

/** A run's first worker, in slot 0 (every configuration has one), forked before the
 * configuration is read; the zones' instance is named first: it inherits it. */
async function forkFirstWorker(): Promise<Preforked[]> {
  const [{ creatorInstance, WORKER_SLOT_ENV }, { prefork }] = await Promise.all([import('../engine/identity.js'), import('./core/workers.js')]);
  creatorInstance();
  return prefork([0], undefined, WORKER_SLOT_ENV);
}

/** Runs the server until a signal stops it. */
async function run(file: string, config: ServerConfig, options: LoadOptions, early: readonly Preforked[], daemonChild: boolean): Promise<number> {
  // Signals that come while the server starts are acted on once it has.
  let stopAsked: 'graceful' | 'fast' | undefined;
  let primary: import('./primary.js').Primary | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (how: 'graceful' | 'fast') => {
    if (!primary) return void (stopAsked = how === 'fast' || !stopAsked ? how : stopAsked);
    if (stopping) {
      // A fast stop asked during a graceful one tells the workers to exit now; a second
      // fast stop, no more waiting at all.
      if (how === 'fast') {
        if (stopAsked === 'fast') process.exit(1);
        stopAsked = 'fast';
        void primary.stop('fast');
      }
      return;
    }
    stopAsked = how;
    const p = primary;
    stopping = p.stop(how).then(() => {
      if (config.core.pid) removePidFile(config.core.pid);
      process.exit(0);
    });
  };
  process.on('SIGQUIT', () => stop('graceful'));
  process.on('SIGTERM', () => stop('fast'));
  process.on('SIGINT', () => stop('fast'));
  process.on('SIGHUP', () => void primary?.reload());

  const { WORKER_SLOT_ENV } = await import('../engine/identity.js');
  const { workersFor } = await import('./core/workers.js');
  const preforked = workersFor(early, config.workerProcesses, config.core, WORKER_SLOT_ENV);
  const [{ removePidFile, rlimitNotice, writePidFile }, { Primary }, { stderrLog }] = await Promise.all([import('./core/process.js'), import('./primary.js'), import('./log.js')]);
  try {
    primary = await Primary.start(file, stderrLog, { ...options, config, preforked });
  } catch (e) {
    stderrLog('emerg', (e as Error).message.replace(/^zonal: \[emerg\] /gm, ''));
    return 1;
  }
  const notice = rlimitNotice(config.core);
  if (notice) stderrLog('warn', notice);
  if (config.core.pid) {
    try {
      writePidFile(config.core.pid);
    } catch (e) {
      stderrLog('emerg', (e as Error).message);
      await primary.stop('fast');
      return 1;
    }
  }
  if (daemonChild) {
    process.send?.({ type: 'started' });
    process.disconnect?.();
  }
  if (stopAsked) stop(stopAsked);
  // Stay up: the workers and listeners keep the event loop alive.
  return new Promise<number>(() => {});
}
