// The rewrite module's directives (ngx_http_rewrite_module), composed into the loader's
// table by config/directives.ts:
//
//   if (<condition>) { ... }                     server, location
//   return <code> [<text> | <url>] | <url>;      server, location, if
import type { Checker, IfLevel, ServerIfLevel } from '../config/levels.js';
import type { IfCondition } from '../config/model.js';
import { define, type DirectiveSpec } from '../config/spec.js';
import type { Directive } from '../config/syntax.js';
import { checkVariables, parseReturn } from '../config/values.js';
import { checkContent } from '../http/config.js';
import { parseIfCondition } from './condition.js';
import { knownHttpVariable } from '../config/variables.js';

/** The condition of an `if` directive, or undefined after its error. */
function ifCondition(d: Directive, c: Checker): IfCondition | undefined {
  const parsed = parseIfCondition(d.args);
  if (parsed.error !== undefined) return void c.error(d.origin, `${parsed.error} in "if" directive`);
  const condition = parsed.value;
  // A file test's relative path is the prefix's, as nginx's run-time paths are.
  if (condition.kind === 'file' && !condition.path.startsWith('/') && !condition.path.startsWith('$')) return { ...condition, path: c.path(condition.path, 'prefix') };
  return condition;
}

export const rewriteDirectives: Readonly<Record<string, DirectiveSpec | readonly DirectiveSpec[]>> = {
  // nginx lets a second `return` pass silently (the first one answers); zonal calls it
  // duplicate, since it can only be a mistake.
  return: define({
    contexts: ['server', 'location', 'if', 'server_if'],
    args: [1, 2],
    admin: true,
    apply(d, level, c) {
      const parsed = parseReturn(d.args);
      if (parsed.error !== undefined) return c.error(d.origin, parsed.error);
      const text = parsed.value.text;
      const error = text === undefined ? undefined : checkVariables(text, knownHttpVariable);
      if (error) return c.error(d.origin, error);
      level.return = { value: parsed.value, origin: d.origin };
      // nginx runs a location's `return` and `if` blocks in the order written.
      if (level.kind === 'location' || level.kind === 'server') level.ifsBeforeReturn = level.ifs.length;
    },
  }),

  if: [
    // nginx's `if` in a location: an implicit nested location (levels.ts, IfLevel). The
    // directives allowed in it are those whose entry names the `if` context.
    define({
      contexts: ['location'],
      args: [1, Infinity],
      block: true,
      multiple: true,
      apply(d, location, c) {
        const condition = ifCondition(d, c);
        const block: IfLevel = {
          kind: 'if',
          seen: new Set(),
          origin: d.origin,
          modifier: location.modifier,
          path: location.path,
          ...(condition ? { condition } : {}),
          access: [],
          proxySetHeaders: [],
        };
        location.ifs.push(block);
        c.walk(d.block ?? [], block);
        checkContent(block, '"if" block', c);
      },
    }),
    // In a server: before locations are searched, a `return` (the context `server_if`).
    define({
      contexts: ['server'],
      args: [1, Infinity],
      block: true,
      multiple: true,
      apply(d, server, c) {
        const condition = ifCondition(d, c);
        const block: ServerIfLevel = { kind: 'server_if', seen: new Set(), origin: d.origin, ...(condition ? { condition } : {}) };
        server.ifs.push(block);
        c.walk(d.block ?? [], block);
      },
    }),
  ],
};
