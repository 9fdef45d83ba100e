// The stream module's configuration (nginx's ngx_stream_*), declared beside its code: the
// `stream {}` block, its `upstream` and `server` blocks and their directives (composed
// into the loader's table by config/directives.ts), what each block says, and what a
// server ends up with once the stream block's settings are merged into it.
//
//   stream {
//     upstream <name> { zone ...; server <addr> [weight= max_conns= max_fails=
//                       fail_timeout= backup down slow_start=]; hash|least_conn|random|
//                       least_time connect|first_byte|last_byte [inflight];
//                       server <name>[:port] resolve; server <name> service=<svc> resolve;
//                       resolver; resolver_timeout; }
//     server { listen <addr>:<port> [ssl] [proxy_protocol]; status_zone <zone>;
//              proxy_pass <upstream>|<addr>; proxy_connect_timeout; proxy_timeout;
//              proxy_next_upstream on|off; proxy_next_upstream_tries; proxy_half_close on|off; allow; deny;
//              ssl_certificate; ssl_certificate_key; ssl_handshake_timeout; proxy_ssl;
//              proxy_ssl_* (proxy/config.ts); ssl_verify_client and the other ssl_* (ssl/config.ts);
//              upstream_probe; upstream_probe_timeout; resolver; resolver_timeout; }
//   }
//
// The settings but `listen`, `status_zone` and `proxy_pass` may be written in `stream`
// too, and a server inherits them (an `allow`/`deny` list in a server replaces the outer one).
// `resolver`, `upstream_probe` and `upstream_probe_timeout` are declared with their code
// (resolver/config.ts, probes/config.ts), which adds their fields to these levels.
import { streamLogs } from '../log/config.js';
import type { DirectiveSpec } from '../config/spec.js';
import { confFile } from '../config/files.js';
import { milliseconds } from '../config/numbers.js';
import { checkUpstreamBlock, newUpstreamBlock } from '../upstream/check.js';
import type { AnyLevel, Checker, Context, UpstreamLevel } from '../config/levels.js';
import type { AccessRule, Origin, UpstreamBlockConfig } from '../config/model.js';
import { checkAccessAddress, checkVariables, defaultPeer, implicitZoneName, isZoneName, listenAddress, parseListenAddress, parseSize, parseUpstreamAddress } from '../config/values.js';
import { minZoneSize } from '../limits/config.js';
import { histogramField } from '../histograms/config.js';
import { streamProbes, type StreamProbeConfig } from '../probes/config.js';
import { checkResolvers, streamResolverZones, upstreamResolver } from '../resolver/config.js';
import { knownStreamVariable } from '../config/variables.js';
import { nextUpstreamTimeout, proxyClientCertificate, settleProxySsl, type ProxySslLevel } from '../proxy/config.js';
import { settleTls, type ServerTls } from '../ssl/config.js';
import type { ProxySsl } from '../config/model.js';
import type { ProxyClientCertificate } from '../ssl/proxy.js';

export interface StreamListen {
  readonly host: string;
  readonly port: number;
  /** TLS is terminated here: the server needs `ssl_certificate` and its key. */
  readonly ssl: boolean;
  /** The client's connection begins with a PROXY protocol header (v1 or v2). */
  readonly proxyProtocol: boolean;
  readonly origin: Origin;
}

/** What `stream` and its servers may both say (the proxy_ssl_* settings are declared
 * with http's, proxy/config.ts; the ssl_* ones in ssl/config.ts). */
interface StreamCommon extends ProxySslLevel {
  readonly seen: Set<string>;
  /** Only the rules written in this block: a block with any replaces the outer list. */
  readonly access: AccessRule[];
  proxyConnectTimeout?: number;
  proxyTimeout?: number;
  proxyNextUpstream?: boolean;
  proxyNextUpstreamTries?: number;
  proxyNextUpstreamTimeout?: number;
  /** `proxy_protocol on`: a PROXY protocol v1 header to the peer first. */
  proxyProtocol?: boolean;
  /** `ssl_preread on`, `preread_timeout`, `preread_buffer_size`. */
  sslPreread?: boolean;
  prereadTimeout?: number;
  prereadBufferSize?: number;
  proxySsl?: boolean;
  proxyHalfClose?: boolean;
  sslCertificate?: string;
  sslCertificateKey?: string;
  sslHandshakeTimeout?: number;
  /** `limit_conn` written here: a block with any replaces the outer list (nginx). */
  readonly limitConns: Array<{ readonly zone: string; readonly limit: number; readonly origin: Origin }>;
  limitConnDryRun?: boolean;
}

/** `limit_conn_zone <key> zone=<name>:<size>` of the stream block. */
export interface StreamLimitZone {
  readonly name: string;
  readonly key: string;
  /** Bytes. */
  readonly size: number;
  readonly origin: Origin;
}

export interface StreamLevel extends StreamCommon {
  readonly kind: 'stream';
  readonly origin: Origin;
  readonly servers: StreamServerLevel[];
  readonly upstreams: UpstreamLevel[];
  readonly limitZones: StreamLimitZone[];
}

export interface StreamServerLevel extends StreamCommon {
  readonly kind: 'stream_server';
  readonly origin: Origin;
  readonly listens: StreamListen[];
  statusZone?: string;
  proxyPass?: { readonly target: string; readonly origin: Origin };
  /** `return <value>`: what the server answers with (the last of proxy_pass and return
   * written is the server's handler, as in nginx). */
  return?: { readonly value: string; readonly origin: Origin };
  /** A `listen` or a `proxy_pass` was written, even one refused: its error is enough. */
  listenWritten?: boolean;
  proxyPassWritten?: boolean;
  returnWritten?: boolean;
}

// The loader's levels and model know the stream block only as this module tells them:
// its block kinds join the loader's contexts, and its fields join the main level and the
// whole configuration, by augmenting their interfaces (see limits/config.ts).
declare module '../config/levels.js' {
  interface LevelKinds {
    stream: StreamLevel;
    stream_server: StreamServerLevel;
  }
  interface MainLevel {
    stream?: StreamLevel;
  }
}
declare module '../config/model.js' {
  interface ServerConfig {
    /** The `stream {}` block: TCP and TLS proxying (src/server/stream/). */
    readonly stream?: StreamBlockConfig;
  }
}

/** A stream server as the worker runs it. */
export interface StreamServerConfig {
  readonly listens: readonly StreamListen[];
  readonly statusZone?: string;
  /** Empty: everything allowed. */
  readonly access: readonly AccessRule[];
  /** Present when a listen has `ssl`. */
  readonly ssl?: ServerTls;
  readonly proxy: StreamProxyConfig;
  /** `limit_conn` in force (nginx's preaccess phase, before the access rules): each
   * refusal ends the session with 503. Absent: none. */
  readonly limits?: { readonly conns: ReadonlyArray<{ readonly zone: string; readonly key: string; readonly limit: number }>; readonly dryRun: boolean };
  /** `return <value>`: the value (with variables) sent before the connection closes;
   * the server proxies nothing. */
  readonly return?: string;
  /** `ssl_preread on`: the ClientHello is read (not consumed) before the proxy, for the
   * $ssl_preread_* variables; its time and buffer limits (ms, bytes). */
  readonly preread?: { readonly timeout: number; readonly bufferSize: number };
  readonly origin: Origin;
}

export interface StreamProxyConfig {
  /** The upstream's name: a configured one, or the implicit one of an address (`<ip>:<port>`). */
  readonly upstream: string;
  /** `proxy_pass` with variables: its value, evaluated for each session, names an upstream
   * or an address with a port (`upstream` is then empty). */
  readonly target?: string;
  /** Milliseconds: nginx's defaults 60 s and 10 min. */
  readonly connectTimeout: number;
  readonly timeout: number;
  /** `proxy_next_upstream` (default on): a peer that cannot be connected to is followed by another. */
  readonly nextUpstream: boolean;
  /** 0: no limit. */
  readonly nextUpstreamTries: number;
  /** Milliseconds since the first attempt past which no other peer is tried; 0: no limit. */
  readonly nextUpstreamTimeout: number;
  /** `proxy_protocol on`: the peer is sent a PROXY protocol v1 header with the client's
   * addresses first. */
  readonly proxyProtocol: boolean;
  /** `proxy_ssl on`: TLS to the peers (no verification, sessions reused, as nginx's defaults). */
  readonly ssl: boolean;
  /** With `proxy_ssl on`: the proxy_ssl_* settings, and the certificate presented to the peers. */
  readonly peerTls?: { readonly ssl: ProxySsl; readonly client: ProxyClientCertificate };
  /** `proxy_half_close` (default off, as nginx): on, a side's end (FIN) is passed on and
   * the session lasts until both sides have ended; off, the first side to end ends the
   * session once what it sent is passed on. */
  readonly halfClose: boolean;
}

export interface StreamBlockConfig {
  readonly servers: readonly StreamServerConfig[];
  /** `upstream` blocks, then the implicit upstreams of `proxy_pass <address>`. */
  readonly upstreams: readonly UpstreamBlockConfig[];
  /** `limit_conn_zone`s, in order. */
  readonly limitZones: readonly StreamLimitZone[];
}

/** nginx's stream defaults. */
const CONNECT_TIMEOUT_MS = 60_000;
const PROXY_TIMEOUT_MS = 600_000;
const SSL_HANDSHAKE_TIMEOUT_MS = 60_000;
const PREREAD_TIMEOUT_MS = 30_000;
const PREREAD_BUFFER_SIZE = 16 * 1024;
const RESPONSE_TIME_FACTOR = 90;
/** What nginx takes as a count or a time (NGX_MAX_INT_T_VALUE on 32 bits). */
const MAX = 2147483647;

/** Types an entry by its contexts, as config/directives.ts does. */
const define = <const K extends Context>(spec: DirectiveSpec<Extract<AnyLevel, { kind: K }>> & { contexts: readonly K[] }) =>
  spec as unknown as DirectiveSpec;
const both = ['stream', 'stream_server'] as const;


function timeDirective(set: (level: StreamCommon, ms: number) => void) {
  return define({
    contexts: both,
    args: [1, 1],
    apply(d, level, c) {
      const ms = milliseconds(d.args[0]);
      if (ms === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
      else set(level, ms);
    },
  });
}

function flagDirective(set: (level: StreamCommon, on: boolean) => void) {
  return define({
    contexts: both,
    args: [1, 1],
    apply(d, level, c) {
      const arg = d.args[0];
      if (arg !== 'on' && arg !== 'off') c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "on" or "off"`);
      else set(level, arg === 'on');
    },
  });
}

function access(allow: boolean) {
  return define({
    contexts: both,
    args: [1, 1],
    multiple: true,
    apply(d, level, c) {
      const error = checkAccessAddress(d.args[0]);
      if (error) c.error(d.origin, `${error} in "${d.name}" directive`);
      else level.access.push({ allow, address: d.args[0], origin: d.origin });
    },
  });
}

/** Upstream directives of the http module only: nginx's stream upstream has none of them. */
const HTTP_ONLY = new Set(['ip_hash', 'keepalive', 'keepalive_requests', 'keepalive_time', 'keepalive_timeout', 'queue', 'sticky', 'sticky_secret', 'sticky_strict']);

export const streamDirectives: Readonly<Record<string, DirectiveSpec>> = {
  stream: define({
    contexts: ['main'],
    args: [0, 0],
    block: true,
    apply(d, main, c) {
      const stream: StreamLevel = { kind: 'stream', seen: new Set(), origin: d.origin, access: [], servers: [], upstreams: [], limitZones: [], limitConns: [] };
      main.stream = stream;
      c.walk(d.block ?? [], stream);
      checkResolvers(stream, c);
    },
  }),

  include: define({
    contexts: both,
    args: [1, 1],
    multiple: true,
    apply: (d, level, c) => c.walk(d.included ?? [], level),
  }),

  upstream: define({
    contexts: ['stream'],
    args: [1, 1],
    block: true,
    multiple: true,
    apply(d, stream, c) {
      const { upstream, duplicate } = newUpstreamBlock(d, stream.upstreams, c, 'stream');
      const block = (d.block ?? []).filter((x) => {
        if (!HTTP_ONLY.has(x.name)) return true;
        c.error(x.origin, `"${x.name}" directive is not allowed here`);
        return false;
      });
      c.walk(block, upstream);
      // `sid` is the http module's sticky sessions: a stream peer has none.
      for (const p of upstream.servers) if (p.sid !== undefined) c.error(p.origin, `invalid parameter "sid=${p.sid}"`);
      if (duplicate) return;
      checkUpstreamBlock(upstream, stream.upstreams, c);
      stream.upstreams.push(upstream);
    },
  }),

  server: define({
    contexts: ['stream'],
    args: [0, 0],
    block: true,
    multiple: true,
    apply(d, stream, c) {
      const server: StreamServerLevel = { kind: 'stream_server', seen: new Set(), origin: d.origin, access: [], listens: [], limitConns: [] };
      stream.servers.push(server);
      c.walk(d.block ?? [], server);
      if (!server.listenWritten) c.error(d.origin, 'no "listen" directive in server');
      if (!server.proxyPassWritten && !server.returnWritten) c.error(d.origin, 'no handler for server: "proxy_pass" or "return" is missing');
    },
  }),

  listen: define({
    contexts: ['stream_server'],
    args: [1, 3],
    multiple: true,
    apply(d, server, c) {
      const [address, ...params] = d.args;
      server.listenWritten = true;
      const parsed = parseListenAddress(address);
      if (parsed.error !== undefined) return c.error(d.origin, parsed.error);
      const bad = params.find((p) => p !== 'ssl' && p !== 'proxy_protocol');
      if (bad !== undefined) return c.error(d.origin, `invalid parameter "${bad}"`);
      const ssl = params.includes('ssl');
      const proxyProtocol = params.includes('proxy_protocol');
      server.listens.push({ ...parsed.value, ssl, proxyProtocol, origin: d.origin });
    },
  }),

  status_zone: define({
    contexts: ['stream_server'],
    args: [1, 1],
    apply(d, server, c) {
      const [name] = d.args;
      if (!isZoneName(name)) c.error(d.origin, `invalid zone name "${name}" in "status_zone" directive: letters, digits, "_", "-" and "." only`);
      else server.statusZone = name;
    },
  }),

  proxy_pass: define({
    contexts: ['stream_server'],
    args: [1, 1],
    apply(d, server, c) {
      const [target] = d.args;
      server.proxyPassWritten = true;
      if (/^[a-z]+:\/\//i.test(target)) return c.error(d.origin, `invalid URL prefix in "${target}": a stream "proxy_pass" takes an upstream or an address`);
      const unknown = target.includes('$') ? checkVariables(target, knownStreamVariable) : undefined;
      if (unknown) return c.error(d.origin, unknown);
      server.proxyPass = { target, origin: d.origin };
      server.return = undefined;
    },
  }),

  // ngx_stream_return_module: the value is sent and the connection closed.
  return: define({
    contexts: ['stream_server'],
    args: [1, 1],
    apply(d, server, c) {
      const [value] = d.args;
      server.returnWritten = true;
      const unknown = checkVariables(value, knownStreamVariable);
      if (unknown) return c.error(d.origin, unknown);
      server.return = { value, origin: d.origin };
      server.proxyPass = undefined;
    },
  }),

  proxy_connect_timeout: timeDirective((l, ms) => (l.proxyConnectTimeout = ms)),
  proxy_timeout: timeDirective((l, ms) => (l.proxyTimeout = ms)),
  ssl_handshake_timeout: timeDirective((l, ms) => (l.sslHandshakeTimeout = ms)),
  proxy_next_upstream: flagDirective((l, on) => (l.proxyNextUpstream = on)),
  proxy_ssl: flagDirective((l, on) => (l.proxySsl = on)),
  proxy_protocol: flagDirective((l, on) => (l.proxyProtocol = on)),
  proxy_next_upstream_timeout: define({
    contexts: both,
    args: [1, 1],
    apply(d, level, c) {
      const ms = nextUpstreamTimeout(d, c);
      if (ms !== undefined) level.proxyNextUpstreamTimeout = ms;
    },
  }),
  // ngx_stream_ssl_preread_module, and the preread phase's limits.
  ssl_preread: flagDirective((l, on) => (l.sslPreread = on)),
  preread_timeout: timeDirective((l, ms) => (l.prereadTimeout = ms)),
  preread_buffer_size: define({
    contexts: both,
    args: [1, 1],
    apply(d, level, c) {
      const n = parseSize(d.args[0]);
      if (n === undefined || n === 0) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
      else level.prereadBufferSize = n;
    },
  }),
  proxy_half_close: flagDirective((l, on) => (l.proxyHalfClose = on)),
  limit_conn_dry_run: flagDirective((l, on) => (l.limitConnDryRun = on)),

  // nginx's stream limit_conn: the key is the connection's ($binary_remote_addr,
  // $remote_addr, $server_addr, $server_port, $remote_port).
  limit_conn_zone: define({
    contexts: ['stream'],
    args: [2, 2],
    multiple: true,
    apply(d, stream, c) {
      const [key, param] = d.args;
      if (!param.startsWith('zone=')) return c.error(d.origin, `invalid parameter "${param}"`);
      const value = param.slice('zone='.length);
      const colon = value.lastIndexOf(':');
      const name = colon < 0 ? value : value.slice(0, colon);
      const size = colon < 0 ? undefined : parseSize(value.slice(colon + 1));
      if (!isZoneName(name)) return c.error(d.origin, `invalid zone name "${name}" in "limit_conn_zone" directive: letters, digits, "_", "-" and "." only`);
      if (size === undefined) return c.error(d.origin, `invalid zone size "${value}"`);
      if (size < minZoneSize()) return c.error(d.origin, `zone "${name}" is too small: at least ${minZoneSize() / 1024}k (8 pages)`);
      if (size > 1024 * 1024 * 1024) return c.error(d.origin, `zone "${name}" is too large: at most 1024m`);
      const error = checkVariables(key, (v) => Object.hasOwn(CONNECTION_VARIABLES, v));
      if (error) return c.error(d.origin, error);
      const other = stream.limitZones.find((z) => z.name === name);
      if (other) return c.error(d.origin, `shared memory zone "${name}" is already declared in ${other.origin.file}:${other.origin.line}`);
      stream.limitZones.push({ name, key, size, origin: d.origin });
    },
  }),

  limit_conn: define({
    contexts: both,
    args: [2, 2],
    multiple: true,
    apply(d, level, c) {
      const [zone, n] = d.args;
      const limit = /^\d{1,5}$/.test(n) ? Number(n) : 0;
      if (limit < 1 || limit > 65535) return c.error(d.origin, `invalid number of connections "${n}", it must be from 1 to 65535`);
      if (level.limitConns.some((u) => u.zone === zone)) return c.error(d.origin, `"limit_conn ${zone}" is duplicate`);
      level.limitConns.push({ zone, limit, origin: d.origin });
    },
  }),

  proxy_next_upstream_tries: define({
    contexts: both,
    args: [1, 1],
    apply(d, level, c) {
      const arg = d.args[0];
      const n = /^\d{1,10}$/.test(arg) ? Number(arg) : -1;
      if (n < 0 || n > MAX) c.error(d.origin, `invalid value "${arg}" in "proxy_next_upstream_tries" directive`);
      else level.proxyNextUpstreamTries = n;
    },
  }),

  allow: access(true),
  deny: access(false),

  ssl_certificate: define({
    contexts: both,
    args: [1, 1],
    apply(d, level, c) {
      level.sslCertificate = confFile(d, c);
    },
  }),
  ssl_certificate_key: define({
    contexts: both,
    args: [1, 1],
    apply(d, level, c) {
      level.sslCertificateKey = confFile(d, c);
    },
  }),
};

/** The variables a stream key may use: the connection's (a stream session has no request). */
export const CONNECTION_VARIABLES: Readonly<Record<string, true>> = { remote_addr: true, binary_remote_addr: true, remote_port: true, server_addr: true, server_port: true };

/** What a stream server inherits of the stream block's proxy_ssl_* settings, one by one. */
const PROXY_SSL_FIELDS = [
  'proxySslServerName',
  'proxySslName',
  'proxySslVerify',
  'proxySslTrustedCertificate',
  'proxySslSessionReuse',
  'proxySslCertificate',
  'proxySslCertificateKey',
  'proxySslPasswordFile',
] as const satisfies ReadonlyArray<keyof ProxySslLevel>;

/** Whether `127.0.0.1:8443`, `[::1]:8443` name a port. */
const hasPort = (target: string) => (target.startsWith('[') ? /\]:\d+$/ : /:\d+$/).test(target);

function upstreamConfig(u: UpstreamLevel, stream: StreamLevel, probes: readonly StreamProbeConfig[] | undefined): UpstreamBlockConfig {
  const zone = u.zone && { name: u.zone.name, ...(u.zone.size !== undefined ? { size: u.zone.size } : {}) };
  const resolver = upstreamResolver(u, stream);
  return {
    name: u.name,
    ...(zone ? { zone } : {}),
    ...(resolver ? { resolver } : {}),
    ...(probes ? { probes } : {}),
    servers: u.servers,
    method: u.method ?? { kind: 'round_robin' },
    keepalive: 0,
    responseTimeFactor: u.responseTimeFactor ?? RESPONSE_TIME_FACTOR,
    ...(u.state !== undefined ? { state: u.state } : {}),
    implicit: false,
    origin: u.origin,
  };
}

/**
 * The stream block merged into its servers, the upstreams `proxy_pass` names (a
 * configured one, else the implicit one of an address, as nginx makes), and the checks
 * that need the whole configuration: a listen address is one socket (no two stream
 * servers, no http server on it), and an upstream's zone is no HTTP upstream's (nginx's
 * http and stream upstream zones are of different modules). `httpListens` and
 * `httpZones` are the http block's.
 */
export function resolveStream(
  stream: StreamLevel,
  c: Checker,
  httpListens: ReadonlyArray<{ host: string; port: number }>,
  httpZones: ReadonlyMap<string, string>,
): StreamBlockConfig {
  const implicit = new Map<string, UpstreamBlockConfig>();
  // One namespace for every shared zone: a limit zone takes no upstream's or http zone's name.
  const upstreamZones = new Set(stream.upstreams.map((u) => u.zone?.name ?? u.name));
  for (const z of stream.limitZones) {
    const other = httpZones.get(z.name);
    if (other !== undefined) c.error(z.origin, `shared memory zone "${z.name}" is already used by http ${other}`);
    else if (upstreamZones.has(z.name)) c.error(z.origin, `shared memory zone "${z.name}" is already used by a stream upstream`);
  }
  const reported = new Set<object>();
  /** The probes of the servers that proxy to each upstream, by its name. */
  const probes = new Map<string, StreamProbeConfig[]>();
  for (const u of stream.upstreams) {
    const zone = u.zone?.name ?? u.name;
    const other = httpZones.get(zone);
    if (other !== undefined) c.error(u.zone?.origin ?? u.origin, `shared memory zone "${zone}" is already used by http ${other}`);
  }
  const seen = new Map<string, Origin>();
  for (const l of httpListens) seen.set(listenAddress(l), { file: '', line: 0 });
  const servers: StreamServerConfig[] = [];
  for (const s of stream.servers) {
    for (const l of s.listens) {
      const key = listenAddress(l);
      if (seen.has(key)) c.error(l.origin, `a duplicate listen ${key}`);
      else seen.set(key, l.origin);
    }
    const sslListen = s.listens.find((l) => l.ssl);
    const certificate = s.sslCertificate ?? stream.sslCertificate;
    const key = s.sslCertificateKey ?? stream.sslCertificateKey;
    if (sslListen && certificate === undefined) c.error(sslListen.origin, 'no "ssl_certificate" is defined for the "listen ... ssl" directive');
    else if (sslListen && key === undefined) c.error(sslListen.origin, `no "ssl_certificate_key" is defined for certificate "${certificate}"`);
    // With variables, the upstream is the value's, for each session.
    const variable = s.proxyPass?.target.includes('$') ? s.proxyPass.target : undefined;
    const upstream = s.return || variable ? '' : s.proxyPass && upstreamOf(s.proxyPass, stream.upstreams, implicit, c);
    const uses = s.limitConns.length ? s.limitConns : stream.limitConns;
    const conns = uses.flatMap((u) => {
      const zone = stream.limitZones.find((z) => z.name === u.zone);
      if (!zone && !reported.has(u)) {
        reported.add(u);
        c.error(u.origin, `unknown limit_conn_zone "${u.zone}"`);
      }
      return zone ? [{ zone: u.zone, key: zone.key, limit: u.limit }] : [];
    });
    if (upstream === undefined) continue;
    const merged: ProxySslLevel = {};
    for (const k of PROXY_SSL_FIELDS) (merged as Record<string, unknown>)[k] = s[k] ?? stream[k];
    const proxySsl = s.proxySsl ?? stream.proxySsl ?? false;
    const peerSsl = proxySsl ? settleProxySsl(merged, upstream, (v, m) => c.error(v.origin, m)) : undefined;
    const client = proxyClientCertificate(merged, (at, m) => c.error(at, m));
    const proxyConfig = {
      upstream,
      connectTimeout: s.proxyConnectTimeout ?? stream.proxyConnectTimeout ?? CONNECT_TIMEOUT_MS,
      timeout: s.proxyTimeout ?? stream.proxyTimeout ?? PROXY_TIMEOUT_MS,
      nextUpstream: s.proxyNextUpstream ?? stream.proxyNextUpstream ?? true,
      nextUpstreamTries: s.proxyNextUpstreamTries ?? stream.proxyNextUpstreamTries ?? 0,
      nextUpstreamTimeout: s.proxyNextUpstreamTimeout ?? stream.proxyNextUpstreamTimeout ?? 0,
      proxyProtocol: s.proxyProtocol ?? stream.proxyProtocol ?? false,
      ...(variable ? { target: variable } : {}),
      ssl: proxySsl,
      ...(peerSsl ? { peerTls: { ssl: peerSsl, client } } : {}),
      halfClose: s.proxyHalfClose ?? stream.proxyHalfClose ?? false,
    };
    if (upstream !== '') {
      const known = probes.get(upstream) ?? [];
      probes.set(upstream, [...known, ...streamProbes(s, stream, proxyConfig, known, (origin, message) => c.error(origin, message))]);
    }
    const preread = s.sslPreread ?? stream.sslPreread ?? false;
    servers.push({
      listens: s.listens,
      ...(s.statusZone !== undefined ? { statusZone: s.statusZone } : {}),
      access: s.access.length ? s.access : stream.access,
      ...(sslListen && certificate !== undefined && key !== undefined
        ? {
            ssl: settleTls(s.tls, stream.tls, { certificate, key, handshakeTimeout: s.sslHandshakeTimeout ?? stream.sslHandshakeTimeout ?? SSL_HANDSHAKE_TIMEOUT_MS }, (m) =>
              c.error(s.origin, m), c.disk,
            ),
          }
        : {}),
      proxy: proxyConfig,
      ...(s.return ? { return: s.return.value } : {}),
      ...(preread
        ? { preread: { timeout: s.prereadTimeout ?? stream.prereadTimeout ?? PREREAD_TIMEOUT_MS, bufferSize: s.prereadBufferSize ?? stream.prereadBufferSize ?? PREREAD_BUFFER_SIZE } }
        : {}),
      ...(conns.length ? { limits: { conns, dryRun: s.limitConnDryRun ?? stream.limitConnDryRun ?? false } } : {}),
      ...streamLogs(stream, s),
      origin: s.origin,
    });
  }
  // Peers' histograms: an upstream's own status_zone_histogram, else the stream block's.
  const outer = stream.histogram;
  const probed = (name: string) => (probes.get(name)?.length ? probes.get(name) : undefined);
  const zones = streamResolverZones(stream);
  return {
    servers,
    upstreams: [
      ...stream.upstreams.map((u) => ({ ...upstreamConfig(u, stream, probed(u.name)), ...histogramField(u.histogram ?? outer) })),
      ...[...implicit.values()].map((u) => ({ ...(probed(u.name) ? { ...u, probes: probed(u.name) } : u), ...histogramField(outer) })),
    ],
    limitZones: stream.limitZones,
    ...(zones.length ? { resolverZones: zones } : {}),
  };
}

function upstreamOf(p: { target: string; origin: Origin }, upstreams: readonly UpstreamLevel[], implicit: Map<string, UpstreamBlockConfig>, c: Checker): string | undefined {
  const named = upstreams.find((u) => u.name.toLowerCase() === p.target.toLowerCase());
  if (named) return named.name;
  // nginx's stream proxy_pass needs a port with an address.
  if (!hasPort(p.target) && !p.target.startsWith('unix:')) {
    c.error(p.origin, /^[A-Za-z0-9_.-]+$/.test(p.target) && !/^\d+(\.\d+){3}$/.test(p.target) ? `no upstream "${p.target}" in stream` : `no port in upstream "${p.target}"`);
    return undefined;
  }
  const address = parseUpstreamAddress(p.target);
  if (address.error !== undefined) {
    c.error(p.origin, address.resolver ? `host not found in upstream "${p.target}"` : address.error);
    return undefined;
  }
  const name = address.value.address;
  if (!implicit.has(name))
    implicit.set(name, {
      name,
      // Its own zone, apart from an http block's implicit upstream of the same address.
      zone: { name: `stream-${implicitZoneName(name)}` },
      servers: [defaultPeer(p.target, address.value, p.origin)],
      method: { kind: 'round_robin' },
      keepalive: 0,
      responseTimeFactor: RESPONSE_TIME_FACTOR,
      implicit: true,
      origin: p.origin,
    });
  return name;
}
