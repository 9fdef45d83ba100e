// The access module's directives (ngx_http_access_module), composed into the loader's table
// by config/directives.ts:
//
//   allow <address> | <cidr> | all;   http, server, location, limit_except
//   deny  <address> | <cidr> | all;   http, server, location, limit_except
import { define, type DirectiveSpec } from '../config/spec.js';
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
};
