// Active health probes' configuration (Angie's `upstream_probe`), declared beside their
// code and composed into the loader's table by config/directives.ts:
//
//   upstream_probe <name> [uri=<uri>] [port=<n>] [interval=<time>] [method=<method>]
//       [test=<condition>] [essential [persistent]] [fails=<n>] [passes=<n>]
//       [max_body=<size>] [mode=always|idle|onfail];                 location
//
// A probe belongs to the location it is written in: it checks the peers of the upstream
// that location's proxy_pass names, with that location's proxy settings (timeouts, the
// conditions of proxy_next_upstream, TLS), as Angie has it.
import type { DirectiveSpec } from '../config/spec.js';
import type { AnyLevel, Context } from '../config/levels.js';
import type { Origin, ProxyConfig } from '../config/model.js';
import { parseSize } from '../config/values.js';
import { parseTime } from '../../metrics/peers.js';
import { compileTest, type ProbeTest } from './test.js';

export type ProbeMode = 'always' | 'idle' | 'onfail';

/** One `upstream_probe` as written. */
export interface ProbeLevel {
  readonly name: string;
  readonly uri: string;
  /** Another port than the peer's. */
  readonly port?: number;
  /** Milliseconds (default 5 s). */
  readonly interval: number;
  readonly method: string;
  /** `test=` as written, and compiled. */
  readonly test?: string;
  readonly check?: ProbeTest;
  /** Peers start `checking` and take no traffic until they pass. */
  readonly essential: boolean;
  /** With essential: a peer healthy before a reload is not checked again first. */
  readonly persistent: boolean;
  /** Consecutive failures that make a peer unhealthy, passes that make it healthy. */
  readonly fails: number;
  readonly passes: number;
  /** Bytes of the body read at most. */
  readonly maxBody: number;
  readonly mode: ProbeMode;
  readonly origin: Origin;
}

/** A probe with what it takes from its location. */
export interface ProbeConfig extends ProbeLevel {
  readonly upstream: string;
  readonly proxy: Pick<ProxyConfig, 'connectTimeout' | 'readTimeout' | 'nextUpstream' | 'ssl'>;
  /** The Host header: `$proxy_host`, the upstream's name. */
  readonly host: string;
}

const define = <const K extends Context>(spec: DirectiveSpec<Extract<AnyLevel, { kind: K }>> & { contexts: readonly K[] }) =>
  spec as unknown as DirectiveSpec;

const whole = (v: string, least: number, most: number) => (/^\d{1,10}$/.test(v) && Number(v) >= least && Number(v) <= most ? Number(v) : undefined);

export const probeDirectives: Readonly<Record<string, DirectiveSpec>> = {
  upstream_probe: define({
    contexts: ['location'],
    args: [1, 13],
    multiple: true,
    apply(d, location, c) {
      const [name, ...params] = d.args;
      const probe: { -readonly [K in keyof ProbeLevel]: ProbeLevel[K] } = {
        name,
        uri: '/',
        interval: 5000,
        method: 'GET',
        essential: false,
        persistent: false,
        fails: 1,
        passes: 1,
        maxBody: 256 * 1024,
        mode: 'always',
        origin: d.origin,
      };
      const bad = (p: string, why = '') => c.error(d.origin, `invalid parameter "${p}" in "upstream_probe" directive${why}`);
      for (const p of params) {
        const eq = p.indexOf('=');
        const key = eq < 0 ? p : p.slice(0, eq);
        const value = eq < 0 ? '' : p.slice(eq + 1);
        if (key === 'uri' && eq > 0) {
          if (!value.startsWith('/') || /[\s\x00-\x1f]/.test(value)) return bad(p, ': the URI starts with "/"');
          probe.uri = value;
        } else if (key === 'port' && eq > 0) {
          const n = whole(value, 1, 65535);
          if (n === undefined) return bad(p);
          probe.port = n;
        } else if (key === 'interval' && eq > 0) {
          const s = parseTime(value, true);
          if (s === undefined || s < 0.01 || s > 2147483) return bad(p);
          probe.interval = Math.round(s * 1000);
        } else if (key === 'method' && eq > 0) {
          if (!/^[A-Z]{1,20}$/.test(value)) return bad(p, ': a method in capitals');
          probe.method = value;
        } else if (key === 'test' && eq > 0) {
          const compiled = compileTest(value);
          if (compiled.error !== undefined) return bad(p, `: ${compiled.error}`);
          probe.test = value;
          probe.check = compiled.value;
        } else if (key === 'fails' || key === 'passes') {
          const n = eq > 0 ? whole(value, 1, 1_000_000) : undefined;
          if (n === undefined) return bad(p);
          probe[key] = n;
        } else if (key === 'max_body' && eq > 0) {
          const n = parseSize(value);
          if (n === undefined) return bad(p);
          probe.maxBody = n;
        } else if (key === 'mode' && eq > 0) {
          if (value !== 'always' && value !== 'idle' && value !== 'onfail') return bad(p, ': "always", "idle" or "onfail"');
          probe.mode = value;
        } else if (p === 'essential') probe.essential = true;
        else if (p === 'persistent') probe.persistent = true;
        else return bad(p);
      }
      if (probe.persistent && !probe.essential) return c.error(d.origin, `"persistent" requires "essential" in "upstream_probe" directive`);
      const probes = (location.probes ??= []);
      if (probes.some((x) => x.name === name)) return c.error(d.origin, `duplicate probe "${name}"`);
      probes.push(probe);
    },
  }),
};

declare module '../config/levels.js' {
  interface LocationLevel {
    /** `upstream_probe` of this location. */
    probes?: ProbeLevel[];
  }
}
declare module '../config/model.js' {
  interface UpstreamBlockConfig {
    /** Active health probes of the locations that proxy to it (`upstream_probe`). */
    readonly probes?: readonly ProbeConfig[];
  }
}
