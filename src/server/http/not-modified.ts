// A request's preconditions, as nginx's not_modified filter answers them for a 200 with
// its validators (a static file; an answer from the proxy cache): If-Unmodified-Since or
// If-Match failing is 412; If-Modified-Since naming the Last-Modified exactly (nginx's
// default `if_modified_since exact`) and If-None-Match naming the ETag (weakly) is 304.
import type { IncomingMessage } from 'node:http';
import { header } from './variables.js';

/** An HTTP date in whole seconds (nginx's time_t), undefined when it is none. */
export function httpSeconds(value: string): number | undefined {
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

/** What an answer's own validators are (its ETag and Last-Modified), for the conditions and If-Range. */
export interface Validators {
  readonly etag?: string;
  readonly lastModified?: string;
}

/** 200 (answer as it is), 304 or 412. */
export function preconditionOf(req: IncomingMessage, validators: Validators): 200 | 304 | 412 {
  const modified = validators.lastModified === undefined ? undefined : httpSeconds(validators.lastModified);
  const ius = header(req, 'if-unmodified-since');
  if (ius !== undefined) {
    const at = httpSeconds(ius);
    if (modified === undefined || at === undefined || at < modified) return 412;
  }
  const ifMatch = header(req, 'if-match');
  if (ifMatch !== undefined && !matches(ifMatch, validators.etag, false)) return 412;
  const ims = header(req, 'if-modified-since');
  const inm = header(req, 'if-none-match');
  if (ims === undefined && inm === undefined) return 200;
  if (ims !== undefined && (modified === undefined || httpSeconds(ims) !== modified)) return 200;
  if (inm !== undefined && !matches(inm, validators.etag, true)) return 200;
  return 304;
}

/** ngx_http_test_if_match: `*`, or the ETag among the list (W/ ignored when `weak`). */
function matches(list: string, etag: string | undefined, weak: boolean): boolean {
  if (list === '*') return true;
  if (etag === undefined) return false;
  const own = weak && etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const item of list.split(',')) {
    let tag = item.trim();
    if (weak && tag.startsWith('W/')) tag = tag.slice(2);
    if (tag === own) return true;
  }
  return false;
}

/** The headers a 304 leaves out of the answer's (nginx clears them). */
export const NOT_MODIFIED_DROPS = ['content-type', 'content-length', 'accept-ranges', 'content-encoding'];
