// The map module's directives (ngx_http_map_module, ngx_stream_map_module), composed
// into the loader's table by config/directives.ts:
//
//   map <source> $<variable> { [hostnames;] [volatile;] [default <value>;]
//                              [include <file>;] <key> <value>; ... }     http, stream
//   map_hash_max_size <size>; map_hash_bucket_size <size>;                http, stream
//
// The variable is the configuration's own: known to every value wherever the `map` is
// written (its `declare`), and evaluated in the request or the session that reads it.
import type { Variables } from '../../api/variables.js';
import type { Checker, Context } from '../config/levels.js';
import { compileRegex } from '../config/regex.js';
import { define, type DirectiveSpec } from '../config/spec.js';
import type { Directive } from '../config/syntax.js';
import { checkVariables } from '../config/values.js';
import { httpVariables, streamVariables } from '../config/variables.js';
import { tuning } from '../http/core/config.js';
import { httpScope, streamScope } from './scopes.js';
import { mapVariable, type MapTable, type Scope } from './runtime.js';

/** `$name` of a `map`'s or `geo`'s second word; undefined when it is none. */
export const definedName = (arg: string): string | undefined => (/^\$\w+$/.test(arg) ? arg.slice(1) : undefined);

/** The variable a block defines, checked as nginx's ngx_http_add_variable: a name of
 * the modules' own is taken. Undefined after an error. */
export function variableOf(d: Directive, arg: string, table: Pick<Variables<unknown>, 'builtIn'>, c: Checker): string | undefined {
  const name = definedName(arg);
  if (name === undefined) return void c.error(d.origin, `invalid variable name "${arg}"`);
  if (table.builtIn(name)) return void c.error(d.origin, `the duplicate "${name}" variable`);
  return name;
}

/** A `map` block's entries, its included files' too. */
function readMap(d: Directive, known: (name: string) => boolean, c: Checker): MapTable | undefined {
  const exact = new Map<string, string>();
  const heads = new Map<string, string>();
  const tails = new Map<string, string>();
  const regexes: Array<{ regex: RegExp; value: string }> = [];
  let hostnames = false;
  let volatile = false;
  let fallback: string | undefined;
  let failed = false;
  const fail = (e: Directive, message: string) => {
    failed = true;
    c.error(e.origin, message);
  };
  const add = (keys: Map<string, string>, key: string, value: string, e: Directive) => {
    if (keys.has(key)) fail(e, `conflicting parameter "${e.name}"`);
    else keys.set(key, value);
  };
  const read = (entries: readonly Directive[]) => {
    for (const e of entries) {
      if (e.block) {
        fail(e, `unexpected "{"`);
        continue;
      }
      if (e.args.length === 0 && e.name === 'hostnames') {
        hostnames = true;
        continue;
      }
      if (e.args.length === 0 && e.name === 'volatile') {
        volatile = true;
        continue;
      }
      if (e.args.length !== 1) {
        fail(e, 'invalid number of the map parameters');
        continue;
      }
      if (e.name === 'include') {
        read(e.included ?? []);
        continue;
      }
      const value = e.args[0];
      const unknown = checkVariables(value, known);
      if (unknown) {
        fail(e, unknown);
        continue;
      }
      const key = e.name;
      if (key === 'default') {
        if (fallback !== undefined) fail(e, 'duplicate default map parameter');
        else fallback = value;
        continue;
      }
      if (key.startsWith('~')) {
        const caseless = key.startsWith('~*');
        const pattern = key.slice(caseless ? 2 : 1);
        try {
          regexes.push({ regex: compileRegex(pattern, caseless), value });
        } catch (err) {
          fail(e, `${(err as Error).message} in "${pattern}"`);
        }
        continue;
      }
      // A leading backslash lets a key be a word the block would take for a parameter.
      const plain = (key.startsWith('\\') ? key.slice(1) : key).toLowerCase();
      if (!hostnames || !/[*]|^\./.test(plain)) {
        add(exact, plain, value, e);
        continue;
      }
      // nginx's wildcards: `*.example.com`, `.example.com` (the name itself too) and
      // `www.example.*`, a star only at a dot on either end.
      if (plain.startsWith('*.') && !plain.slice(2).includes('*') && plain.length > 2) add(heads, plain.slice(1), value, e);
      else if (plain.startsWith('.') && !plain.includes('*') && plain.length > 1) {
        add(heads, plain, value, e);
        add(exact, plain.slice(1), value, e);
      } else if (plain.endsWith('.*') && !plain.slice(0, -2).includes('*') && plain.length > 2) add(tails, plain.slice(0, -1), value, e);
      else fail(e, `invalid hostname or wildcard "${e.name}"`);
    }
  };
  read(d.block ?? []);
  if (failed) return undefined;
  return { hostnames, volatile, exact, heads, tails, regexes, ...(fallback !== undefined ? { default: fallback } : {}) };
}

/** `map` in one module: its variables, and how they are evaluated. */
function mapDirective<C>(context: Context, table: Variables<C>, scope: Scope<C>): DirectiveSpec {
  return define({
    contexts: [context],
    args: [2, 2],
    block: true,
    multiple: true,
    declare(d) {
      const name = definedName(d.args[1] ?? '');
      if (name !== undefined && !table.builtIn(name)) table.declare(name);
    },
    apply(d, _level, c) {
      const [source, target] = d.args;
      const unknown = checkVariables(source, table.known);
      if (unknown) return c.error(d.origin, unknown);
      const name = variableOf(d, target, table, c);
      if (name === undefined) return;
      const t = readMap(d, table.known, c);
      if (t) table.define(name, mapVariable(name, source, t, scope));
    },
  });
}

export const mapDirectives: Readonly<Record<string, readonly DirectiveSpec[]>> = {
  map: [mapDirective('http', httpVariables, httpScope), mapDirective('stream', streamVariables, streamScope)],
  // nginx sizes its hash of the keys with these; zonal's is node's Map.
  map_hash_max_size: [tuning('size', ['http', 'stream'])],
  map_hash_bucket_size: [tuning('size', ['http', 'stream'])],
};
