// The rewrite module's directives (ngx_http_rewrite_module), composed into the loader's
// table by config/directives.ts:
//
//   if (<condition>) { ... }                     server, location
//   return <code> [<text> | <url>] | <url>;      server, location, if
//   rewrite <regex> <replacement> [last | break | redirect | permanent];   server, location, if
//   break;                                       server, location, if
//   set $<variable> <value>;                     server, location, if
//   rewrite_log on | off;                        http, server, location, if
//   uninitialized_variable_warn on | off;        http, server, location, if
//
// Each block keeps its rewrite directives in `script`, in the order written: nginx's
// rewrite phase runs them so (script.ts).
import type { Checker, IfLevel, ServerIfLevel } from '../config/levels.js';
import type { IfCondition, RewriteStep } from '../config/model.js';
import { compileRegex } from '../config/regex.js';
import { httpVariables } from '../config/variables.js';
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

type RewriteFlag = NonNullable<Extract<RewriteStep, { kind: 'rewrite' }>['flag']>;
const FLAGS: ReadonlySet<string> = new Set<RewriteFlag>(['last', 'break', 'redirect', 'permanent']);

/** nginx's variables that `set` may change: they have a way to be set. */
const SETTABLE: ReadonlySet<string> = new Set(['args', 'limit_rate']);

/** `rewrite_log` and `uninitialized_variable_warn`: on or off, inherited. */
const onOffSetting = (field: 'rewriteLog' | 'uninitializedVariableWarn') =>
  define({
    contexts: ['http', 'server', 'location', 'if'],
    args: [1, 1],
    apply(d, level, c) {
      const v = d.args[0];
      if (v === 'on' || v === 'off') level[field] = v === 'on';
      else c.error(d.origin, `invalid value "${v}" in "${d.name}" directive, it must be "on" or "off"`);
    },
  });

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
      level.script.push({ kind: 'return', value: parsed.value });
    },
  }),

  rewrite: define({
    contexts: ['server', 'location', 'if', 'server_if'],
    args: [2, 3],
    multiple: true,
    apply(d, level, c) {
      const [source, replacement, flag] = d.args;
      if (flag !== undefined && !FLAGS.has(flag)) return c.error(d.origin, `invalid parameter "${flag}"`);
      let regex: RegExp;
      try {
        regex = compileRegex(source, false);
      } catch (e) {
        return c.error(d.origin, `invalid regular expression "${source}" in "rewrite" directive: ${(e as Error).message}`);
      }
      const error = checkVariables(replacement, knownHttpVariable);
      if (error) return c.error(d.origin, error);
      // nginx: a replacement that is a URL redirects, whatever the flag says, with 302
      // unless it says `permanent`.
      const url = /^(https?:\/\/|\$scheme)/.test(replacement);
      const resolved = url && flag !== 'permanent' ? 'redirect' : (flag as RewriteFlag | undefined);
      level.script.push({ kind: 'rewrite', regex, source, replacement, ...(resolved ? { flag: resolved } : {}) });
    },
  }),

  break: define({
    contexts: ['server', 'location', 'if', 'server_if'],
    args: [0, 0],
    multiple: true,
    apply(_d, level) {
      level.script.push({ kind: 'break' });
    },
  }),

  set: define({
    contexts: ['server', 'location', 'if', 'server_if'],
    args: [2, 2],
    multiple: true,
    apply(d, level, c) {
      const [variable, value] = d.args;
      if (!variable.startsWith('$')) return c.error(d.origin, `invalid variable name "${variable}"`);
      const name = variable.slice(1);
      if (!/^\w+$/.test(name)) return c.error(d.origin, `invalid variable name "${variable}"`);
      // nginx's own variables cannot be set, but for those it gives a way to: `$args`.
      if (httpVariables.builtIn(name) && !SETTABLE.has(name)) return c.error(d.origin, `the duplicate "${name}" variable`);
      const error = checkVariables(value, knownHttpVariable);
      if (error) return c.error(d.origin, error);
      level.script.push({ kind: 'set', variable: name, value });
    },
  }),

  rewrite_log: onOffSetting('rewriteLog'),
  uninitialized_variable_warn: onOffSetting('uninitializedVariableWarn'),

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
          script: [],
        };
        location.script.push({ kind: 'if', index: location.ifs.length });
        location.ifs.push(block);
        c.walk(d.block ?? [], block);
        checkContent(block, '"if" block', c);
      },
    }),
    // In a server: run before locations are searched (the context `server_if`), where
    // only the rewrite module's directives mean anything.
    define({
      contexts: ['server'],
      args: [1, Infinity],
      block: true,
      multiple: true,
      apply(d, server, c) {
        const condition = ifCondition(d, c);
        const block: ServerIfLevel = { kind: 'server_if', seen: new Set(), origin: d.origin, ...(condition ? { condition } : {}), script: [] };
        server.script.push({ kind: 'if', index: server.ifs.length });
        server.ifs.push(block);
        c.walk(d.block ?? [], block);
      },
    }),
  ],
};
