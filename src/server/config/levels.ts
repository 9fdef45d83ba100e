// What each block of the configuration says by itself, before inheritance: the directive
// table fills these in, resolve.ts merges them into the model.
import type { AccessRule, BalancingMethod, IfCondition, RewriteStep, ListenConfig, LocationConfig, NextUpstreamCondition, Origin, PeerParams, ReturnConfig, StatusZoneKey } from './model.js';
import type { Directive } from './syntax.js';

interface Level {
  /** The single-valued directives already seen in this block, for `is duplicate`. */
  readonly seen: Set<string>;
}

/** A setting with the directive that set it, for errors found later. */
export interface At<T> {
  readonly value: T;
  readonly origin: Origin;
}

export interface InheritableLevel extends Level {
  root?: string;
  /** Only the rules written in this block: a block with any replaces the outer list. */
  readonly access: AccessRule[];
  /** `false` for `auth_basic off`. */
  authBasic?: At<string | false>;
  /** `rewrite_log`, `uninitialized_variable_warn`. */
  rewriteLog?: boolean;
  uninitializedVariableWarn?: boolean;
  authUserFile?: string;
  /** `api_origins`: origins allowed to write to the API from a browser, normalised. */
  apiOrigins?: string[];
  /** Only the headers written in this block: a block with any replaces the outer list. */
  readonly proxySetHeaders: Array<{ readonly name: string; readonly value: string }>;
  /** Milliseconds. */
  proxyConnectTimeout?: number;
  proxyReadTimeout?: number;
  proxySendTimeout?: number;
  /** Empty for `off`. */
  proxyNextUpstream?: NextUpstreamCondition[];
  proxyNextUpstreamTries?: number;
  /** `proxy_ssl_*`: how `proxy_pass https://` talks to its peers. */
  proxySslServerName?: boolean;
  proxySslName?: string;
  proxySslVerify?: At<boolean>;
  /** Absolute path. */
  proxySslTrustedCertificate?: string;
  proxySslSessionReuse?: boolean;
}

export interface MainLevel extends Level {
  readonly kind: 'main';
  http?: HttpLevel;
}

export interface HttpLevel extends InheritableLevel {
  readonly kind: 'http';
  readonly servers: ServerLevel[];
  readonly upstreams: UpstreamLevel[];
}

/** An `upstream` block: not inherited, nothing to merge, it is its own model almost. */
export interface UpstreamLevel extends Level {
  readonly kind: 'upstream';
  readonly name: string;
  readonly origin: Origin;
  zone?: { readonly name: string; readonly size?: number; readonly origin: Origin };
  readonly servers: PeerParams[];
  /** A `server` was written, even one refused: an error for it is enough. */
  serverWritten?: boolean;
  method?: BalancingMethod;
  /** Which block it is in: some methods and parameters are one protocol's. */
  readonly protocol: 'http' | 'stream';
  sticky?: { mode: 'cookie' | 'route'; cookie?: string; expires?: number | 'max'; attributes?: string[]; variables?: string[]; origin: Origin };
  stickySecret?: string;
  stickyStrict?: boolean;
  keepalive?: number;
  reuse?: { requests?: number; time?: number; timeout?: number };
  queue?: { readonly size: number; readonly timeout: number };
  responseTimeFactor?: number;
  /** `state <file>`, absolute. */
  state?: string;
}

/** `proxy_pass http://<target>[<uri>]` as written: the target is an upstream's name or an
 * address, which only the whole http block can tell (upstreams may come later). */
export interface ProxyPass {
  /** `backend`, `127.0.0.1:8081`, `[::1]:8081`, `localhost`. */
  readonly target: string;
  readonly uri?: string;
  /** `https://`: TLS to the peers (or perhaps, with a variable scheme). */
  readonly ssl: boolean;
  /** Variables in the scheme or the host: the whole URL, evaluated for each request
   * (`target` is then empty). */
  readonly url?: string;
  readonly origin: Origin;
}

export interface ServerLevel extends InheritableLevel {
  readonly kind: 'server';
  readonly directive: Directive;
  readonly listens: ListenConfig[];
  readonly names: string[];
  statusZone?: string;
  statusZoneKey?: StatusZoneKey;
  sslCertificate?: string;
  sslCertificateKey?: string;
  /** Milliseconds. */
  sslHandshakeTimeout?: number;
  return?: At<ReturnConfig>;
  readonly locations: LocationLevel[];
  /** `if` blocks, in order. */
  readonly ifs: ServerIfLevel[];
  /** The rewrite directives, `if` blocks among them, in order. */
  readonly script: RewriteStep[];
}

/** An `if` block in a server (the context `server_if`): nginx runs it before any location
 * is searched, and all it can do there is answer, with `return`. */
export interface ServerIfLevel extends Level {
  readonly kind: 'server_if';
  readonly origin: Origin;
  /** Undefined after an error in it. */
  readonly condition?: IfCondition;
  return?: At<ReturnConfig>;
  readonly script: RewriteStep[];
}

export interface LocationLevel extends InheritableLevel {
  readonly kind: 'location';
  readonly origin: Origin;
  readonly modifier: LocationConfig['modifier'];
  readonly path: string;
  readonly regex?: RegExp;
  /** `false` for `status_zone off`. */
  statusZone?: string | false;
  statusZoneKey?: StatusZoneKey;
  return?: At<ReturnConfig>;
  api?: At<string>;
  apiConfigFiles?: boolean;
  proxyPass?: ProxyPass;
  readonly locations: LocationLevel[];
  /** `if` blocks, in order. */
  readonly ifs: IfLevel[];
  limitExcept?: LimitExceptLevel;
  /** The rewrite directives, `if` blocks among them, in order. */
  readonly script: RewriteStep[];
}

/**
 * An `if` block in a location: the context `if` of a directive's entry. A directive is
 * allowed in `if` blocks by naming `'if'` among its contexts (nginx's NGX_HTTP_LIF_CONF);
 * its `apply` then gets this level, which has the fields of a location's settings.
 */
export interface IfLevel extends InheritableLevel {
  readonly kind: 'if';
  readonly origin: Origin;
  /** Its location's path and modifier, for `proxy_pass`'s checks. */
  readonly modifier: LocationLevel['modifier'];
  readonly path: string;
  /** Undefined after an error in it. */
  readonly condition?: IfCondition;
  readonly script: RewriteStep[];
  statusZone?: string | false;
  statusZoneKey?: StatusZoneKey;
  return?: At<ReturnConfig>;
  api?: At<string>;
  apiConfigFiles?: boolean;
  proxyPass?: ProxyPass;
}

/** `limit_except <method>... { ... }` in a location: the settings of the requests whose
 * method it does not list, merged from the location's as a nested location's are (nginx's
 * NGX_HTTP_LMT_CONF: access and auth directives name the context). */
export interface LimitExceptLevel extends InheritableLevel {
  readonly kind: 'limit_except';
  readonly origin: Origin;
  /** Upper case; GET brings HEAD. */
  readonly methods: readonly string[];
}

/** Every kind of block, by its context's name. A module with blocks of its own (stream)
 * adds them by augmenting this interface, so that the loader's types name no module. */
export interface LevelKinds {
  main: MainLevel;
  http: HttpLevel;
  server: ServerLevel;
  server_if: ServerIfLevel;
  location: LocationLevel;
  if: IfLevel;
  limit_except: LimitExceptLevel;
  upstream: UpstreamLevel;
}

export type AnyLevel = LevelKinds[keyof LevelKinds];
/** nginx's contexts: where a directive may be written. */
export type Context = AnyLevel['kind'];

/** What a directive's check needs besides its block. */
export interface Checker {
  /** Files come from the disk, so the files a directive names can be checked too. */
  readonly disk: boolean;
  readonly cpus: number;
  error(at: Origin, message: string): void;
  /** nginx's `[warn]` at `-t` and at the start: the configuration runs, and what it
   * asked for that zonal does not do is said once. */
  warn(at: Origin, message: string): void;
  /** A file's text read once, by the primary, and given to the workers apart from the
   * configuration's files (which the API may show): password files. Throws when it cannot
   * be read. */
  secret(file: string): string | undefined;
  /** A relative path of a directive made absolute as nginx does: against the prefix
   * (`-p`; pid, root, logs, temp and cache paths, state files), or against the main
   * file's directory, `conf` (include, certificates, keys, password files). */
  path(arg: string, against: 'prefix' | 'conf'): string;
  /** Applies directives to a block: a block directive's contents, an include's files. */
  walk(directives: readonly Directive[], level: AnyLevel): void;
  /** The table's entries of a directive's name (none when unknown): a module's check of
   * other modules' directives (an admin server's) goes through this, not the table. */
  specsOf(name: string): ReadonlyArray<{ readonly contexts: readonly Context[]; readonly admin?: boolean }>;
}
