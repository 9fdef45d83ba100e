// What a directive's table entry is: where it may be written, its arguments, and what it
// does to its block. The core table (directives.ts) and the modules that declare their
// directives beside their code (limits/, ...) both make entries of this one shape; it
// sits below them all, so that a module depends on the loader's types and never on the
// loader's table.
import fs from 'node:fs';
import path from 'node:path';
import { parseTime } from '../../metrics/peers.js';
import type { AnyLevel, Checker, Context } from './levels.js';
import type { Directive } from './syntax.js';

export interface DirectiveSpec<L extends AnyLevel = AnyLevel> {
  readonly contexts: readonly L['kind'][];
  /** Least and most arguments. */
  readonly args: readonly [number, number];
  /** Takes a `{ ... }` block instead of ending with `;`. */
  readonly block?: boolean;
  /** May appear more than once in a block; otherwise a second one `is duplicate`. */
  readonly multiple?: boolean;
  /** May appear in an admin server and its locations. */
  readonly admin?: boolean;
  /** Called once the generic checks passed: the arguments' count is right. */
  apply(d: Directive, level: L, c: Checker): void;
}

export type LevelOf<K extends Context> = Extract<AnyLevel, { kind: K }>;

/** Types an entry by its contexts, so `apply` gets the blocks it can be in. */
export const define = <const K extends Context>(spec: DirectiveSpec<LevelOf<K>> & { contexts: readonly K[] }) =>
  spec as unknown as DirectiveSpec;

// Helpers every module's entries share: paths, files read at run time, times.

/** The largest count and time nginx takes (NGX_MAX_INT_T_VALUE on 32 bits), and what the
 * /config API takes: a configured peer can be written back through it unchanged. Node's
 * timers take no more milliseconds either. */
export const MAX = 2147483647;

/** A path in a directive is relative to the file the directive is written in. */
export const resolvePath = (d: Directive, arg: string): string => path.resolve(path.dirname(d.origin.file), arg);

/** Certificates, keys and htpasswd files are read by others at run time; a typo should
 * still fail `zonal -t`, so when reading from the disk they must be readable files now. */
export function readable(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

export function checkReadable(file: string, d: Directive, c: Checker): void {
  if (!c.disk) return;
  try {
    if (!fs.statSync(file).isFile()) {
      c.error(d.origin, `"${file}" of the "${d.name}" directive is not a file`);
      return;
    }
    fs.accessSync(file, fs.constants.R_OK);
  } catch (e) {
    c.error(d.origin, `cannot read "${file}" of the "${d.name}" directive (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

/** A time in milliseconds, `ms` allowed; positive: a zero timeout would mean none at all to
 * the sockets and timers that apply it. */
export function milliseconds(arg: string | undefined): number | undefined {
  const s = arg === undefined ? undefined : parseTime(arg, true);
  if (s === undefined || s <= 0 || s * 1000 > MAX) return undefined;
  return Math.round(s * 1000);
}
