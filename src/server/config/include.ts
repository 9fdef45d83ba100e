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

/** The main file's directives, each well-formed `include` holding the directives of the
 * files it matched. An `include` of the wrong shape is left for the directive checks to
 * report; read errors, syntax errors and cycles go to `errors`. */
export function readConfig(main: string, source: Source, errors: ConfigError[]): Read {
  const files: Record<string, string> = {};

  const load = (file: string, reading: readonly string[], at?: Origin): Directive[] => {
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
    expand(parsed.directives, file, [...reading, file]);
    return parsed.directives;
  };

  const expand = (directives: readonly Directive[], file: string, reading: readonly string[]) => {
    for (const d of directives) {
      if (d.block) expand(d.block, file, reading);
      if (d.name !== 'include' || d.args.length !== 1 || d.block) continue;
      const pattern = path.resolve(path.dirname(file), d.args[0]);
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
        included.push(...load(m, reading, d.origin));
      }
      d.included = included;
    }
  };

  const directives = load(main, []);
  return { directives, files };
}
