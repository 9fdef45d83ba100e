// The directive table: one entry per directive with where it may be written, how many
// arguments it takes and what it does to its block. Adding a directive is adding an
// entry; walk.ts applies the generic checks for every entry. As in nginx, two directives
// of different contexts may share a name (`server` in http and in upstream): the entry
// is then a list, and the context picks one.
import { limitDirectives } from '../limits/config.js';
import { streamDirectives } from '../stream/config.js';
import { cacheDirectives } from '../cache/config.js';
import { headerDirectives } from '../headers/config.js';
import { gzipDirectives } from '../gzip/config.js';
import { resolverDirectives } from '../resolver/config.js';
import { probeDirectives } from '../probes/config.js';
import { dashboardDirectives } from '../dashboard/config.js';
import { histogramDirectives } from '../histograms/config.js';
import { runtimeDirectives } from '../runtime/config.js';
import { httpCoreDirectives } from '../http/config.js';
import { rewriteDirectives } from '../rewrite/config.js';
import { sslDirectives } from '../ssl/config.js';
import { accessDirectives } from '../access/config.js';
import { authBasicDirectives } from '../auth-basic/config.js';
import { apiDirectives } from '../api/config.js';
import { upstreamDirectives } from '../upstream/config.js';
import { proxyDirectives } from '../proxy/config.js';
import { coreDirectives } from '../core/config.js';
import type { DirectiveSpec } from './spec.js';
import { logDirectives } from '../log/config.js';
import { httpSettingsDirectives } from '../http/core/config.js';
import { contentDirectives } from '../http/content-config.js';
import { mapDirectives } from '../map/config.js';
import { realipDirectives } from '../realip/config.js';
import { geoDirectives } from '../geo/config.js';
import { configStoreDirectives } from '../config-store/config.js';

export type { DirectiveSpec } from './spec.js';

/** The modules that declare their directives beside their code. */
const modules: ReadonlyArray<Readonly<Record<string, DirectiveSpec | readonly DirectiveSpec[]>>> = [
  coreDirectives,
  httpCoreDirectives,
  rewriteDirectives,
  sslDirectives,
  accessDirectives,
  authBasicDirectives,
  apiDirectives,
  contentDirectives,
  limitDirectives,
  streamDirectives,
  cacheDirectives,
  headerDirectives,
  gzipDirectives,
  resolverDirectives,
  probeDirectives,
  dashboardDirectives,
  histogramDirectives,
  runtimeDirectives,
  upstreamDirectives,
  proxyDirectives,
  logDirectives,
  httpSettingsDirectives,
  mapDirectives,
  realipDirectives,
  geoDirectives,
  configStoreDirectives,
];

/** The entries of a directive's name: none when it is unknown. */
export function specsOf(name: string): readonly DirectiveSpec[] {
  const entries = modules.filter((m) => Object.hasOwn(m, name)).map((m) => m[name]);
  return entries.flatMap((entry) => (isList(entry) ? entry : [entry]));
}

const isList = (entry: DirectiveSpec | readonly DirectiveSpec[]): entry is readonly DirectiveSpec[] => Array.isArray(entry);
