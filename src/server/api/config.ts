// The API module's directives (Angie's and NGINX Plus's `api`), composed into the loader's
// table by config/directives.ts:
//
//   api <path>;                      location, if
//   api_origins <origin> ...;        http, server, location
//   api_config_files on | off;       location
import { normaliseOrigin } from '../../api/origin.js';
import { define, type DirectiveSpec } from '../config/spec.js';
import { checkApiPath } from '../config/values.js';

export const apiDirectives: Readonly<Record<string, DirectiveSpec>> = {
  api: define({
    contexts: ['location', 'if'],
    args: [1, 1],
    admin: true,
    apply(d, location, c) {
      const error = checkApiPath(d.args[0]);
      if (error) c.error(d.origin, `${error} in "api" directive`);
      else location.api = { value: d.args[0], origin: d.origin };
    },
  }),

  api_origins: define({
    contexts: ['http', 'server', 'location'],
    args: [1, 64],
    admin: true,
    apply(d, level, c) {
      const origins: string[] = [];
      for (const arg of d.args) {
        const origin = normaliseOrigin(arg);
        if (origin === undefined) return void c.error(d.origin, `invalid origin "${arg}" in "api_origins" directive, it must be http://<host>[:<port>] or https://<host>[:<port>]`);
        origins.push(origin);
      }
      level.apiOrigins = origins;
    },
  }),

  api_config_files: define({
    contexts: ['location'],
    args: [1, 1],
    admin: true,
    apply(d, location, c) {
      const [arg] = d.args;
      if (arg === 'on' || arg === 'off') location.apiConfigFiles = arg === 'on';
      else c.error(d.origin, `invalid value "${arg}" in "api_config_files" directive, it must be "on" or "off"`);
    },
  }),
};
