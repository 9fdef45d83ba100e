// What the content phase (content.ts) lends the proxy: a response's place's error pages,
// carried on the response and set before the proxy takes a request, which
// `proxy_intercept_errors` asks; and nginx's internal redirect, which a peer's
// X-Accel-Redirect asks for. A module of its own so that the proxy, which the place holds,
// needs nothing of content.ts (that would be an import circle).
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface ErrorPages {
  /** Whether an `error_page` names `status` here: nginx intercepts only those. */
  has(status: number): boolean;
  /** Answers the request with the `error_page` for `status`. */
  answer(status: number): void;
}

const PAGES = Symbol('zonal.errorPages');
type Carrying = ServerResponse & { [PAGES]?: ErrorPages };

export function setErrorPages(res: ServerResponse, pages: ErrorPages): void {
  (res as Carrying)[PAGES] = pages;
}

export function errorPagesOf(res: ServerResponse): ErrorPages | undefined {
  return (res as Carrying)[PAGES];
}

/** An internal redirect of a request to `target`: a URI (with its arguments) or `@name`;
 * `uri` the request's URI until then. */
export type InternalRedirect = (req: IncomingMessage, res: ServerResponse, target: string, uri: string) => void;

let redirect: InternalRedirect | undefined;

/** content.ts gives it once, as it loads. */
export function setInternalRedirect(f: InternalRedirect): void {
  redirect = f;
}

export function internalRedirect(req: IncomingMessage, res: ServerResponse, target: string, uri: string): void {
  redirect!(req, res, target, uri);
}
