// The configuration reader's entry point: `zonal -t`, the primary at start and reload,
// and every worker (from the primary's snapshot) call loadConfig.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { COMMAND_LINE, diskSource, readConfig, snapshotSource } from './include.js';
import type { Checker, MainLevel } from './levels.js';
import type { ConfigError, ServerConfig } from './model.js';
import { resolveHttp } from './resolve.js';
import { walk } from './walk.js';
import { declareConfiguredVariables } from './variables.js';
import { specsOf } from './directives.js';
import { resolveStream } from '../stream/config.js';
import { coreConfigOf } from '../core/config.js';
import { mainLogs } from '../log/config.js';
import { forgetDefinedVariables } from './variables.js';

export interface LoadOptions {
  /** Read files from this snapshot (absolute path -> text) instead of the disk: workers parse the
   * primary's snapshot. `include` globs then match against the snapshot's keys. No disk access at all. */
  files?: Record<string, string>;
  /** The files read with Checker.secret() (password files), from the primary's read: with
   * `files`, workers read none from the disk (a FIFO gives its text once). */
  secrets?: Record<string, string>;
  /** CPUs for `worker_processes auto` (default os.availableParallelism()). */
  cpus?: number;
  /** `-p`: what relative paths are relative to; default the main file's directory. */
  prefix?: string;
  /** `-g`: main-context directives read before the main file's. */
  globals?: string;
}

/** Reads and checks a configuration: `config` only when there is no error at all. Every
 * error found is reported, except that a file with a syntax error stops there and then
 * only syntax and read errors are reported (a truncated tree would only add false ones). */
export function loadConfig(file: string, options: LoadOptions = {}): { config?: ServerConfig; errors: ConfigError[]; warnings: ConfigError[] } {
  const main = path.resolve(file);
  const errors: ConfigError[] = [];
  const warnings: ConfigError[] = [];
  const source = options.files ? snapshotSource(options.files) : diskSource;
  const confPrefix = path.dirname(main);
  const prefix = options.prefix !== undefined ? path.resolve(options.prefix) : confPrefix;
  const { directives, files } = readConfig(main, source, errors, { confPrefix, ...(options.globals !== undefined ? { globals: options.globals } : {}) });
  if (errors.length) return { errors, warnings };

  const secrets: Record<string, string> = {};
  const checker: Checker = {
    disk: !options.files,
    secret(file) {
      if (options.files) return options.secrets?.[file];
      secrets[file] ??= fs.readFileSync(file, 'utf8');
      return secrets[file];
    },
    cpus: options.cpus ?? os.availableParallelism(),
    error: (at, message) => void errors.push({ file: at.file, line: at.line, message }),
    path: (arg, against) => path.resolve(against === 'prefix' ? prefix : confPrefix, arg),
    walk: (list, level) => walk(list, level, checker),
    specsOf,
  };
  const level: MainLevel = { kind: 'main', seen: new Set() };
  forgetDefinedVariables();
  declareConfiguredVariables(directives);
  walk(directives, level, checker);
  const http = level.http && resolveHttp(level.http, checker);
  // The http block's shared zones, which no stream zone may take: their names, and what they are.
  const httpZones = new Map<string, string>([
    ...(http?.upstreams ?? []).map((u): [string, string] => [u.zone?.name ?? u.name, `upstream "${u.name}"`]),
    ...(http?.limitZones ?? []).map((z): [string, string] => [z.name, `limit_${z.kind}_zone "${z.name}"`]),
  ]);
  const httpListens = (http?.servers ?? []).flatMap((s) => s.listens);
  const stream = level.stream && resolveStream(level.stream, checker, httpListens, httpZones);
  const core = coreConfigOf(level, (at, message) => void warnings.push({ file: at.file, line: at.line, message }));
  if (errors.length) return { errors, warnings };
  return {
    config: {
      file: main,
      prefix,
      ...(options.globals !== undefined ? { globals: options.globals } : {}),
      core,
      workerProcesses: level.workerProcesses ?? 1,
      ...(level.statusRuntime ? { statusRuntime: true } : {}),
      ...(level.configStore ? { configStore: level.configStore } : {}),
      ...mainLogs(level),
      ...(http ? { http } : {}),
      ...(stream ? { stream } : {}),
      files,
      ...(Object.keys(secrets).length ? { secrets } : {}),
    },
    errors,
    warnings,
  };
}

/** nginx's wording: `zonal: [emerg] unknown directive "foo" in /abs/path/zonal.conf:12`;
 * a file that cannot be opened at all has no line to name. */
export function formatConfigError(e: ConfigError): string {
  return `zonal: [emerg] ${e.message}${where(e)}`;
}

/** A warning of the configuration: nginx's `[warn]` line, the same `in <file>:<line>`. */
export function formatConfigWarning(e: ConfigError): string {
  return `zonal: [warn] ${e.message}${where(e)}`;
}

const where = (e: ConfigError) => (e.file === COMMAND_LINE ? ` in ${COMMAND_LINE}` : e.line > 0 ? ` in ${e.file}:${e.line}` : '');
