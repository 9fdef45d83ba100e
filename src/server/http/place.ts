// A place: what answers the requests of a location (or an `if` block in it, or a server
// none of whose locations matches), as site.ts builds it for the data plane, the admin
// listeners and the content phase (content.ts).
import type { PlaceLog } from '../log/access-log.js';
import type { CoreSettings } from './core/config.js';
import type { StoreApiHandler } from '../../api/index.js';
import type { HttpZone } from '../../metrics/http-zones.js';
import type { PlaceLimits } from '../limits/runtime.js';
import type { Realip } from '../realip/runtime.js';
import type { Dashboard } from '../dashboard/page.js';
import type { ErrorLog } from '../log/error-log.js';
import type { ContentConfig } from './content-config.js';
import type { GzipConfig } from '../gzip/config.js';
import type { Guard } from './guard.js';
import type { Return } from './pages.js';
import type { Proxy } from './proxy.js';
import type { HttpContext } from './variables.js';

export interface Place {
  /** The location zone (absent: `status_zone off`, none set, or not recording). */
  readonly zone?: HttpZone;
  /** With `status_zone <key> zone=...`: the zone of a request, the one its key names
   * (made at its first use), or the group's own once the group is full; undefined for a
   * key that names none (empty, or over 256 bytes), as Angie does not count it. */
  readonly zoneOf?: (c: HttpContext) => HttpZone | undefined;
  readonly guard: Guard;
  readonly return?: Return;
  readonly api?: StoreApiHandler;
  /** The dashboard page (`dashboard`). */
  readonly dashboard?: Dashboard;
  /** Static files. */
  readonly root?: string;
  /** index, alias, try_files, error_page, internal, server_tokens, limit_rate, add_header. */
  readonly content?: ContentConfig;
  readonly proxy?: Proxy;
  /** `limit_req` and `limit_conn` in force (only where traffic is recorded: workers). */
  readonly limits?: PlaceLimits;
  // `script`: the rewrite module's (rewrite/script.ts).
  /** Where the use of a variable no `set` reached is told (`uninitialized_variable_warn`). */
  readonly warn?: ErrorLog;
  /** `access_log` in force (only where traffic is recorded: workers). */
  readonly log?: PlaceLog;
  /** The http core module's settings here (types, body size, keep-alive). */
  readonly core?: CoreSettings;
  /** `set_real_ip_from` in force: finds the request's client address. */
  readonly realip?: Realip;
  /** gzip and gzip_static, when either is on. */
  readonly gzip?: GzipConfig;
}

/** Where a request goes: a place, with its regex captures, or a redirect (`redirect`: the
 * path, as the location is written, that a 301 sends the client to). */
export interface Route {
  readonly place: Place;
  readonly captures?: readonly string[];
  /** The named groups of its regex location. */
  readonly groups?: Readonly<Record<string, string | undefined>>;
  readonly redirect?: string;
}
