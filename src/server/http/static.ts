// `root`: static files, as nginx's static module serves them. GET and HEAD only; a
// directory is answered by its index.html when the URI ends with '/', and redirected to
// the URI with '/' otherwise.
import { createReadStream, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { sendPage, sendRedirect, type RedirectSettings } from './pages.js';
import { contentType, type CoreSettings } from './core/config.js';
import { preconditionOf } from './not-modified.js';
import { partialAnswer, rangeOf, unsatisfiedRange } from './range.js';

async function statOrUndefined(path: string): Promise<Stats | { error: string }> {
  try {
    return await stat(path);
  } catch (e) {
    return { error: (e as NodeJS.ErrnoException).code ?? 'EIO' };
  }
}

/** How a location's content settings (content.ts) serve a file. */
export interface StaticOptions {
  /** The file on the disk, when it is not `root` + `uri` (`alias`, `try_files`). */
  readonly path?: string;
  /** Answers an error code as the place's `error_page` says. */
  readonly error: (code: number, extra?: Record<string, string>) => void;
  /** Headers added to an answer of this status (`add_header`, `server_tokens`). */
  readonly headers: (status: number) => void;
  /** Answered as a GET whatever the method: an error page's internal redirect. */
  readonly get?: boolean;
  /** The location's `types` and `default_type` (nginx's defaults without them). */
  readonly core?: CoreSettings;
  /** How a directory's redirect writes its Location, and the server's name for it. */
  readonly redirect?: RedirectSettings;
  readonly serverName?: string;
  /** The type of the file the URI names, when `path` is another (gzip_static's `.gz`). */
  readonly contentType?: string;
  readonly contentEncoding?: string;
  /** Told of a file that could not be served: its path and node's code (`ENOENT`). */
  readonly failed?: (path: string, code: string) => void;
}

/** Serves `uri` (decoded, normalised: no `..`) from `root`. */
export async function serveStatic(root: string, uri: string, req: IncomingMessage, res: ServerResponse, options?: StaticOptions): Promise<void> {
  const head = req.method === 'HEAD';
  if (req.method !== 'GET' && !head && !options?.get) {
    if (options) options.error(405, { Allow: 'GET, HEAD' });
    else sendPage(res, 405, false, { Allow: 'GET, HEAD' });
    return;
  }
  let path = options?.path ?? join(root, uri);
  let info = await statOrUndefined(path);
  if (!('error' in info) && info.isDirectory()) {
    if (!uri.endsWith('/')) {
      if (options) options.headers(301);
      sendRedirect(req, res, uri + '/', options?.redirect, options?.serverName);
      return;
    }
    path = join(path, 'index.html');
    info = await statOrUndefined(path);
    // nginx answers a directory without an index (and without autoindex) with 403.
    if ('error' in info && info.error === 'ENOENT') info = { error: 'EACCES' };
  }
  if (res.destroyed) return;
  if ('error' in info || !info.isFile()) {
    const code = 'error' in info && (info.error === 'EACCES' || info.error === 'EPERM') ? 403 : 404;
    if ('error' in info) options?.failed?.(path, info.error);
    if (options) options.error(code);
    else sendPage(res, code, head);
    return;
  }
  // Set first: `expires modified` counts from it.
  const lastModified = info.mtime.toUTCString();
  // nginx's `etag on`: the modification time and size, in hex.
  const etag = options?.core?.etag === false ? undefined : `"${Math.floor(info.mtime.getTime() / 1000).toString(16)}-${info.size.toString(16)}"`;
  res.setHeader('Last-Modified', lastModified);
  if (etag !== undefined) res.setHeader('ETag', etag);
  const validators = etag === undefined ? { lastModified } : { lastModified, etag };
  // An error page's answer (a GET of another URI, with the error's status) is neither
  // conditional nor ranged: nginx's filters take only a 200.
  const own = !options?.get;
  const precondition = own ? preconditionOf(req, validators) : 200;
  // nginx's 412 and 416 are its special responses, without the file's validators.
  const refuse = (code: number, extra?: Record<string, string>) => {
    res.removeHeader('Last-Modified');
    res.removeHeader('ETag');
    if (options) options.error(code, extra);
    else sendPage(res, code, head, extra);
  };
  if (precondition === 412) return refuse(412);
  options?.headers(precondition);
  if (precondition === 304) {
    res.writeHead(304);
    res.end();
    return;
  }
  // A type set before (a peer's, kept by its X-Accel-Redirect) stays, as in nginx.
  if (!res.hasHeader('content-type')) res.setHeader('Content-Type', options?.contentType ?? contentType(options?.core, path));
  if (options?.contentEncoding) res.setHeader('Content-Encoding', options.contentEncoding);
  const range = own ? rangeOf(req, info.size, validators) : ({ kind: 'whole' } as const);
  if (range.kind === 'unsatisfiable') return refuse(416, { 'Content-Range': unsatisfiedRange(info.size) });
  if (range.kind === 'partial') {
    const partial = partialAnswer(range.ranges, info.size, String(res.getHeader('content-type')));
    for (const [name, value] of partial.headers) res.setHeader(name, value);
    res.writeHead(206);
    if (head) return void res.end();
    const file = path;
    async function* pieces() {
      for (const piece of partial.pieces) {
        if (Buffer.isBuffer(piece)) yield piece;
        else if (piece.end > piece.start) yield* createReadStream(file, { start: piece.start, end: piece.end - 1 });
      }
    }
    pipeline(Readable.from(pieces()), res, () => {});
    return;
  }
  res.writeHead(200, { 'Content-Length': info.size, ...(own ? { 'Accept-Ranges': 'bytes' } : {}) });
  if (head) {
    res.end();
    return;
  }
  // pipeline ends the response, or destroys it (and the file) when either side fails.
  pipeline(createReadStream(path), res, () => {});
}
