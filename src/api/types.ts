// The API's contract with its transports: a request in, a response out, nothing else.

export interface ApiRequest {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** The request URI's path, as received (still percent-encoded), without the query. */
  readonly path: string;
  /** The raw query string, without '?'. */
  readonly query: string;
  /** The request body, for methods that have one (PUT, PATCH of /config). */
  readonly body?: Buffer;
  /** The local address that accepted the connection (`/status/server/address`). */
  readonly address: string;
  /** The Host header, for `$host` in `api` paths and the Host check. */
  readonly host?: string;
  /** The connection is TLS: the request's own origin is https. */
  readonly secure?: boolean;
  /** The client's address, for access rules (`allow`, `deny`) in front of the API. */
  readonly remoteAddress?: string;
  /** The Authorization header, for basic auth in front of the API. */
  readonly authorization?: string;
  /** The user basic auth let through, for the audit of /config changes. */
  readonly user?: string;
  /** Content-Type: a /config write must be JSON. */
  readonly contentType?: string;
  /** Origin: a cross-site write is refused unless its origin is allowed. */
  readonly origin?: string;
  /** If-Match and If-None-Match: conditional /config writes. */
  readonly ifMatch?: string;
  readonly ifNoneMatch?: string;
  /** `$1`..`$9` of the `api` path, when the server matched a regex the mount does not
   * know (an `if` condition's): they replace the mount's own captures. */
  readonly captures?: readonly string[];
  /** The client asks for the answer as a live stream (`Accept: text/event-stream`, a
   * WebSocket upgrade): a read is then answered with `stream` set, or with an error. */
  readonly stream?: boolean;
}

export interface ApiResponse {
  status: number;
  headers: Record<string, string>;
  /** UTF-8 text or its bytes; empty for HEAD (headers as for GET, Content-Length included). */
  body: string | Uint8Array;
  /** Called by a transport once the body is written out: its memory may then serve the
   * next response (a full tree is megabytes, and fresh memory costs a page fault per 4
   * KiB). Whoever never calls it only forgoes the reuse. */
  release?: () => void;
  /** Set on the answer to a request with `stream`: how to give it again and when. The
   * body is the first answer. */
  stream?: ApiStream;
}

/** Where the API is mounted, as an `api` directive in a location says. */
export interface ApiMount {
  /** The location: a prefix (`/stats/`), an exact match (`= /status`) or a regex. */
  readonly location: string | RegExp;
  /** `exact` for `location = ...`. */
  readonly exact?: boolean;
  /** The `api` directive's path, with variables: `/status/http/server_zones/`, `/status/http/$1_zones/$2`. */
  readonly api: string;
  /** `api_config_files on` in this location. */
  readonly configFiles?: boolean;
}

/**
 * A live answer (issue 18): the same answer again every `interval`, for a transport that
 * pushes it (Server-Sent Events, WebSocket). Streams of one `key` and one interval give
 * the same answer at the same moment, so a transport renders it once for all of them.
 */
export interface ApiStream {
  /** Equal for two streams whose answers are equal (same API, path, query, Host, address). */
  readonly key: string;
  /** Milliseconds between two answers. */
  readonly interval: number;
  /** The answer now: what a GET of the same path and query answers, compact JSON by default. */
  next(): ApiResponse;
}
