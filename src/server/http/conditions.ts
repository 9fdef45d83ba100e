// `if` conditions at run time, compiled once per block. A regex that matches leaves its
// groups as the request's captures ($1..$9, and its named groups as variables), as
// nginx's do, whether or not the condition is negated; one that does not match leaves
// the captures as they were.
import { constants, statSync, type Stats } from 'node:fs';
import type { IfCondition } from '../config/model.js';
import { compileValue } from '../config/variables.js';
import type { HttpContext } from './variables.js';
import { setGroups } from '../rewrite/variables.js';

/** What a condition reads, and where a matching regex puts its groups. */
export interface ConditionContext extends HttpContext {
  captures?: readonly string[];
}

export type Condition = (c: ConditionContext) => boolean;

export function compileCondition(condition: IfCondition): Condition {
  switch (condition.kind) {
    case 'variable': {
      const value = compileValue(condition.variable);
      return (c) => {
        const v = value(c);
        return v !== '' && v !== '0';
      };
    }
    case 'equal': {
      const left = compileValue(condition.variable);
      const right = compileValue(condition.value);
      const negate = condition.negate;
      return (c) => (left(c) === right(c)) !== negate;
    }
    case 'regex': {
      const left = compileValue(condition.variable);
      // exec with a `g` or `y` flag would depend on the previous request's lastIndex.
      const { regex: written } = condition;
      const regex = written.global || written.sticky ? new RegExp(written.source, written.flags.replace(/[gy]/g, '')) : written;
      const negate = condition.negate;
      return (c) => {
        const m = regex.exec(left(c));
        if (m === null) return negate;
        c.captures = m.slice(1).map((g) => g ?? '');
        // Its named groups are variables too, as nginx makes them.
        setGroups(c.req, m.groups);
        return !negate;
      };
    }
    case 'file': {
      const path = compileValue(condition.path);
      const test = fileTests[condition.test];
      const negate = condition.negate;
      return (c) => test(path(c)) !== negate;
    }
  }
}

/** A path's file, or undefined: none, or not a path at all (a variable can hold a NUL,
 * which the file system refuses with an exception). */
function stat(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** nginx stats the file in the worker as the request is processed, and so does zonal: a
 * stat of a local file is short, and its answer must be now's. */
const fileTests: Record<'f' | 'd' | 'e' | 'x', (path: string) => boolean> = {
  f: (p) => stat(p)?.isFile() ?? false,
  d: (p) => stat(p)?.isDirectory() ?? false,
  e: (p) => stat(p) !== undefined,
  // nginx's ngx_is_exec: the owner's execute bit, of a file or a directory alike.
  x: (p) => ((stat(p)?.mode ?? 0) & constants.S_IXUSR) !== 0,
};
