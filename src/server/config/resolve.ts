// From what each block says to what each location means: nginx's merge of the inherited
// settings down http -> server -> location -> nested location, into the model; and the
// upstreams `proxy_pass` names, found once the whole http block is read.
import type { At, Checker, HttpLevel, IfLevel, InheritableLevel, LocationLevel, ProxyPass, ServerLevel, UpstreamLevel } from './levels.js';
import type {
  AccessRule,
  HttpBlockConfig,
  IfConfig,
  Inherited,
  LocationConfig,
  NextUpstreamCondition,
  ProxyConfig,
  ProxySsl,
  RewriteSettings,
  RewriteStep,
  UpstreamBlockConfig,
  VirtualServerConfig,
} from './model.js';
import { defaultPeer, implicitZoneName, parseUpstreamAddress } from './values.js';
import { cacheZones, mergeCache, resolveCache, TOP_CACHE, type CacheZone, type MergedCache } from '../cache/config.js';
import { mergeHeaders, type AddHeader } from '../headers/config.js';
import { gzipInUse, mergeGzip, TOP_GZIP, type GzipConfig } from '../gzip/config.js';
import { defaultContent, mergeContent, TOP_CONTENT, type ContentConfig } from '../http/content-config.js';
import { histogramField } from '../histograms/config.js';
import type { HistogramSetting } from '../../metrics/catalog.js';
import { mergeResolver, resolverZones, settleResolver, upstreamResolver, type ResolverLevel } from '../resolver/config.js';
import { stickyOf } from '../upstream/config.js';
import type { ProbeConfig } from '../probes/config.js';
import { mergeCore, TOP_CORE, type CoreSettings } from '../http/core/config.js';
import { mergeProxyOptions, proxyOptions, settleProxySsl, type MergedProxyOptions } from '../proxy/config.js';
import { limitZones, mergeLimits, resolveLimits, TOP_LIMITS, type LimitZone, type MergedLimits } from '../limits/config.js';
import { mergeLogs, settleLogs, TOP_LOGS, type MergedLogs } from '../log/config.js';
import { settleTls, TLS_DEFAULTS } from '../ssl/config.js';
import { trustedFiles } from '../ssl/verify.js';
import { mergeRealip, settleRealip, type RealipLevel } from '../realip/config.js';

/** nginx's default `ssl_handshake_timeout`. */
const SSL_HANDSHAKE_TIMEOUT_MS = 60_000;

/** nginx's defaults of the proxy module. */
const PROXY_TIMEOUT_MS = 60_000;
const NEXT_UPSTREAM: readonly NextUpstreamCondition[] = ['error', 'timeout'];
/** The headers nginx sets on every proxied request unless `proxy_set_header` says
 * otherwise, but its `Connection: close`: zonal keeps upstream connections by default and
 * writes Connection itself, so only an operator's own value (one saying `close`) counts. */
const PROXY_HEADERS: ProxyConfig['setHeaders'] = [{ name: 'Host', value: '$proxy_host' }];
/** Angie's default smoothing of header_time and response_time. */
const RESPONSE_TIME_FACTOR = 90;
/**
 * Idle connections a worker keeps to each peer when the upstream says nothing. nginx
 * closes every upstream connection without `keepalive`; HAProxy (`http-reuse safe`) and
 * Envoy reuse them by default, and so does zonal: in Node a new connection costs a worker
 * far more than the request it carries. `keepalive off` restores nginx's behaviour.
 */
export const DEFAULT_KEEPALIVE = 64;

type Header = ProxyConfig['setHeaders'][number];

/** The headers the runtime applies: nginx's defaults, each replaced in place by a configured
 * header of its name (names are caseless), then the other configured ones in order. */
function effectiveHeaders(configured: readonly Header[]): Header[] {
  const used = new Set<Header>();
  const out = PROXY_HEADERS.map((d) => {
    const own = configured.find((h) => !used.has(h) && h.name.toLowerCase() === d.name.toLowerCase());
    if (!own) return d;
    used.add(own);
    return own;
  });
  return [...out, ...configured.filter((h) => !used.has(h))];
}

/** The inherited settings at one level, realm and user file still apart: nginx merges
 * them separately, so a location may add the file to a realm set outside. */
interface Merged {
  readonly root?: string;
  readonly access: readonly AccessRule[];
  readonly authBasic?: At<string | false>;
  readonly authUserFile?: string;
  readonly satisfy?: 'all' | 'any';
  readonly apiOrigins: readonly string[];
  /** The proxy settings, defaults already in (headers: the configured ones only). */
  readonly proxy: Omit<ProxyConfig, 'upstream' | 'uri' | 'ssl' | 'cache' | 'addHeaders' | 'options'>;
  readonly proxyOptions: MergedProxyOptions;
  /** `proxy_ssl_*` as inherited; settled where a `proxy_pass https://` uses them. */
  readonly ssl: SslLevel;
  readonly cache: MergedCache;
  readonly addHeaders: readonly AddHeader[];
  readonly limits: MergedLimits;
  readonly logs: MergedLogs;
  readonly core: CoreSettings;
  /** index, alias, try_files, error_page, internal, server_tokens, limit_rate. */
  readonly content: ContentConfig;
  /** `status_zone_histogram`; undefined: the default bounds. */
  readonly histogram?: HistogramSetting;
  readonly realip?: RealipLevel;
  readonly gzip: GzipConfig;
  readonly rewrite: RewriteSettings;
  readonly resolver?: ResolverLevel;
}

type SslLevel = Pick<InheritableLevel, 'proxySslServerName' | 'proxySslName' | 'proxySslVerify' | 'proxySslTrustedCertificate' | 'proxySslSessionReuse'>;

const TOP_REWRITE: RewriteSettings = { log: false, warn: true };

const TOP: Merged = {
  access: [],
  apiOrigins: [],
  proxy: { setHeaders: [], connectTimeout: PROXY_TIMEOUT_MS, readTimeout: PROXY_TIMEOUT_MS, sendTimeout: PROXY_TIMEOUT_MS, nextUpstream: NEXT_UPSTREAM, nextUpstreamTries: 0 },
  proxyOptions: {},
  ssl: {},
  cache: TOP_CACHE,
  addHeaders: [],
  limits: TOP_LIMITS,
  logs: TOP_LOGS,
  core: TOP_CORE,
  content: TOP_CONTENT,
  gzip: TOP_GZIP,
  rewrite: TOP_REWRITE,
};

function merge(outer: Merged, level: InheritableLevel & { readonly kind: string }): Merged {
  // An `alias` replaces the outer `root`, as a `root` replaces an outer `alias`.
  const root = level.root ?? (level.content?.alias ? undefined : outer.root);
  const addHeaders = mergeHeaders(outer.addHeaders, level);
  const authBasic = level.authBasic ?? outer.authBasic;
  const authUserFile = level.authUserFile ?? outer.authUserFile;
  const satisfy = level.satisfy ?? outer.satisfy;
  const o = outer.proxy;
  return {
    access: level.access.length ? level.access : outer.access,
    apiOrigins: level.apiOrigins ?? outer.apiOrigins,
    ...(root !== undefined ? { root } : {}),
    ...(authBasic ? { authBasic } : {}),
    ...(authUserFile !== undefined ? { authUserFile } : {}),
    ...(satisfy ? { satisfy } : {}),
    proxy: {
      setHeaders: level.proxySetHeaders.length ? level.proxySetHeaders : o.setHeaders,
      connectTimeout: level.proxyConnectTimeout ?? o.connectTimeout,
      readTimeout: level.proxyReadTimeout ?? o.readTimeout,
      sendTimeout: level.proxySendTimeout ?? o.sendTimeout,
      nextUpstream: level.proxyNextUpstream ?? o.nextUpstream,
      nextUpstreamTries: level.proxyNextUpstreamTries ?? o.nextUpstreamTries,
    },
    proxyOptions: mergeProxyOptions(outer.proxyOptions, level),
    ssl: {
      proxySslServerName: level.proxySslServerName ?? outer.ssl.proxySslServerName,
      proxySslName: level.proxySslName ?? outer.ssl.proxySslName,
      proxySslVerify: level.proxySslVerify ?? outer.ssl.proxySslVerify,
      proxySslTrustedCertificate: level.proxySslTrustedCertificate ?? outer.ssl.proxySslTrustedCertificate,
      proxySslSessionReuse: level.proxySslSessionReuse ?? outer.ssl.proxySslSessionReuse,
    },
    cache: mergeCache(outer.cache, level),
    addHeaders,
    limits: mergeLimits(outer.limits, level),
    logs: mergeLogs(outer.logs, level),
    core: mergeCore(outer.core, level),
    content: mergeContent(outer.content, level, addHeaders),
    gzip: mergeGzip(outer.gzip, level),
    ...histogramField(level.histogram ?? outer.histogram),
    rewrite: mergeRewrite(outer.rewrite, level),
    ...fieldOf('realip', mergeRealip(outer.realip, level)),
    ...fieldOf('resolver', mergeResolver(outer.resolver, level)),
  };
}

const fieldOf = <K extends string, V>(key: K, value: V | undefined) => (value === undefined ? {} : ({ [key]: value } as Record<K, V>));

function upstreamConfig(u: UpstreamLevel, http: HttpLevel, probes: readonly ProbeConfig[] | undefined): UpstreamBlockConfig {
  const zone = u.zone && { name: u.zone.name, ...(u.zone.size !== undefined ? { size: u.zone.size } : {}) };
  const resolver = upstreamResolver(u, http);
  return {
    ...(resolver ? { resolver } : {}),
    ...(probes ? { probes } : {}),
    name: u.name,
    ...(zone ? { zone } : {}),
    servers: u.servers,
    method: u.method ?? { kind: 'round_robin' },
    ...(u.sticky ? { sticky: stickyOf(u) } : {}),
    keepalive: u.keepalive ?? DEFAULT_KEEPALIVE,
    ...(u.reuse ? { reuse: u.reuse } : {}),
    ...(u.queue ? { queue: u.queue } : {}),
    responseTimeFactor: u.responseTimeFactor ?? RESPONSE_TIME_FACTOR,
    ...(u.state !== undefined ? { state: u.state } : {}),
    ...histogramField(u.histogram ?? http.histogram),
    implicit: false,
    origin: u.origin,
  };
}

/** Whether `127.0.0.1:8443`, `[::1]:8443` (not `127.0.0.1`, `[::1]`) name a port. */
const hasPort = (target: string) => (target.startsWith('[') ? /\]:\d*$/ : /:\d*$/).test(target);

class Resolver {
  /** `auth_basic` directives already reported, once each however many levels inherit them. */
  private readonly unpaired = new Set<At<string | false>>();
  /** `proxy_ssl_verify on` without a CA, reported once each. */
  private readonly noTrusted = new Set<At<boolean>>();

  /** The http block's limit zones, and the limits already reported for an unknown one. */
  private zones: readonly LimitZone[] = [];
  private readonly unknownZones = new Set<object>();

  /** The upstreams `proxy_pass http://<address>` made, by address, in order of appearance. */
  private readonly implicit = new Map<string, UpstreamBlockConfig>();
  /** The probes of the locations that proxy to each upstream, by its name. */
  private readonly probes = new Map<string, ProbeConfig[]>();

  constructor(
    private readonly c: Checker,
    private readonly upstreams: readonly UpstreamLevel[],
  ) {}

  /** The upstream a `proxy_pass` names: a configured one (before or after it), or the
   * implicit one of its address. Undefined after an error. */
  private upstreamOf(p: ProxyPass): string | undefined {
    // An upstream's name is a host name: caseless, and the URL's port cannot go with it.
    const named = /^([^:[\]]+)(?::(.*))?$/.exec(p.target);
    const upstream = named && this.upstreams.find((u) => u.name.toLowerCase() === named[1].toLowerCase());
    if (upstream) {
      if (named[2] === undefined) return upstream.name;
      this.c.error(p.origin, `upstream "${upstream.name}" may not have port ${named[2]}`);
      return undefined;
    }
    // nginx's default port is the scheme's.
    const address = parseUpstreamAddress(p.ssl && !hasPort(p.target) ? `${p.target}:443` : p.target);
    if (address.error !== undefined) {
      // A name that is no upstream's is as likely a misspelt upstream as a host to
      // resolve: nginx's words, which say both.
      this.c.error(p.origin, address.resolver ? `host not found in upstream "${p.target}"` : address.error);
      return undefined;
    }
    const name = address.value.address;
    if (!this.implicit.has(name))
      this.implicit.set(name, {
        name,
        ...(implicitZoneName(name) !== name ? { zone: { name: implicitZoneName(name) } } : {}),
        servers: [defaultPeer(p.target, address.value, p.origin)],
        method: { kind: 'round_robin' },
        keepalive: DEFAULT_KEEPALIVE,
        responseTimeFactor: RESPONSE_TIME_FACTOR,
        implicit: true,
        origin: p.origin,
      });
    return name;
  }

  /** Errors of the proxy options already reported (a setting inherited by many locations). */
  private readonly proxyReported = new Set<string>();

  private proxy(p: ProxyPass, merged: Merged, location: Pick<LocationLevel, 'modifier' | 'path'>): ProxyConfig | undefined {
    // With variables in the host, a request's URL names the upstream (or an address).
    const upstream = p.url === undefined ? this.upstreamOf(p) : '';
    if (upstream === undefined) return undefined;
    const url = p.url ?? `${p.ssl ? 'https' : 'http'}://${p.target}${p.uri ?? ''}`;
    const regex = location.modifier === '~' || location.modifier === '~*';
    const options = proxyOptions(merged.proxyOptions, { url, ...(p.uri !== undefined ? { uri: p.uri } : {}), regex }, location.path, (at, message) => {
      const key = `${at.file}:${at.line}:${message}`;
      if (this.proxyReported.has(key)) return;
      this.proxyReported.add(key);
      this.c.error(at, message);
    });
    const ssl = p.ssl ? this.ssl(merged.ssl, upstream) : undefined;
    const cache = resolveCache(merged.cache, this.caches, this.c, this.unknownCaches);
    const resolver = p.url !== undefined ? settleResolver(merged.resolver) : undefined;
    return {
      upstream,
      ...(p.url !== undefined ? { url: p.url } : {}),
      ...(resolver ? { resolver } : {}),
      ...(p.uri !== undefined ? { uri: p.uri } : {}),
      ...merged.proxy,
      setHeaders: effectiveHeaders(merged.proxy.setHeaders),
      ...(ssl ? { ssl } : {}),
      ...(cache ? { cache } : {}),
      ...(merged.addHeaders.length > 0 ? { addHeaders: merged.addHeaders } : {}),
      options,
    };
  }

  /** TLS to the peers; a `proxy_ssl_verify on` without a CA is reported once however
   * many locations inherit it. */
  private ssl(l: SslLevel, upstream: string): ProxySsl | undefined {
    return settleProxySsl(l, upstream, (verify, message) => {
      if (this.noTrusted.has(verify)) return;
      this.noTrusted.add(verify);
      this.c.error(verify.origin, message);
    });
  }

  private settle(m: Merged): Inherited {
    const out: { -readonly [K in keyof Inherited]: Inherited[K] } = { access: m.access, ...settleLogs(m.logs), ...settleRealip(m.realip) };
    // Absent where no core directive applies: the runtime's defaults are nginx's.
    if (m.core !== TOP_CORE) out.core = m.core;
    if (!defaultContent(m.content)) out.content = m.content;
    if (gzipInUse(m.gzip)) out.gzip = m.gzip;
    if (m.apiOrigins.length > 0) out.apiOrigins = m.apiOrigins;
    if (m.root !== undefined) out.root = m.root;
    if (m.histogram !== undefined) out.histogram = m.histogram;
    if (m.rewrite !== TOP_REWRITE) out.rewrite = m.rewrite;
    if (m.satisfy === 'any') out.satisfy = 'any';
    const realm = m.authBasic?.value;
    if (m.authBasic && realm !== false && realm !== undefined) {
      const userFile = m.authUserFile;
      if (userFile !== undefined) out.authBasic = { realm, userFile, ...(userFile.includes('$') ? { userFileBase: this.c.path('.', 'conf') } : {}) };
      else if (!this.unpaired.has(m.authBasic)) {
        this.unpaired.add(m.authBasic);
        this.c.error(m.authBasic.origin, `"auth_basic" has no "auth_basic_user_file" where it applies`);
      }
    }
    return out;
  }

  private limits(m: Merged) {
    const limits = resolveLimits(m.limits, this.zones, this.c, this.unknownZones);
    return limits ? { limits } : {};
  }

  /** The http block's caches, and `proxy_cache` directives already reported for an unknown zone. */
  private caches: readonly CacheZone[] = [];
  private readonly unknownCaches = new Set<object>();

  http(http: HttpLevel): HttpBlockConfig {
    const top = merge(TOP, http);
    // The names of the upstreams' zones: a limit zone cannot take one.
    const upstreamZones = new Map(this.upstreams.map((u) => [u.zone?.name ?? u.name, `upstream "${u.name}"`]));
    this.zones = limitZones(http, upstreamZones, this.c);
    this.caches = cacheZones(http);
    // One shared-memory zone per name: a cache's keys zone cannot be an upstream's or a limit's zone.
    for (const z of this.caches) {
      const taken = upstreamZones.get(z.name) ?? (this.zones.some((l) => l.name === z.name) ? `limit zone "${z.name}"` : undefined);
      if (taken) this.c.error(z.origin, `keys zone "${z.name}" is the zone of ${taken} already`);
    }
    const servers = http.servers.map((s) => this.server(s, top, http));
    const implicit = [...this.implicit.values()].map((u) => ({
      ...u,
      ...(this.probes.has(u.name) ? { probes: this.probes.get(u.name) } : {}),
      ...histogramField(top.histogram),
    }));
    const zones = resolverZones(http);
    return {
      servers,
      ...(this.caches.length > 0 ? { caches: this.caches } : {}),
      limitZones: this.zones,
      upstreams: [...this.upstreams.map((u) => upstreamConfig(u, http, this.probes.get(u.name))), ...implicit],
      ...(zones.length ? { resolverZones: zones } : {}),
    };
  }

  private server(s: ServerLevel, outer: Merged, http: HttpLevel): VirtualServerConfig {
    const merged = merge(outer, s);
    // A server with a certificate has TLS on any listen another server made TLS too.
    const ssl =
      s.sslCertificate !== undefined && s.sslCertificateKey !== undefined
        ? settleTls(s.tls, http.tls, { certificate: s.sslCertificate, key: s.sslCertificateKey, handshakeTimeout: s.sslHandshakeTimeout ?? SSL_HANDSHAKE_TIMEOUT_MS }, (m) =>
            this.c.error(s.directive.origin, m), this.c.disk, this.c.warn,
          )
        : undefined;
    const verify = s.tls?.verifyClient ?? http.tls?.verifyClient;
    const trusted = trustedFiles({ trustedCertificate: s.tls?.trustedCertificate ?? http.tls?.trustedCertificate, clientCertificate: s.tls?.clientCertificate ?? http.tls?.clientCertificate });
    const sslVerify = verify && verify !== 'off' ? { mode: verify, depth: s.tls?.verifyDepth ?? http.tls?.verifyDepth ?? TLS_DEFAULTS.verifyDepth, trusted } : undefined;
    return {
      ...this.settle(merged),
      listens: s.listens,
      ...(sslVerify ? { sslVerify } : {}),
      names: s.names,
      ...(s.statusZone !== undefined ? { statusZone: s.statusZone } : {}),
      ...(s.statusZoneKey !== undefined ? { statusZoneKey: s.statusZoneKey } : {}),
      ...(ssl ? { ssl } : {}),
      admin: s.listens.some((l) => l.admin),
      ...(s.return ? { return: s.return.value } : {}),
      ...serverIfs(s),
      ...scriptOf(s.script),
      ...this.limits(merged),
      locations: s.locations.map((l) => this.location(l, merged, undefined, false)),
      origin: s.directive.origin,
    };
  }

  /** A location's probes, for the upstream its proxy_pass names; a probe's name is
   * unique among the upstream's probes, which the peers' state depends on together. */
  private addProbes(probes: NonNullable<LocationLevel['probes']>, proxy: ProxyConfig): void {
    const list = this.probes.get(proxy.upstream) ?? [];
    for (const p of probes) {
      if (list.some((x) => x.name === p.name)) {
        this.c.error(p.origin, `duplicate probe "${p.name}" of upstream "${proxy.upstream}"`);
        continue;
      }
      const { connectTimeout, readTimeout, nextUpstream, ssl } = proxy;
      list.push({ ...p, upstream: proxy.upstream, host: proxy.upstream, proxy: { connectTimeout, readTimeout, nextUpstream, ...(ssl ? { ssl } : {}) } });
    }
    this.probes.set(proxy.upstream, list);
  }

  /** `zone`: the enclosing location's zone, already undefined under `status_zone off`. */
  private location(l: LocationLevel, outer: Merged, zone: ZoneSetting | undefined, apiConfigFiles: boolean): LocationConfig {
    const merged = merge(outer, l);
    const statusZone = zoneSetting(l, zone);
    const configFiles = l.apiConfigFiles ?? apiConfigFiles;
    const proxy = l.proxyPass && this.proxy(l.proxyPass, merged, l);
    if (l.probes && !l.proxyPass) this.c.error(l.probes[0].origin, `"upstream_probe" needs a "proxy_pass" in its location: it probes that upstream`);
    if (l.probes && proxy?.url !== undefined) this.c.error(l.probes[0].origin, `"upstream_probe" needs a "proxy_pass" without variables in its host: it probes that upstream`);
    else if (l.probes && proxy) this.addProbes(l.probes, proxy);
    // A location has one content handler: the page is not an API, nor proxied.
    if (l.dashboard && (l.api || l.proxyPass)) this.c.error(l.dashboard.origin, `"dashboard" and "${l.api ? 'api' : 'proxy_pass'}" in one location: the dashboard is a location of its own`);
    const ifs = l.ifs.map((i) => this.ifBlock(i, merged, statusZone, configFiles, l.proxyPass)).filter((i) => i !== undefined);
    return {
      ...this.settle(merged),
      modifier: l.modifier,
      path: l.path,
      ...(l.regex ? { regex: l.regex } : {}),
      ...statusZone,
      ...(l.return ? { return: l.return.value } : {}),
      ...(ifs.length ? { ifs } : {}),
      ...(l.limitExcept ? { limitExcept: { ...this.settle(merge(merged, l.limitExcept)), methods: l.limitExcept.methods, origin: l.limitExcept.origin } } : {}),
      ...scriptOf(l.script),
      ...(l.api ? { api: l.api.value } : {}),
      ...(proxy ? { proxy } : {}),
      ...(l.dashboard ? { dashboard: l.dashboard.value } : {}),
      apiConfigFiles: configFiles,
      ...this.limits(merged),
      locations: l.locations.map((n) => this.location(n, merged, statusZone, configFiles)),
      origin: l.origin,
    };
  }

  /** An `if` block: nginx merges the location's settings into it as into a nested
   * location, so it has all of them but those it sets itself. Undefined after an error. */
  private ifBlock(i: IfLevel, outer: Merged, zone: ZoneSetting | undefined, apiConfigFiles: boolean, locationPass: ProxyPass | undefined): IfConfig | undefined {
    if (!i.condition) return undefined;
    const merged = merge(outer, i);
    const statusZone = zoneSetting(i, zone);
    // A block that sets proxy_cache proxies with its location's proxy_pass and its own cache.
    const pass = i.proxyPass ?? (i.cache?.cache !== undefined ? locationPass : undefined);
    const proxy = pass && this.proxy(pass, merged, i);
    return {
      ...this.settle(merged),
      condition: i.condition,
      ...statusZone,
      ...(i.return ? { return: i.return.value } : {}),
      ...scriptOf(i.script),
      ...(i.api ? { api: i.api.value } : {}),
      ...(proxy ? { proxy } : {}),
      ...this.limits(merged),
      apiConfigFiles: i.apiConfigFiles ?? apiConfigFiles,
      origin: i.origin,
    };
  }
}

/** A location's zone as it passes to nested locations and `if` blocks: the name, and the
 * key when the zone is a group of zones made at run time. */
type ZoneSetting = Pick<LocationConfig, 'statusZone' | 'statusZoneKey'>;

/** The zone of a location or `if` block: its own `status_zone` (key and all), none under
 * `status_zone off`, else the enclosing one's, as nginx merges the setting. */
function zoneSetting(level: LocationLevel | IfLevel, outer: ZoneSetting | undefined): ZoneSetting | undefined {
  if (level.statusZone === false) return undefined;
  if (level.statusZone === undefined) return outer;
  return level.statusZoneKey ? { statusZone: level.statusZone, statusZoneKey: level.statusZoneKey } : { statusZone: level.statusZone };
}

/** A server's `if` blocks. (One with an error makes the configuration fail: leaving it
 * out here does not move the index its `if` step names.) */
function serverIfs(s: ServerLevel): Pick<VirtualServerConfig, 'ifs'> {
  const ifs = s.ifs.flatMap((i) => (i.condition ? [{ condition: i.condition, script: i.script, origin: i.origin }] : []));
  return ifs.length ? { ifs } : {};
}

/** A block's rewrite directives, when they are more than a `return` (which answers alone). */
const scriptOf = (steps: readonly RewriteStep[]): { script?: readonly RewriteStep[] } =>
  steps.length === 0 || (steps.length === 1 && steps[0].kind === 'return') ? {} : { script: steps };

function mergeRewrite(outer: RewriteSettings, level: InheritableLevel): RewriteSettings {
  const log = level.rewriteLog ?? outer.log;
  const warn = level.uninitializedVariableWarn ?? outer.warn;
  return log === outer.log && warn === outer.warn ? outer : { log, warn };
}

export const resolveHttp = (http: HttpLevel, c: Checker): HttpBlockConfig => new Resolver(c, http.upstreams).http(http);
