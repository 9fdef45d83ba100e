// The auth_basic module's directives (ngx_http_auth_basic_module), composed into the
// loader's table by config/directives.ts:
//
//   auth_basic <realm> | off;      http, server, location, limit_except
//   auth_basic_user_file <file>;   http, server, location, limit_except
import { define, type DirectiveSpec } from '../config/spec.js';
import { confFile } from '../config/files.js';
import { checkVariables } from '../config/values.js';
import { knownHttpVariable } from '../config/variables.js';

const inheritable = ['http', 'server', 'location', 'limit_except'] as const;

export const authBasicDirectives: Readonly<Record<string, DirectiveSpec>> = {
  auth_basic: define({
    contexts: inheritable,
    args: [1, 1],
    admin: true,
    apply(d, level) {
      level.authBasic = { value: d.args[0] === 'off' ? false : d.args[0], origin: d.origin };
    },
  }),

  auth_basic_user_file: define({
    contexts: inheritable,
    args: [1, 1],
    admin: true,
    apply(d, level, c) {
      const [file] = d.args;
      if (!file.includes('$')) {
        level.authUserFile = confFile(d, c);
        return;
      }
      // A file a request's variables name is read when a request names it; as nginx's, a
      // relative value is against the main file's directory (guard.ts).
      const error = checkVariables(file, knownHttpVariable);
      if (error) return c.error(d.origin, error);
      level.authUserFile = file;
    },
  }),
};
