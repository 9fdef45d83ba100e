// status_zone_histogram, declared beside the histograms it configures: the bounds of the
// response time histogram of HTTP server and location zones and of HTTP peers, and of the
// connect and session time histograms of stream peers (metrics/histograms.ts).
//
//   status_zone_histogram <bound> [<bound> ...] | on | off;
//       http, server, location, if, upstream, stream
//
// A bound is milliseconds, as the JSON shows them: `5`, `2.5`, `250ms`, `1s`, `1.5s`.
// Bounds ascend strictly; +Inf is always implied after the last. `on` is the default
// bounds, `off` (the default) no histogram. The setting is inherited as nginx's are: http -> server ->
// location (a server zone takes its server's, a location zone its location's), http ->
// its upstreams, stream -> its upstreams.
import type { HistogramSetting } from '../../metrics/catalog.js';
import { DEFAULT_BOUNDS } from '../../metrics/histograms.js';
import type { DirectiveSpec } from '../config/spec.js';
import type { AnyLevel, Context } from '../config/levels.js';
import type { Directive } from '../config/syntax.js';

/** More bounds cost every reader and the text format a line each, for no gain. */
export const MAX_BOUNDS = 32;

declare module '../config/levels.js' {
  interface InheritableLevel {
    /** `status_zone_histogram` written here. */
    histogram?: HistogramSetting;
  }
  interface UpstreamLevel {
    histogram?: HistogramSetting;
  }
}
declare module '../stream/config.js' {
  interface StreamLevel {
    histogram?: HistogramSetting;
  }
}
declare module '../config/model.js' {
  interface Inherited {
    /** `status_zone_histogram` in force; absent: none written, so none. */
    readonly histogram?: HistogramSetting;
  }
  interface UpstreamBlockConfig {
    /** Its peers' histograms: its own `status_zone_histogram`, else its block's. */
    readonly histogram?: HistogramSetting;
  }
}

const define = <const K extends Context>(spec: DirectiveSpec<Extract<AnyLevel, { kind: K }>> & { contexts: readonly K[] }) =>
  spec as unknown as DirectiveSpec;

/** A bound in milliseconds: a number, `ms` or `s`; undefined when malformed. */
function parseBound(text: string): number | undefined {
  const m = /^(\d{1,9}(?:\.\d{1,6})?)(ms|s)?$/.exec(text);
  if (!m) return undefined;
  const v = Number(m[1]) * (m[2] === 's' ? 1000 : 1);
  // Bounds are kept to the microsecond, as the histogram's sum is.
  return Math.round(v * 1000) / 1000;
}

export const histogramDirectives: Record<string, DirectiveSpec> = {
  status_zone_histogram: define({
    contexts: ['http', 'server', 'location', 'if', 'upstream', 'stream'],
    args: [1, MAX_BOUNDS],
    apply(d: Directive, level, c) {
      const [first] = d.args;
      if (d.args.length === 1 && (first === 'on' || first === 'off')) {
        level.histogram = first === 'off' ? false : DEFAULT_BOUNDS;
        return;
      }
      const bounds: number[] = [];
      for (const arg of d.args) {
        const v = parseBound(arg);
        if (v === undefined || v <= 0)
          return c.error(d.origin, `invalid bound "${arg}" in "status_zone_histogram" directive: a time above 0 in milliseconds ("5", "2.5", "250ms", "1s"), or "on" or "off" alone`);
        if (bounds.length && v <= bounds[bounds.length - 1])
          return c.error(d.origin, `bound "${arg}" in "status_zone_histogram" directive is not above the one before it: bounds ascend strictly`);
        bounds.push(v);
      }
      level.histogram = bounds;
    },
  }),
};

/** `{ histogram }` for a model object: the bounds in force; nothing where they are off
 * (written `off`, or nothing written above). Histograms are off unless asked for, as nginx-module-vts's are: a `/status/` tree
 * is Angie's until an operator adds zonal's extension, and a tree of ten thousand peers
 * renders in half the time without them. The embedding API's catalog has the same
 * default. */
export function histogramField(setting: HistogramSetting | undefined): { histogram?: HistogramSetting } {
  return setting ? { histogram: setting } : {};
}
