// What a directive's table entry is: where it may be written, its arguments, and what it
// does to its block. The core table (directives.ts) and the modules that declare their
// directives beside their code (limits/, ...) both make entries of this one shape; it
// sits below them all, so that a module depends on the loader's types and never on the
// loader's table.
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
  /** Called for every directive of a block before any is applied: what it names for the
   * others to use wherever they are written (a `map`'s variable). */
  declare?(d: Directive, level: L): void;
  /** Called once the generic checks passed: the arguments' count is right. */
  apply(d: Directive, level: L, c: Checker): void;
}

export type LevelOf<K extends Context> = Extract<AnyLevel, { kind: K }>;

/** Types an entry by its contexts, so `apply` gets the blocks it can be in. */
export const define = <const K extends Context>(spec: DirectiveSpec<LevelOf<K>> & { contexts: readonly K[] }) =>
  spec as unknown as DirectiveSpec;

// Numbers and times every module's entries share (files read at run time: files.ts).
export { MAX, milliseconds } from './numbers.js';

/** An `on | off` argument (the first), with nginx's error for anything else. */
export function onOff(d: Directive, c: Checker): boolean | undefined {
  const v = d.args[0];
  if (v === 'on' || v === 'off') return v === 'on';
  c.error(d.origin, `invalid value "${v}" in "${d.name}" directive, it must be "on" or "off"`);
  return undefined;
}
