// The dashboard module's configuration (issue 18), declared beside its code:
//
//   dashboard [<api>];     location of an admin or data-plane server
//
// serves the single-page dashboard at every URI of the location. <api> is the URI under
// which the API's root is mounted on the same server, `/` by default: the page reads
// `<api>status/` (over a WebSocket where the server is an admin listener) and writes
// `<api>config/`.
import { define, type DirectiveSpec } from '../config/spec.js';

declare module '../config/levels.js' {
  interface LocationLevel {
    /** `dashboard`: the API's root as the page reaches it. */
    dashboard?: At<string>;
  }
}
declare module '../config/model.js' {
  interface LocationConfig {
    /** `dashboard [<api>]`: the page is served here, and reads the API under `<api>`. */
    readonly dashboard?: string;
  }
}

/** A URI prefix the page can put before `status/`: absolute, ending in `/`, and nothing
 * that would need escaping in HTML or a URL. */
const API_PREFIX = /^\/(?:[A-Za-z0-9._~!$&'()*+,;=:@%-]+\/)*$/;

export const dashboardDirectives: Record<string, DirectiveSpec> = {
  dashboard: define({
    contexts: ['location'],
    args: [0, 1],
    admin: true,
    apply(d, location, c) {
      const api = d.args[0] ?? '/';
      if (!API_PREFIX.test(api) || /['&]/.test(api))
        return c.error(d.origin, `invalid API prefix "${api}" in "dashboard" directive: it must be a URI path that starts and ends with "/", where the API's /status/ and /config/ are`);
      location.dashboard = { value: api, origin: d.origin };
    },
  }),
};
