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
  /** Absolute path of the htpasswd file. */
  readonly userFile: string;
}

/** The settings nginx inherits from the outer levels down to locations. */
export interface Inherited {
  /** Absolute directory of static files. */
  readonly root?: string;
  /** Empty: no rule, everything allowed. */
  readonly access: readonly AccessRule[];
  /** Absent: `auth_basic off` or never set. */
  readonly authBasic?: BasicAuthConfig;
}

export interface LocationConfig extends Inherited {
  /** `''` prefix, `=` exact, `^~` prefix that stops the regex search, `~` and `~*` regexes. */
  readonly modifier: '' | '=' | '^~' | '~' | '~*';
  /** As written: the prefix, the exact URI or the regex source. */
  readonly path: string;
  /** For `~` and `~*` (with the `i` flag). */
  readonly regex?: RegExp;
  /** The location zone requests ending here count in; absent under `status_zone off`
   * or when no enclosing level set one. */
  readonly statusZone?: string;
  /** Not inherited, as in nginx: a `return` answers only in its own location. */
  readonly return?: ReturnConfig;
  /** `api <path>`: the API element path, with variables. Not inherited. */
  readonly api?: string;
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
  /** Present when a listen has `ssl`: absolute paths, and `ssl_handshake_timeout` in ms. */
  readonly ssl?: { readonly certificate: string; readonly key: string; readonly handshakeTimeout: number };
  /** Its listens are admin listens (all of them or none: mixing is an error). */
  readonly admin: boolean;
  /** A server-level `return`: answers every request before locations are searched. */
  readonly return?: ReturnConfig;
  readonly locations: readonly LocationConfig[];
  readonly origin: Origin;
}

export interface HttpBlockConfig {
  readonly servers: readonly VirtualServerConfig[];
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
}

/** A configuration error: nginx words it as `... in <file>:<line>`. */
export interface ConfigError {
  readonly file: string;
  readonly line: number;
  readonly message: string;
}
