// What the proxy lets another module see of a proxied request (the proxy cache,
// src/server/cache/): the tap it calls, and the part of a location's proxy a tap's owner
// drives. Below both, so that the proxy and the cache import it and not each other.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddHeaders } from '../headers/runtime.js';

/** How an attempt to reach a peer failed. */
export type ProxyFailure = 'error' | 'timeout' | 'invalid_header';

/** What the proxy cache (src/server/cache/) sees of a proxied request: it may change the
 * peer's request headers, keep a response from the client (and answer it itself, from
 * the cache), and read the body it will store. */
export interface ProxyTap {
  /** $upstream_cache_status, for add_header. */
  readonly cacheStatus: string;
  /** The peer's request headers (name, value, ...): what to send instead. */
  requestHeaders(head: string[]): string[];
  /** The method the peer gets, when not the client's (proxy_cache_convert_head). */
  readonly method: string | undefined;
  /** The peer's response head (hop-by-hop headers left out). True: it goes on to the
   * client (with add_header's appended to `headers`), or, `intercepted` by
   * proxy_intercept_errors, to the location's error page, its body unread by the tap;
   * false: the tap keeps the response and answers the client at complete(). */
  response(status: number, statusText: string, headers: string[], intercepted: boolean): boolean;
  data(chunk: Buffer): void;
  /** The whole response was read, before the client's response ends. */
  complete(): void;
  /** The attempt failed (`status`: what zonal would answer) or the client left. True: the
   * tap answers the client (a stale response); it is not called again. */
  failed(status: number, failure: ProxyFailure | 'client' | 'status'): boolean;
}

/** A location's proxy, as the cache drives it: a request passed through with a tap. */
export interface TappedProxy {
  pass(req: IncomingMessage, res: ServerResponse, uri: string, captures: readonly string[] | undefined, tap?: ProxyTap): void;
  /** Absent for a `proxy_pass` with variables in its host (`$proxy_host` is then the request's). */
  readonly upstream: { readonly proxyHost: string } | undefined;
  readonly addHeaders: AddHeaders | undefined;
  /** `proxy_ignore_headers`: the cache acts on none of these of the peer's headers. */
  readonly ignoreHeaders: ReadonlySet<string>;
}
