// status_runtime, declared beside what it switches on: each worker's Node runtime metrics
// in /status/workers (metrics/runtime.ts).
//
//   status_runtime on | off;      main; default off
//
// `on`: the catalog has `runtime`, so the tree shows `workers` after the spec's members,
// and every worker samples its own process once a second (worker.ts). A directive rather
// than always on, for the reason status_zone_histogram is one: the tree is Angie's, and
// the text format's families the spec's, until an operator asks for zonal's extensions.
// In the main context, beside worker_processes: the runtime is the worker process's, not
// any http or stream block's.
import { define, type DirectiveSpec } from '../config/spec.js';

declare module '../config/levels.js' {
  interface MainLevel {
    /** `status_runtime` written here. */
    statusRuntime?: boolean;
  }
}
declare module '../config/model.js' {
  interface ServerConfig {
    /** `status_runtime on`: workers sample their runtime into /status/workers. */
    readonly statusRuntime?: boolean;
  }
}

/** Milliseconds between a worker's samples: what its delay and utilisation cover. */
export const RUNTIME_INTERVAL_MS = 1000;

export const runtimeDirectives: Record<string, DirectiveSpec> = {
  status_runtime: define({
    contexts: ['main'],
    args: [1, 1],
    apply(d, main, c) {
      const [arg] = d.args;
      if (arg !== 'on' && arg !== 'off') return c.error(d.origin, `invalid value "${arg}" in "status_runtime" directive, it must be "on" or "off"`);
      main.statusRuntime = arg === 'on';
    },
  }),
};
