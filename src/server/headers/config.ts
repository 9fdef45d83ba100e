// add_header, declared beside its code: headers added to the responses of a location,
// with nginx's rules: to 200, 201, 204, 206, 301, 302, 303, 304, 307 and 308 unless
// `always`; a block with any add_header replaces the outer block's list.
import type { DirectiveSpec } from '../config/spec.js';
import type { AnyLevel, Context, InheritableLevel } from '../config/levels.js';
import type { Directive } from '../config/syntax.js';
import { checkHeader, checkVariables } from '../config/values.js';
import { knownHttpVariable } from '../config/variables.js';

export interface AddHeader {
  readonly name: string;
  readonly value: string;
  readonly always: boolean;
}

export interface HeadersLevel {
  /** Only those written in this block. */
  readonly add: AddHeader[];
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
};

/** The list in force: the innermost block that has any. */
export function mergeHeaders(outer: readonly AddHeader[], level: InheritableLevel): readonly AddHeader[] {
  return level.headers && level.headers.add.length > 0 ? level.headers.add : outer;
}
