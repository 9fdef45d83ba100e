// The zonal server's configuration once read and checked: what the parser (parse.ts,
// directives.ts) produces and the processes run. Every setting is already resolved the
// way nginx merges them: a location holds its effective root, access rules, basic auth
// and status zone, inherited from its enclosing location, server and http block.

/** Where a directive was written: every error and every listen names it. */
export interface Origin {
  readonly file: string;
  readonly line: number;
}

export interface ListenConfig {
  /** Address to bind: `127.0.0.1`, `::1`, `0.0.0.0` for a bare port or `*:<port>`. */
  readonly host: string;
  readonly port: number;
  readonly ssl: boolean;
  /** An admin listener: served by uWebSockets.js in the primary, its traffic not counted. */
  readonly admin: boolean;
  /** `default_server`: the server for requests whose Host no server_name matches. */
  readonly defaultServer: boolean;
  /** `proxy_protocol`: each connection begins with a PROXY protocol header (plain HTTP). */
  readonly proxyProtocol?: boolean;
  readonly origin: Origin;
}

/** `allow` / `deny`: `all`, an address, or a CIDR range. Checked in order; first match wins. */
export interface AccessRule {
  readonly allow: boolean;
  /** `all`, `127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`. */
  readonly address: string;
  readonly origin: Origin;
}

/** `return <code> [text|URL]`: for 301, 302, 303, 307 and 308 the argument is a URL. */
export interface ReturnConfig {
  readonly code: number;
  readonly text?: string;
}

export interface BasicAuthConfig {
  /** The realm (`auth_basic "<realm>"`). */
  readonly realm: string;
  /** Absolute path of the htpasswd file; with variables, its value as written. */
  readonly userFile: string;
  /** With variables: the directory a relative value is against (the main file's). */
  readonly userFileBase?: string;
}

/** The settings nginx inherits from the outer levels down to locations. */
export interface Inherited {
  /** Absolute directory of static files. */
  readonly root?: string;
  /** Empty: no rule, everything allowed. */
  readonly access: readonly AccessRule[];
  /** Absent: `auth_basic off` or never set. */
  readonly authBasic?: BasicAuthConfig;
  /** `api_origins`: the origins besides the server's own whose browser pages may write
   * to /config (`scheme://host[:port]`, lowercase, default port left out); absent: none. */
  readonly apiOrigins?: readonly string[];
  /** `rewrite_log`, `uninitialized_variable_warn`; absent: nginx's defaults. */
  readonly rewrite?: RewriteSettings;
}

/** `proxy_next_upstream` conditions: nginx's, but the cache's `updating`. */
export type NextUpstreamCondition =
  | 'error'
  | 'timeout'
  | 'invalid_header'
  | 'http_500'
  | 'http_502'
  | 'http_503'
  | 'http_504'
  | 'http_403'
  | 'http_404'
  | 'http_429'
  | 'non_idempotent';

/** A location's proxying: `proxy_pass` and the `proxy_*` settings in effect there. */
export interface ProxyConfig {
  /** The upstream's name: a configured `upstream`, or, for `proxy_pass http://<address>`,
   * an implicit one of that address (as nginx makes), named `<host>:<port>`. */
  readonly upstream: string;
  /** `proxy_pass` with variables in its scheme or host: the whole URL, evaluated for
   * each request; the host names an upstream when one has its name, else it is an
   * address. `upstream` is then empty. */
  readonly url?: string;
  /** The URI part of `proxy_pass` (`http://u/api/` -> `/api/`); absent: the request's
   * URI is passed as it came. */
  readonly uri?: string;
  /** `proxy_set_header` in order, inherited as nginx does (a level with any replaces
   * the outer list); values may hold variables. An empty value removes the header.
   * The list the runtime applies: nginx's `Host: $proxy_host` and `Connection: close`
   * first, each replaced in place by a configured header of its name (caseless), then
   * the other configured headers. Any http variable (config/variables.ts). */
  readonly setHeaders: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  /** Milliseconds (defaults: 60 s each, as nginx). */
  readonly connectTimeout: number;
  readonly readTimeout: number;
  /** `proxy_send_timeout`: how long a write to the peer may wait with no progress. */
  readonly sendTimeout: number;
  /** Default `error timeout`; empty for `off`. */
  readonly nextUpstream: readonly NextUpstreamCondition[];
  /** 0: no limit. */
  readonly nextUpstreamTries: number;
  /** `proxy_pass https://`: TLS to the peers; absent for `http://`. */
  readonly ssl?: ProxySsl;
}

/** How a location's `proxy_pass https://` talks TLS to its peers (nginx's `proxy_ssl_*`). */
export interface ProxySsl {
  /** `proxy_ssl_server_name`: send `name` as SNI (default off). */
  readonly serverName: boolean;
  /** `proxy_ssl_name`: the name SNI sends and verification checks; default `$proxy_host`. */
  readonly name: string;
  /** `proxy_ssl_verify` (default off): the peer's certificate must chain to `trusted`
   * and name `name`. */
  readonly verify: boolean;
  /** `proxy_ssl_trusted_certificate`: an absolute path to PEM certificates. */
  readonly trusted?: string;
  /** `proxy_ssl_session_reuse` (default on): resume the last session with each peer. */
  readonly sessionReuse: boolean;
}

export interface PeerParams {
  /** The `server` parameter as written: `127.0.0.1:8081`, `localhost:8081`. */
  readonly server: string;
  /** Canonical `<ip>:<port>` (IPv6 as `[::1]:8081`): the peer's name in the API. */
  readonly address: string;
  readonly host: string;
  readonly port: number;
  readonly weight: number;
  /** 0: no limit. */
  readonly maxConns: number;
  readonly maxFails: number;
  /** Milliseconds. */
  readonly failTimeout: number;
  readonly backup: boolean;
  readonly down: boolean;
  /** Milliseconds; 0: none. */
  readonly slowStart: number;
  readonly sid?: string;
  /** `resolve`: the server is a name whose addresses (or SRV records, with `service`)
   * are the peers, followed as they change (resolver/peers.ts). `address` is then the
   * name and its port, no peer's key. */
  readonly resolve?: boolean;
  /** `service=`: the SRV service looked up under the name (`_http._tcp`). */
  readonly service?: string;
  readonly origin: Origin;
}

export type BalancingMethod =
  | { readonly kind: 'round_robin' }
  | { readonly kind: 'least_conn' }
  | { readonly kind: 'random'; readonly two: boolean }
  /** `key` as written; its variables (checked) are those of `proxy_set_header` but
   * proxy_host and proxy_add_x_forwarded_for. */
  | { readonly kind: 'hash'; readonly key: string; readonly consistent: boolean }
  | { readonly kind: 'ip_hash' }
  /** Angie's least_time: the least average `time` (the one /status shows) times active
   * connections plus one, per unit of weight. http: header, last_byte; stream: connect,
   * first_byte, last_byte. `inflight`: incomplete requests count in the average. */
  | { readonly kind: 'least_time'; readonly time: LeastTime; readonly inflight: boolean };

export type LeastTime = 'header' | 'last_byte' | 'connect' | 'first_byte';

/** Angie's `sticky` (http only): where a request's server id comes from, and how a
 * request without one (or whose server cannot take it) is bound. */
export interface StickyConfig {
  /** `cookie <name>`: the id comes in, and goes out, in the cookie; `route`: the first
   * non-empty of `variables` is the id. */
  readonly mode: 'cookie' | 'route';
  /** The cookie's name (cookie). */
  readonly cookie?: string;
  /** Seconds, or `max` (cookie; absent: a session cookie). */
  readonly expires?: number | 'max';
  /** The cookie's other attributes, as written (`path=/` unless one is given). */
  readonly attributes?: readonly string[];
  /** Values, with variables, the first non-empty of which is the id (route). */
  readonly variables?: readonly string[];
  /** `sticky_secret`, with variables: ids are the MD5 of the sid and it. */
  readonly secret?: string;
  /** `sticky_strict on`: a request whose server cannot take it fails (502). */
  readonly strict: boolean;
}

/** How long an upstream connection is reused: each absent one is nginx's default. */
export interface KeepaliveReuse {
  /** Requests a connection carries before it closes (nginx: 1000). */
  readonly requests?: number;
  /** Milliseconds from its opening after which it closes once its request ends (1 h). */
  readonly time?: number;
  /** Milliseconds it may stay idle (60 s; a peer's shorter Keep-Alive hint wins). */
  readonly timeout?: number;
}

export interface UpstreamBlockConfig {
  readonly name: string;
  /** `zone <name> [<size>]` (bytes); without it, a zone named after the upstream. Without
   * a size (either way) the runtime sizes the zone for the peers and workers it has. */
  readonly zone?: { readonly name: string; readonly size?: number };
  readonly servers: readonly PeerParams[];
  readonly method: BalancingMethod;
  /** `sticky` (http only). */
  readonly sticky?: StickyConfig;
  /** `keepalive N`: idle connections each worker keeps to each peer; 0 (`keepalive off`):
   * none, every connection closes after its response. Without the directive: DEFAULT_KEEPALIVE. */
  readonly keepalive: number;
  /** `keepalive_requests`, `keepalive_time`, `keepalive_timeout` of the upstream block:
   * when a cached connection stops being reused (absent: nginx's defaults, peer-pool.ts). */
  readonly reuse?: KeepaliveReuse;
  /** `queue N timeout=T` (timeout in ms, default 60 s). */
  readonly queue?: { readonly size: number; readonly timeout: number };
  /** Percent (default 90). */
  readonly responseTimeFactor: number;
  /** `state <file>` (absolute): the peers as `server` lines, rewritten after each /config
   * change and read instead of the configured servers at start and reload (NGINX Plus). */
  readonly state?: string;
  /** Made for a `proxy_pass http://<address>`: no `upstream` block. */
  readonly implicit: boolean;
  readonly origin: Origin;
}

/** The condition of an `if` block, as nginx's rewrite module reads it. Values may hold
 * variables (`$uri`, `$http_x`, captures `$1`..`$9`); `variable` is one, as written. */
export type IfCondition =
  /** `($var)`: false when the value is empty or "0". */
  | { readonly kind: 'variable'; readonly variable: string }
  /** `($var = value)`, `($var != value)`. */
  | { readonly kind: 'equal'; readonly variable: string; readonly value: string; readonly negate: boolean }
  /** `($var ~ regex)`, `~*`, `!~`, `!~*`: a match sets the captures. */
  | { readonly kind: 'regex'; readonly variable: string; readonly regex: RegExp; readonly negate: boolean }
  /** `(-f path)`, `-d`, `-e`, `-x`, each with `!`: a file, a directory, either, executable. */
  | { readonly kind: 'file'; readonly test: 'f' | 'd' | 'e' | 'x'; readonly path: string; readonly negate: boolean };

/** One directive of the rewrite module, as nginx's rewrite phase runs them: in the order
 * written, an `if` block's own directives inside it. */
export type RewriteStep =
  /** `set $variable value`. */
  | { readonly kind: 'set'; readonly variable: string; readonly value: string }
  /** `rewrite regex replacement [flag]`: `redirect` and `permanent` as written, or
   * `redirect` for a replacement that starts with `http://`, `https://` or `$scheme`. */
  | { readonly kind: 'rewrite'; readonly regex: RegExp; readonly source: string; readonly replacement: string; readonly flag?: 'last' | 'break' | 'redirect' | 'permanent' }
  | { readonly kind: 'break' }
  | { readonly kind: 'return'; readonly value: ReturnConfig }
  /** The block's `if` (its index among the block's `ifs`). */
  | { readonly kind: 'if'; readonly index: number };

/** `rewrite_log` and `uninitialized_variable_warn` where they differ from nginx's
 * defaults (off, on). */
export interface RewriteSettings {
  readonly log: boolean;
  readonly warn: boolean;
}

/**
 * `status_zone <key> zone=<name>[:<count>]` (Angie 1.8): the zone `<name>` is a group of
 * zones made at run time, each named by a request's key (metrics/zone-groups.ts): up to
 * `count` of them, the largest count any `status_zone` of the group writes; past those,
 * and with no count, requests count in `<name>` itself.
 */
export interface StatusZoneKey {
  /** The key, with variables: `$host`, `$uri`, `$http_x_tenant`. */
  readonly key: string;
  /** `:<count>` as written here; 0 without one. */
  readonly count: number;
}

/**
 * An `if` block of a location: nginx's implicit nested location. It holds every setting of
 * the location it is in, and its own: when its condition holds, the request goes on with
 * them (the last true `if` wins). Content (`api`, `proxy_pass`, files) it does not set
 * itself is the location's; a `return` in it answers at once.
 */
/** `limit_except`: what a request whose method is not listed is checked against. */
export interface LimitExceptConfig extends Inherited {
  /** Upper case, HEAD among them when GET is. */
  readonly methods: readonly string[];
  readonly origin: Origin;
}

export interface IfConfig extends Inherited {
  readonly condition: IfCondition;
  /** Its own `status_zone`, else the location's (absent under `status_zone off`). */
  readonly statusZone?: string;
  /** With `status_zone <key> zone=...`: `statusZone` is a group, each request's key its zone. */
  readonly statusZoneKey?: StatusZoneKey;
  readonly return?: ReturnConfig;
  /** Its rewrite directives in order, when it has more than a `return`. */
  readonly script?: readonly RewriteStep[];
  readonly api?: string;
  /** Its own `proxy_pass`, with the location's `proxy_*` settings. */
  readonly proxy?: ProxyConfig;
  readonly apiConfigFiles: boolean;
  readonly origin: Origin;
}

export interface LocationConfig extends Inherited {
  /** `''` prefix, `=` exact, `^~` prefix that stops the regex search, `~` and `~*` regexes. */
  readonly modifier: '' | '=' | '^~' | '~' | '~*' | '@';
  /** As written: the prefix, the exact URI or the regex source. */
  readonly path: string;
  /** For `~` and `~*` (with the `i` flag). */
  readonly regex?: RegExp;
  /** The location zone requests ending here count in; absent under `status_zone off`
   * or when no enclosing level set one. */
  readonly statusZone?: string;
  /** With `status_zone <key> zone=...`: `statusZone` is a group, each request's key its zone. */
  readonly statusZoneKey?: StatusZoneKey;
  /** Not inherited, as in nginx: a `return` answers only in its own location. */
  readonly return?: ReturnConfig;
  /** `if` blocks in the order written, not inherited by nested locations. */
  readonly ifs?: readonly IfConfig[];
  /** `limit_except`: its own location's alone, as nginx's. */
  readonly limitExcept?: LimitExceptConfig;
  /** The rewrite directives (`if` blocks among them) in the order nginx runs them, when
   * there is more than a `return`. */
  readonly script?: readonly RewriteStep[];
  /** `api <path>`: the API element path, with variables. Not inherited. */
  readonly api?: string;
  /** `proxy_pass`: not inherited (as nginx), its `proxy_*` settings are. */
  readonly proxy?: ProxyConfig;
  readonly apiConfigFiles: boolean;
  readonly locations: readonly LocationConfig[];
  readonly origin: Origin;
}

export interface VirtualServerConfig extends Inherited {
  readonly listens: readonly ListenConfig[];
  /** `server_name` arguments as written: `example.com`, `*.example.com`, `.example.com`,
   * `~^www\d+\.`, `""`. */
  readonly names: readonly string[];
  /** The server zone of the server's requests. */
  readonly statusZone?: string;
  /** With `status_zone <key> zone=...`: `statusZone` is a group, each request's key its zone. */
  readonly statusZoneKey?: StatusZoneKey;
  // `ssl` and `sslVerify`: the ssl module's (ssl/config.ts, ssl/request.ts).
  /** Its listens are admin listens (all of them or none: mixing is an error). */
  readonly admin: boolean;
  /** A server-level `return`: answers every request before locations are searched. */
  readonly return?: ReturnConfig;
  /** `if` blocks of the server, in order, with their rewrite directives. */
  readonly ifs?: ReadonlyArray<{ readonly condition: IfCondition; readonly script: readonly RewriteStep[]; readonly origin: Origin }>;
  /** The server's rewrite directives, run before locations are searched, when there is
   * more than a `return`. */
  readonly script?: readonly RewriteStep[];
  readonly locations: readonly LocationConfig[];
  readonly origin: Origin;
}

export interface HttpBlockConfig {
  readonly servers: readonly VirtualServerConfig[];
  /** `upstream` blocks, then the implicit upstreams of `proxy_pass http://<address>`. */
  readonly upstreams: readonly UpstreamBlockConfig[];
}

export interface ServerConfig {
  /** The main configuration file, absolute. */
  readonly file: string;
  /** `worker_processes`: resolved (`auto` is the number of CPUs). */
  readonly workerProcesses: number;
  readonly http?: HttpBlockConfig;
  /** Every file the configuration read, absolute path -> text, in reading order: what
   * `api_config_files on` shows, and what workers parse again instead of the disk. */
  readonly files: Record<string, string>;
  /** What Checker.secret() read (password files), absolute path -> text: never shown. */
  readonly secrets?: Record<string, string>;
}

/** A configuration error: nginx words it as `... in <file>:<line>`. */
export interface ConfigError {
  readonly file: string;
  readonly line: number;
  readonly message: string;
}
