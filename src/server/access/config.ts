// The access module's directives (ngx_http_access_module), composed into the loader's table
// by config/directives.ts:
//
//   allow <address> | <cidr> | all;   http, server, location, limit_except
//   deny  <address> | <cidr> | all;   http, server, location, limit_except
//   satisfy all | any;                http, server, location
//
// `satisfy` is the core module's, about the access phase that allow/deny and auth_basic
// share (http/guard.ts): with `any`, either lets a request through.
import { define, type DirectiveSpec } from '../config/spec.js';

declare module '../config/levels.js' {
  interface InheritableLevel {
    satisfy?: 'all' | 'any';
  }
}
declare module '../config/model.js' {
  interface Inherited {
    /** `satisfy any`: allow/deny or basic auth lets a request through; absent: all. */
    readonly satisfy?: 'any';
  }
}
import type { InheritableLevel } from '../config/levels.js';
import { checkAccessAddress } from '../config/values.js';

function access(allow: boolean) {
  return define({
    contexts: ['http', 'server', 'location', 'limit_except'],
    args: [1, 1],
    multiple: true,
    admin: true,
    apply(d, level: InheritableLevel, c) {
      const error = checkAccessAddress(d.args[0]);
      if (error) c.error(d.origin, `${error} in "${d.name}" directive`);
      else level.access.push({ allow, address: d.args[0], origin: d.origin });
    },
  });
}

export const accessDirectives: Readonly<Record<string, DirectiveSpec>> = {
  allow: access(true),
  deny: access(false),
  satisfy: define({
    contexts: ['http', 'server', 'location'],
    args: [1, 1],
    admin: true,
    apply(d, level, c) {
      const [arg] = d.args;
      if (arg !== 'all' && arg !== 'any') c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "all" or "any"`);
      else level.satisfy = arg;
    },
  }),
};
