// The variable tables: one for http, one for stream, assembled from the declarations of
// the modules that own the variables, as directives.ts assembles their directives. Every
// place that takes variables checks its values against these at `-t` and compiles them
// from these once at load; the access log evaluates the same functions.
import { namesIn, Variables } from '../../api/variables.js';
import { traceUpstreams } from '../log/upstream-trace.js';
import { timeRequests, type HttpContext } from '../http/variables.js';
import { httpCoreVariables } from '../http/core/variables.js';
import { isAttemptVariable, upstreamVariables } from '../upstream/variables.js';
import { proxyVariables } from '../proxy/variables.js';
import { sslVariables, streamSslVariables } from '../ssl/variables.js';
import { cacheVariables } from '../cache/variables.js';
import { authBasicVariables } from '../auth-basic/variables.js';
import { realipVariables } from '../realip/variables.js';
import { gzipVariables } from '../gzip/variables.js';
import { streamCoreVariables, type StreamRecord } from '../stream/variables.js';
import { sslPrereadVariables } from '../stream/ssl-preread.js';
import { configuredVariables } from '../rewrite/variables.js';
import type { Directive } from './syntax.js';

export const httpVariables = new Variables<HttpContext>([httpCoreVariables, upstreamVariables, proxyVariables, sslVariables, cacheVariables, authBasicVariables, gzipVariables, realipVariables]);

export const streamVariables = new Variables<StreamRecord>([streamCoreVariables, sslPrereadVariables, streamSslVariables]);

/** Whether `-t` lets a stream value name it. */
export const knownStreamVariable = streamVariables.known;

/** An http value compiled once at load; one that names an upstream attempt's variable
 * has the proxy record its attempts, one that names `$request_time` the requests' start. */
export function compileValue(text: string): (c: HttpContext) => string {
  const names = namesIn(text);
  if (names.some(isAttemptVariable)) traceUpstreams(true);
  if (names.includes('request_time')) timeRequests();
  return httpVariables.compile(text);
}

/** Another configuration is read: the variables the last one defined (map, geo) go. */
export function forgetDefinedVariables(): void {
  httpVariables.forget();
  streamVariables.forget();
}

/** Whether `-t` lets an http value name it. */
export const knownHttpVariable = httpVariables.known;

/** The variables of the configuration about to be checked (`set`, named groups), known
 * to every value from now on (forgetDefinedVariables() dropped the previous
 * configuration's). */
export function declareConfiguredVariables(directives: readonly Directive[]): void {
  for (const [name, v] of configuredVariables(directives, (n) => httpVariables.builtIn(n))) httpVariables.define(name, v);
}
