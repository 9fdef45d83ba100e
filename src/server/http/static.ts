// `root`: static files, as nginx's static module serves them. GET and HEAD only; a
// directory is answered by its index.html when the URI ends with '/', and redirected to
// the URI with '/' otherwise.
import { createReadStream, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { pipeline } from 'node:stream';
import { sendPage, sendRedirect } from './pages.js';
import { contentType, type CoreSettings } from './core/config.js';

async function statOrUndefined(path: string): Promise<Stats | { error: string }> {
  try {
    return await stat(path);
  } catch (e) {
    return { error: (e as NodeJS.ErrnoException).code ?? 'EIO' };
  }
}

/** Serves `uri` (decoded, normalised: no `..`) from `root`, typed by the location's
 * `types` and `default_type` (`core`; nginx's defaults without it). */
export async function serveStatic(root: string, uri: string, req: IncomingMessage, res: ServerResponse, core?: CoreSettings): Promise<void> {
  const head = req.method === 'HEAD';
  if (req.method !== 'GET' && !head) {
    sendPage(res, 405, false, { Allow: 'GET, HEAD' });
    return;
  }
  let path = join(root, uri);
  let info = await statOrUndefined(path);
  if (!('error' in info) && info.isDirectory()) {
    if (!uri.endsWith('/')) {
      sendRedirect(req, res, uri + '/');
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
    sendPage(res, code, head);
    return;
  }
  res.writeHead(200, {
    'Content-Type': contentType(core, path),
    'Content-Length': info.size,
    'Last-Modified': info.mtime.toUTCString(),
  });
  if (head) {
    res.end();
    return;
  }
  // pipeline ends the response, or destroys it (and the file) when either side fails.
  pipeline(createReadStream(path), res, () => {});
}
