// Reading the main file and every file `include` names, from the disk or from a snapshot
// of them (workers parse the primary's snapshot, so a file edited in between cannot make
// two processes run different configurations).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { globDisk, globKeys, hasGlob } from './glob.js';
import type { ConfigError, Origin } from './model.js';
import { parse, type Directive } from './syntax.js';

export interface Source {
  /** The file's text, or why it cannot be read in nginx's words (`2: No such file or directory`). */
  read(file: string): { text: string } | { failure: string };
  /** The files an absolute glob matches, sorted. */
  glob(pattern: string): string[];
}

function failure(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  const errno = err.code ? (os.constants.errno as Record<string, number>)[err.code] : undefined;
  // Node's message is `ENOENT: no such file or directory, open '/x'`: keep the middle.
  const text = /^[A-Z]+: ([^,]*)/.exec(err.message)?.[1] ?? err.message;
  return errno === undefined ? text : `${errno}: ${text}`;
}

export const diskSource: Source = {
  read(file) {
    try {
      return { text: fs.readFileSync(file, 'utf8') };
    } catch (e) {
      return { failure: failure(e) };
    }
  },
  glob: globDisk,
};

export function snapshotSource(files: Readonly<Record<string, string>>): Source {
  return {
    read: (file) => (Object.hasOwn(files, file) ? { text: files[file] } : { failure: `${os.constants.errno.ENOENT}: no such file or directory` }),
    glob: (pattern) => globKeys(pattern, Object.keys(files)),
  };
}

export interface Read {
  readonly directives: Directive[];
  /** Every file read, absolute path -> text, in reading order. */
  readonly files: Record<string, string>;
}

/** Where `-g` directives are said to be, in errors: nginx's words. */
export const COMMAND_LINE = 'command line';

/**
 * How deep blocks and includes may nest, counted together: nginx sets no limit and
 * recurses, and so did zonal's reader until a configuration 5,000 levels deep overflowed
 * its stack. Real configurations nest a handful of levels (http, server, location, a
 * nested location or two, an include or two).
 */
export const MAX_NESTING = 100;

export interface ReadOptions {
  /** What `include` paths are relative to (nginx: the main file's directory). */
  readonly confPrefix?: string;
  /** `-g`: main-context directives read before the main file's. */
  readonly globals?: string;
}

/** The main file's directives, each well-formed `include` holding the directives of the
 * files it matched. An `include` of the wrong shape is left for the directive checks to
 * report; read errors, syntax errors, cycles and nesting too deep go to `errors`. */
export function readConfig(main: string, source: Source, errors: ConfigError[], options: ReadOptions = {}): Read {
  const files: Record<string, string> = {};
  const confPrefix = options.confPrefix ?? path.dirname(main);
  let tooDeep = false;

  const load = (file: string, reading: readonly string[], at: Origin | undefined, depth: number): Directive[] => {
    let text: string | undefined = files[file];
    if (text === undefined) {
      const got = source.read(file);
      if ('failure' in got) {
        errors.push({ file: at?.file ?? file, line: at?.line ?? 0, message: `open() "${file}" failed (${got.failure})` });
        return [];
      }
      text = files[file] = got.text;
    }
    const parsed = parse(text, file);
    if (parsed.error) {
      errors.push(parsed.error);
      return [];
    }
    expand(parsed.directives, [...reading, file], depth);
    return parsed.directives;
  };

  const expand = (directives: readonly Directive[], reading: readonly string[], depth: number) => {
    for (const d of directives) {
      if (tooDeep) return;
      if (d.block || d.name === 'include') {
        if (depth >= MAX_NESTING) {
          tooDeep = true;
          errors.push({ ...d.origin, message: `too deep nesting of blocks and includes: more than ${MAX_NESTING} levels` });
          return;
        }
      }
      if (d.block) expand(d.block, reading, depth + 1);
      if (d.name !== 'include' || d.args.length !== 1 || d.block) continue;
      // nginx: relative to the main file's directory (its conf prefix), from whichever file.
      const pattern = path.resolve(confPrefix, d.args[0]);
      // nginx: a missing file is an error, a glob that matches nothing is not.
      const matched = hasGlob(pattern) ? source.glob(pattern) : [pattern];
      const included: Directive[] = [];
      for (const m of matched) {
        const loop = reading.indexOf(m);
        if (loop >= 0) {
          const chain = [...reading.slice(loop), m].map((f) => `"${f}"`).join(' -> ');
          errors.push({ ...d.origin, message: `include cycle: ${chain}` });
          continue;
        }
        included.push(...load(m, reading, d.origin, depth + 1));
      }
      d.included = included;
    }
  };

  const globals: Directive[] = [];
  if (options.globals !== undefined) {
    const parsed = parse(options.globals, COMMAND_LINE);
    if (parsed.error) errors.push(parsed.error);
    else {
      expand(parsed.directives, [], 0);
      globals.push(...parsed.directives);
    }
  }
  const directives = load(main, [], undefined, 0);
  return { directives: [...globals, ...directives], files };
}
