// The headers module (ngx_http_headers_module), declared beside its code: `add_header` and
// `expires`, with nginx's rules: to 200, 201, 204, 206, 301, 302, 303, 304, 307 and 308
// (add_header: unless `always`); a block with any add_header replaces the outer block's
// list, and `expires` inherits on its own. One list carries both: `expires` is an entry of
// its own, first, as nginx sets it before it adds the headers.
import type { DirectiveSpec } from '../config/spec.js';
import type { AnyLevel, Context, InheritableLevel } from '../config/levels.js';
import type { Directive } from '../config/syntax.js';
import { checkHeader, checkVariables } from '../config/values.js';
import { knownHttpVariable } from '../config/variables.js';
import { parseExpires } from './expires.js';

export interface AddHeader {
  readonly name: string;
  /** For `expires`: its arguments as written (`modified 1h`, `$expires`). */
  readonly value: string;
  readonly always: boolean;
  /** The entry is `expires`: it sets Expires and replaces every Cache-Control. */
  readonly expires?: true;
}

export interface HeadersLevel {
  /** Only those written in this block. */
  readonly add: AddHeader[];
  /** `expires` written here; `off` is kept, to stop the outer one. */
  expires?: AddHeader;
}

// `add_header` joins the loader's levels and proxy settings by augmenting their
// interfaces (see limits/config.ts).
declare module '../config/levels.js' {
  interface InheritableLevel {
    /** `add_header` written here. */
    headers?: HeadersLevel;
  }
}
declare module '../config/model.js' {
  interface ProxyConfig {
    /** `add_header` in force; absent: none. */
    readonly addHeaders?: readonly AddHeader[];
  }
}

const define = <const K extends Context>(spec: DirectiveSpec<Extract<AnyLevel, { kind: K }>> & { contexts: readonly K[] }) =>
  spec as unknown as DirectiveSpec;

export const headerDirectives: Record<string, DirectiveSpec> = {
  add_header: define({
    contexts: ['http', 'server', 'location'],
    args: [2, 3],
    multiple: true,
    apply(d: Directive, level, c) {
      const [name, value, always] = d.args;
      if (always !== undefined && always !== 'always') return c.error(d.origin, `invalid parameter "${always}"`);
      // The literal text is checked as a header; variables by add_header's own list.
      const literal = checkHeader(name, value.replace(/\$/g, ''));
      if (literal) return c.error(d.origin, literal);
      const vars = checkVariables(value, knownHttpVariable);
      if (vars) return c.error(d.origin, vars);
      ((level as InheritableLevel).headers ??= { add: [] }).add.push({ name, value, always: always === 'always' });
    },
  }),

  // `expires [modified] <time> | epoch | max | off`; a value with variables is read per
  // request, as nginx has allowed since 1.7.9.
  expires: define({
    contexts: ['http', 'server', 'location', 'if'],
    args: [1, 2],
    apply(d: Directive, level, c) {
      const text = d.args.join(' ');
      if (text.includes('$')) {
        const vars = checkVariables(text, knownHttpVariable);
        if (vars) return c.error(d.origin, vars);
      } else {
        const parsed = parseExpires(d.args);
        if ('error' in parsed) return c.error(d.origin, parsed.error);
      }
      ((level as InheritableLevel).headers ??= { add: [] }).expires = { name: 'Expires', value: text, always: false, expires: true };
    },
  }),
};

/** The list in force: `expires` of the innermost block that has one (none for `off`),
 * then the add_header of the innermost block that has any. */
export function mergeHeaders(outer: readonly AddHeader[], level: InheritableLevel): readonly AddHeader[] {
  const own = level.headers;
  if (!own) return outer;
  const add = own.add.length > 0 ? own.add : outer.filter((h) => !h.expires);
  const expires = own.expires ? (own.expires.value === 'off' ? [] : [own.expires]) : outer.filter((h) => h.expires);
  return expires.length === 0 ? add : [...expires, ...add];
}
