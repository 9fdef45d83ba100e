// The rewrite module's variables: those the configuration makes with `set`, and the named
// groups of its regexes (`(?<name>...)` of a location, an `if`, a `rewrite` or a
// `server_name`), which nginx makes variables too. They live on the request; one that no
// `set` reached yet is empty, with nginx's warning when `uninitialized_variable_warn` is
// on where it is read.
import type { IncomingMessage } from 'node:http';
import type { Variable } from '../../api/variables.js';
import { eachDirective, type Directive } from '../config/syntax.js';
import type { ErrorLog } from '../log/error-log.js';
import { logForRequest } from '../log/request-error.js';
import type { HttpContext } from '../http/variables.js';

const VALUES = Symbol('zonal.rewriteVariables');
const WARN = Symbol('zonal.uninitializedWarn');
type Carrying = IncomingMessage & { [VALUES]?: Map<string, string>; [WARN]?: ErrorLog };

/** Sets a variable of the configuration for the rest of the request. */
export function setVariable(req: IncomingMessage, name: string, value: string): void {
  ((req as Carrying)[VALUES] ??= new Map()).set(name, value);
}

/** A matching regex's named groups, variables from now on (a group that took no part is empty). */
export function setGroups(req: IncomingMessage, groups: Readonly<Record<string, string | undefined>> | undefined): void {
  if (groups) for (const name in groups) setVariable(req, name, groups[name] ?? '');
}

/** Where the place the request is at wants the use of an unset variable told (its error
 * log), or undefined under `uninitialized_variable_warn off`. */
export function warnUninitialized(req: IncomingMessage, log: ErrorLog | undefined): void {
  if (log !== undefined || (req as Carrying)[WARN] !== undefined) (req as Carrying)[WARN] = log;
}

function userVariable(name: string): Variable<HttpContext> {
  return (c) => {
    const req = c.req as Carrying;
    const value = req[VALUES]?.get(name);
    if (value !== undefined) return value;
    const log = req[WARN];
    if (log) logForRequest(log, 'warn', `using uninitialized "${name}" variable`, req, c.res);
    return '';
  };
}

/** The names nginx makes variables of in a regex: its named groups. */
export const groupNames = (source: string): string[] => [...source.matchAll(/\(\?P?<([A-Za-z_]\w*)>/g)].map((m) => m[1]);

/** The variables an http block's directives make (`set`, and the named groups of its
 * regexes), with what reads each: found before the directives are checked, since a value
 * may name a variable that a later directive sets, as nginx allows. `builtIn`: a name a
 * module declares (`set` of one is the module's to refuse). */
export function configuredVariables(directives: readonly Directive[], builtIn: (name: string) => boolean): Map<string, Variable<HttpContext>> {
  const names = new Set<string>();
  const http = (d: Directive) => {
    const args = d.args;
    if (d.name === 'set' && /^\$\w+$/.test(args[0] ?? '')) names.add(args[0].slice(1));
    const regexes = d.name === 'rewrite' ? args.slice(0, 1) : d.name === 'location' && args.length === 2 ? args.slice(1) : d.name === 'if' || d.name === 'server_name' ? args : [];
    for (const r of regexes) for (const n of groupNames(r)) names.add(n);
  };
  eachDirective(directives, (d) => {
    if (d.name !== 'http') return;
    eachDirective(d.block ?? [], http);
  });
  const variables = new Map([...names].filter((n) => !builtIn(n)).map((n) => [n, userVariable(n)]));
  configured = variables.size > 0;
  return variables;
}

/** Whether the configuration last read makes any variable. */
let configured = false;
export const hasConfiguredVariables = (): boolean => configured;
