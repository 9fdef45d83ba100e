// Active health probes' configuration (Angie's `upstream_probe`), declared beside their
// code and composed into the loader's table by config/directives.ts:
//
//   upstream_probe <name> [uri=<uri>] [port=<n>] [interval=<time>] [method=<method>]
//       [test=<condition>] [essential [persistent]] [fails=<n>] [passes=<n>]
//       [max_body=<size>] [mode=always|idle|onfail];                 location
//   upstream_probe <name> [port=<n>] [interval=<time>] [test=<condition>]
//       [essential [persistent]] [fails=<n>] [passes=<n>] [max_response=<size>]
//       [mode=always|idle|onfail] [udp] [send=<string>];             stream server
//   upstream_probe_timeout <time>;                                   stream, stream server
//
// A probe belongs to the location (or stream server) it is written in: it checks the
// peers of the upstream that block's proxy_pass names, with that block's proxy settings
// (timeouts, the conditions of proxy_next_upstream, TLS), as Angie has it.
import type { DirectiveSpec } from '../config/spec.js';
import type { AnyLevel, Context } from '../config/levels.js';
import type { Origin, ProxyConfig } from '../config/model.js';
import { parseSize } from '../config/values.js';
import { parseTime } from '../../metrics/peers.js';
import { compileTest, type ProbeTest } from './test.js';

export type ProbeMode = 'always' | 'idle' | 'onfail';

/** What every `upstream_probe` says, HTTP or stream. */
interface ProbeCommon {
  readonly name: string;
  /** Another port than the peer's. */
  readonly port?: number;
  /** Milliseconds (default 5 s). */
  readonly interval: number;
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
  readonly mode: ProbeMode;
  readonly origin: Origin;
}

/** One `upstream_probe` of a location, as written. */
export interface ProbeLevel extends ProbeCommon {
  readonly protocol: 'http';
  readonly uri: string;
  readonly method: string;
  /** Bytes of the body read at most. */
  readonly maxBody: number;
}

/** One `upstream_probe` of a stream server, as written. */
export interface StreamProbeLevel extends ProbeCommon {
  readonly protocol: 'stream';
  /** `send=`: written once connected (or the datagram, with `udp`). */
  readonly send?: Buffer;
  /** `max_response=`: bytes of answer read at most; 0: the answer is not waited for. */
  readonly maxResponse: number;
  readonly udp: boolean;
}

/** A probe with what it takes from its location. */
export interface ProbeConfig extends ProbeLevel {
  readonly upstream: string;
  readonly proxy: Pick<ProxyConfig, 'connectTimeout' | 'readTimeout' | 'nextUpstream' | 'ssl'>;
  /** The Host header: `$proxy_host`, the upstream's name. */
  readonly host: string;
}

/** A stream probe with what it takes from its server. */
export interface StreamProbeConfig extends StreamProbeLevel {
  readonly upstream: string;
  /** Milliseconds the whole probe may take. */
  readonly timeout: number;
  /** `proxy_ssl on`: the probe talks TLS to the peer, as the sessions do. */
  readonly ssl: boolean;
}

export type AnyProbeConfig = ProbeConfig | StreamProbeConfig;

const define = <const K extends Context>(spec: DirectiveSpec<Extract<AnyLevel, { kind: K }>> & { contexts: readonly K[] }) =>
  spec as unknown as DirectiveSpec;

const whole = (v: string, least: number, most: number) => (/^\d{1,10}$/.test(v) && Number(v) >= least && Number(v) <= most ? Number(v) : undefined);

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * `send=`: Angie's `data:<text>` (the file's escapes \r, \n, \t already read) or
 * `hex:<bytes>`; a string without either prefix is text too.
 */
export function parseSend(value: string): Buffer | undefined {
  if (value.startsWith('hex:')) {
    const hex = value.slice(4).replace(/\s+/g, '');
    return hex.length > 0 && hex.length % 2 === 0 && /^[0-9a-fA-F]+$/.test(hex) ? Buffer.from(hex, 'hex') : undefined;
  }
  const text = value.startsWith('data:') ? value.slice(5) : value;
  return text.length > 0 ? Buffer.from(text, 'latin1') : undefined;
}

export const probeDirectives: Readonly<Record<string, DirectiveSpec>> = {
  upstream_probe: define({
    contexts: ['location', 'stream_server'],
    args: [1, 13],
    multiple: true,
    apply(d, level, c) {
      const [name, ...params] = d.args;
      const stream = level.kind === 'stream_server';
      const common: Mutable<ProbeCommon> = { name, interval: 5000, essential: false, persistent: false, fails: 1, passes: 1, mode: 'always', origin: d.origin };
      const http: Mutable<Omit<ProbeLevel, keyof ProbeCommon>> = { protocol: 'http', uri: '/', method: 'GET', maxBody: 256 * 1024 };
      const tcp: Mutable<Omit<StreamProbeLevel, keyof ProbeCommon>> = { protocol: 'stream', maxResponse: 256 * 1024, udp: false };
      const bad = (p: string, why = '') => c.error(d.origin, `invalid parameter "${p}" in "upstream_probe" directive${why}`);
      for (const p of params) {
        const eq = p.indexOf('=');
        const key = eq < 0 ? p : p.slice(0, eq);
        const value = eq < 0 ? '' : p.slice(eq + 1);
        if (key === 'port' && eq > 0) {
          const n = whole(value, 1, 65535);
          if (n === undefined) return bad(p);
          common.port = n;
        } else if (key === 'interval' && eq > 0) {
          const s = parseTime(value, true);
          if (s === undefined || s < 0.01 || s > 2147483) return bad(p);
          common.interval = Math.round(s * 1000);
        } else if (key === 'test' && eq > 0) {
          const compiled = compileTest(value, stream ? 'stream' : 'http');
          if (compiled.error !== undefined) return bad(p, `: ${compiled.error}`);
          common.test = value;
          common.check = compiled.value;
        } else if (key === 'fails' || key === 'passes') {
          const n = eq > 0 ? whole(value, 1, 1_000_000) : undefined;
          if (n === undefined) return bad(p);
          common[key] = n;
        } else if (key === 'mode' && eq > 0) {
          if (value !== 'always' && value !== 'idle' && value !== 'onfail') return bad(p, ': "always", "idle" or "onfail"');
          common.mode = value;
        } else if (p === 'essential') common.essential = true;
        else if (p === 'persistent') common.persistent = true;
        else if (!stream && key === 'uri' && eq > 0) {
          if (!value.startsWith('/') || /[\s\x00-\x1f]/.test(value)) return bad(p, ': the URI starts with "/"');
          http.uri = value;
        } else if (!stream && key === 'method' && eq > 0) {
          if (!/^[A-Z]{1,20}$/.test(value)) return bad(p, ': a method in capitals');
          http.method = value;
        } else if (!stream && key === 'max_body' && eq > 0) {
          const n = parseSize(value);
          if (n === undefined) return bad(p);
          http.maxBody = n;
        } else if (stream && key === 'max_response' && eq > 0) {
          const n = parseSize(value);
          if (n === undefined) return bad(p);
          tcp.maxResponse = n;
        } else if (stream && key === 'send' && eq > 0) {
          const bytes = parseSend(value);
          if (!bytes) return bad(p, ': "data:<text>" or "hex:<hex digits>", not empty');
          tcp.send = bytes;
        } else if (stream && p === 'udp') tcp.udp = true;
        else return bad(p);
      }
      if (common.persistent && !common.essential) return c.error(d.origin, `"persistent" requires "essential" in "upstream_probe" directive`);
      // A test reads the answer: one that is not waited for cannot pass it.
      if (stream && common.check && tcp.maxResponse === 0) return c.error(d.origin, `"test" needs an answer, which "max_response=0" does not wait for, in "upstream_probe" directive`);
      // An empty datagram is no question a UDP service answers.
      if (stream && tcp.udp && !tcp.send) return c.error(d.origin, `"udp" requires "send" in "upstream_probe" directive`);
      if (level.kind === 'stream_server') {
        const probes = (level.probes ??= []);
        if (probes.some((x) => x.name === name)) return c.error(d.origin, `duplicate probe "${name}"`);
        probes.push({ ...common, ...tcp });
      } else {
        const probes = (level.probes ??= []);
        if (probes.some((x) => x.name === name)) return c.error(d.origin, `duplicate probe "${name}"`);
        probes.push({ ...common, ...http });
      }
    },
  }),

  upstream_probe_timeout: define({
    contexts: ['stream', 'stream_server'],
    args: [1, 1],
    apply(d, level, c) {
      const s = parseTime(d.args[0], true);
      if (s === undefined || s <= 0 || s > 2147483) return c.error(d.origin, `invalid value "${d.args[0]}" in "upstream_probe_timeout" directive`);
      level.probeTimeout = Math.round(s * 1000);
    },
  }),
};

/**
 * A stream server's probes, for the upstream its proxy_pass names (`known`: the probes
 * that upstream has already, from other servers; a name is unique among them, as the
 * peers' state depends on them together). The time a probe may take: the server's
 * `upstream_probe_timeout`, else, as HTTP's probes, its connect and proxy time-outs, at
 * most the interval (or 1 s for a shorter one).
 */
export function streamProbes(
  server: { probes?: readonly StreamProbeLevel[]; probeTimeout?: number },
  outer: { probeTimeout?: number },
  proxy: { upstream: string; connectTimeout: number; timeout: number; ssl: boolean },
  known: readonly StreamProbeConfig[],
  error: (origin: Origin, message: string) => void,
): StreamProbeConfig[] {
  const made: StreamProbeConfig[] = [];
  for (const p of server.probes ?? []) {
    if ([...known, ...made].some((x) => x.name === p.name)) {
      error(p.origin, `duplicate probe "${p.name}" of upstream "${proxy.upstream}"`);
      continue;
    }
    const timeout = server.probeTimeout ?? outer.probeTimeout ?? Math.min(Math.max(p.interval, 1000), proxy.connectTimeout + proxy.timeout);
    made.push({ ...p, upstream: proxy.upstream, timeout, ssl: proxy.ssl && !p.udp });
  }
  return made;
}

declare module '../config/levels.js' {
  interface LocationLevel {
    /** `upstream_probe` of this location. */
    probes?: ProbeLevel[];
  }
}
declare module '../stream/config.js' {
  interface StreamServerLevel {
    /** `upstream_probe` of this stream server. */
    probes?: StreamProbeLevel[];
    /** `upstream_probe_timeout`, milliseconds. */
    probeTimeout?: number;
  }
  interface StreamLevel {
    probeTimeout?: number;
  }
}
declare module '../config/model.js' {
  interface UpstreamBlockConfig {
    /** Active health probes of the locations (or, in stream, the servers) that proxy to
     * it (`upstream_probe`). */
    readonly probes?: readonly AnyProbeConfig[];
  }
}
