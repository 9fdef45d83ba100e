// The resolver's configuration, declared beside its code (composed into the loader's
// table by config/directives.ts):
//
//   resolver <address>[:port] ... [valid=<time>] [ipv4=on|off] [ipv6=on|off] [status_zone=<zone>];
//   resolver_timeout <time>;        http, server, location, upstream; stream, its server
//                                   and its upstream
//
// As in Angie, an upstream's `resolve` servers use the upstream's own resolver, else its
// block's (http's, or stream's for a stream upstream). A location's resolver (its own,
// else its server's, else http's, as nginx inherits it) looks up the host a `proxy_pass`
// with variables names when no upstream has that name. A stream server's is checked and
// its zone shown: zonal's stream proxy_pass with variables names upstreams or addresses.
import { isIP } from 'node:net';
import type { DirectiveSpec } from '../config/spec.js';
import type { AnyLevel, Checker, Context, HttpLevel, UpstreamLevel } from '../config/levels.js';
import type { Origin } from '../config/model.js';
import type { Directive } from '../config/syntax.js';
import { isZoneName, type Checked, type UpstreamAddress } from '../config/values.js';
import { parseTime } from '../../metrics/peers.js';
import type { DnsServer } from './dns.js';

export interface ResolverConfig {
  readonly servers: readonly DnsServer[];
  /** Seconds each answer is kept instead of its TTL. */
  readonly valid?: number;
  readonly ipv4: boolean;
  readonly ipv6: boolean;
  /** `status_zone=`: the /status/resolvers zone its queries count in. */
  readonly statusZone?: string;
  /** `resolver_timeout`, milliseconds (default 30 s, as nginx). */
  readonly timeout: number;
  readonly origin: Origin;
}

/** What one block says of resolvers. */
export interface ResolverLevel {
  resolver?: Omit<ResolverConfig, 'timeout'>;
  timeout?: number;
}

export const RESOLVER_TIMEOUT_MS = 30_000;

const define = <const K extends Context>(spec: DirectiveSpec<Extract<AnyLevel, { kind: K }>> & { contexts: readonly K[] }) =>
  spec as unknown as DirectiveSpec;
const contexts = ['http', 'server', 'location', 'upstream', 'stream', 'stream_server'] as const;

type WithResolver = Extract<AnyLevel, { kind: (typeof contexts)[number] }>;
const levelOf = (level: WithResolver): ResolverLevel => (level.resolver ??= {});

/** `127.0.0.1`, `127.0.0.1:5353`, `[::1]:53`, `localhost`: port 53 by default. */
function parseServer(arg: string): DnsServer | undefined {
  let host: string;
  let port: string | undefined;
  if (arg.startsWith('[')) {
    const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(arg);
    if (!m || isIP(m[1]) !== 6) return undefined;
    [, host, port] = m;
  } else {
    const m = /^([^:]+)(?::(\d{1,5}))?$/.exec(arg);
    if (!m) return undefined;
    [, host, port] = m;
    if (host.toLowerCase() === 'localhost') host = '127.0.0.1';
    if (isIP(host) !== 4) return undefined;
  }
  const n = port === undefined ? 53 : Number(port);
  return n >= 1 && n <= 65535 ? { host, port: n } : undefined;
}

function onOff(d: Directive, p: string, c: Checker): boolean | undefined {
  const v = p.slice(p.indexOf('=') + 1);
  if (v === 'on' || v === 'off') return v === 'on';
  c.error(d.origin, `invalid parameter "${p}" in "resolver" directive, it must be "on" or "off"`);
  return undefined;
}

export const resolverDirectives: Readonly<Record<string, DirectiveSpec>> = {
  resolver: define({
    contexts,
    args: [1, Infinity],
    apply(d, level, c) {
      const servers: DnsServer[] = [];
      let valid: number | undefined;
      let ipv4 = true;
      let ipv6 = true;
      let statusZone: string | undefined;
      for (const p of d.args) {
        if (p.startsWith('valid=')) {
          const s = parseTime(p.slice(6), false);
          if (s === undefined || s === 0) return c.error(d.origin, `invalid parameter "${p}" in "resolver" directive`);
          valid = s;
        } else if (p.startsWith('ipv4=')) {
          const v = onOff(d, p, c);
          if (v === undefined) return;
          ipv4 = v;
        } else if (p.startsWith('ipv6=')) {
          const v = onOff(d, p, c);
          if (v === undefined) return;
          ipv6 = v;
        } else if (p.startsWith('status_zone=')) {
          statusZone = p.slice(12);
          if (!isZoneName(statusZone))
            return c.error(d.origin, `invalid zone name "${statusZone}" in "resolver" directive: letters, digits, "_", "-" and "." only`);
        } else {
          const server = parseServer(p);
          // nginx would resolve a name here with the system's resolver, once: zonal asks
          // for the address, which is what it would end up with anyway.
          if (!server) return c.error(d.origin, `invalid resolver address "${p}": an IPv4 address or a bracketed IPv6 address, with an optional port`);
          servers.push(server);
        }
      }
      if (servers.length === 0) return c.error(d.origin, `no name servers defined in "resolver" directive`);
      if (!ipv4 && !ipv6) return c.error(d.origin, `"ipv4" and "ipv6" cannot both be "off" in "resolver" directive`);
      levelOf(level).resolver = { servers, ...(valid !== undefined ? { valid } : {}), ipv4, ipv6, ...(statusZone ? { statusZone } : {}), origin: d.origin };
    },
  }),

  resolver_timeout: define({
    contexts,
    args: [1, 1],
    apply(d, level, c) {
      const s = parseTime(d.args[0], true);
      if (s === undefined || s <= 0 || s > 2147483) return c.error(d.origin, `invalid value "${d.args[0]}" in "resolver_timeout" directive`);
      levelOf(level).timeout = Math.round(s * 1000);
    },
  }),
};

/** The block an upstream is in, as far as resolvers go: http or stream. */
interface UpstreamsBlock {
  readonly resolver?: ResolverLevel;
  readonly upstreams: readonly UpstreamLevel[];
}

/** The resolver an upstream's `resolve` servers use: its own, else its block's (http's
 * or stream's); `resolver_timeout` likewise. */
export function upstreamResolver(u: UpstreamLevel, block: UpstreamsBlock): ResolverConfig | undefined {
  const r = u.resolver?.resolver ?? block.resolver?.resolver;
  if (!r) return undefined;
  return { ...r, timeout: u.resolver?.timeout ?? block.resolver?.timeout ?? RESOLVER_TIMEOUT_MS };
}

/** What a location inherits of `resolver` and `resolver_timeout`, each on its own. */
export function mergeResolver(outer: ResolverLevel | undefined, level: { readonly resolver?: ResolverLevel }): ResolverLevel | undefined {
  const resolver = level.resolver?.resolver ?? outer?.resolver;
  const timeout = level.resolver?.timeout ?? outer?.timeout;
  if (resolver === undefined && timeout === undefined) return undefined;
  return { ...(resolver ? { resolver } : {}), ...(timeout !== undefined ? { timeout } : {}) };
}

/** The resolver a level's merged settings give, if it has one. */
export function settleResolver(l: ResolverLevel | undefined): ResolverConfig | undefined {
  return l?.resolver && { ...l.resolver, timeout: l.timeout ?? RESOLVER_TIMEOUT_MS };
}

/** Once the http or stream block is read: every upstream with a `resolve` server has a
 * resolver. */
export function checkResolvers(block: UpstreamsBlock, c: Checker): void {
  for (const u of block.upstreams) {
    const named = u.servers.find((s) => s.resolve);
    if (named && !upstreamResolver(u, block)) c.error(named.origin, `no resolver defined to resolve "${named.server}" in upstream "${u.name}"`);
  }
}

/** The resolvers' zones of the stream block, its servers and upstreams, in order of
 * appearance, each once. (The stream block by its shape: stream/config.ts imports this
 * module, which imports nothing of it.) */
export function streamResolverZones(stream: UpstreamsBlock & { readonly servers: ReadonlyArray<{ readonly resolver?: ResolverLevel }> }): string[] {
  const zones: string[] = [];
  for (const l of [stream.resolver, ...stream.servers.map((s) => s.resolver), ...stream.upstreams.map((u) => u.resolver)]) {
    const z = l?.resolver?.statusZone;
    if (z && !zones.includes(z)) zones.push(z);
  }
  return zones;
}

/** The resolvers' zones, in order of appearance, each once. */
export function resolverZones(http: HttpLevel): string[] {
  const zones: string[] = [];
  const add = (l: ResolverLevel | undefined) => {
    const z = l?.resolver?.statusZone;
    if (z && !zones.includes(z)) zones.push(z);
  };
  add(http.resolver);
  const locations = (list: readonly { resolver?: ResolverLevel; locations: readonly unknown[] }[]) => {
    for (const l of list) {
      add(l.resolver);
      locations(l.locations as typeof list);
    }
  };
  for (const s of http.servers) {
    add(s.resolver);
    locations(s.locations);
  }
  for (const u of http.upstreams) add(u.resolver);
  return zones;
}

/** A host name as an RFC 1123 name: labels of letters, digits and hyphens. */
const HOST = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

/**
 * The server of `server <name>[:port] resolve` (port 80 by default, as nginx), or of
 * `server <name> service=<service> resolve`, whose ports come from the SRV records and
 * which takes none. `address` is the name and port: the peers are keyed by theirs.
 */
export function parseResolvedServer(server: string, params: readonly string[]): Checked<UpstreamAddress> {
  const colon = server.lastIndexOf(':');
  const host = colon < 0 ? server : server.slice(0, colon);
  const port = colon < 0 ? undefined : server.slice(colon + 1);
  if (!HOST.test(host)) return { error: `invalid host name "${host}" in upstream "${server}"` };
  const service = params.some((p) => p.startsWith('service='));
  if (service && port !== undefined) return { error: `the server "${server}" has a port and a "service": the SRV records give the ports` };
  const n = port === undefined ? 80 : /^\d{1,5}$/.test(port) ? Number(port) : 0;
  if (n < 1 || n > 65535) return { error: `invalid port in upstream "${server}"` };
  return { value: { host: host.toLowerCase(), port: service ? 0 : n, address: service ? host.toLowerCase() : `${host.toLowerCase()}:${n}` } };
}

// The resolver's part of the configuration's blocks and model, declared here as the
// limits module declares its own: the loader's files import no module.
declare module '../config/levels.js' {
  interface InheritableLevel {
    /** `resolver` and `resolver_timeout` written in this block. */
    resolver?: ResolverLevel;
  }
  interface UpstreamLevel {
    /** `resolver` and `resolver_timeout` written in the upstream. */
    resolver?: ResolverLevel;
  }
}
declare module '../stream/config.js' {
  interface StreamLevel {
    /** `resolver` and `resolver_timeout` of the stream block: its upstreams' default. */
    resolver?: ResolverLevel;
  }
  interface StreamServerLevel {
    /** Checked and its zone shown; a stream server resolves nothing itself. */
    resolver?: ResolverLevel;
  }
  interface StreamBlockConfig {
    /** Every stream `resolver` with a `status_zone`: /status/resolvers shows them with
     * the http block's (one `resolvers` family). */
    readonly resolverZones?: readonly string[];
  }
}
declare module '../config/model.js' {
  interface UpstreamBlockConfig {
    /** The resolver of the upstream's `resolve` servers: its own, else its block's. */
    readonly resolver?: ResolverConfig;
  }
  interface ProxyConfig {
    /** With variables in `proxy_pass`'s host: the location's resolver, which looks up a
     * host no upstream is named after (without one, such a request gets 502). */
    readonly resolver?: ResolverConfig;
  }
  interface HttpBlockConfig {
    /** Every `resolver` with a `status_zone`: the zones /status/resolvers shows. */
    readonly resolverZones?: readonly string[];
  }
}
