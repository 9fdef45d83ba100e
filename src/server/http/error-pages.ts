// What a response's place says about its error pages, carried on the response: the content
// phase (content.ts) sets it before the proxy takes a request, and the proxy asks it for
// `proxy_intercept_errors`. A module of its own so that the proxy, which the place holds,
// needs nothing of content.ts (that would be an import circle).
import type { ServerResponse } from 'node:http';

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
