// gzip_static: a file's precompressed copy (`<file>.gz` beside it) answers in its place
// when the client takes gzip (`on`), or whatever it takes (`always`).
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GzipConfig } from './config.js';
import { gzipOk, varyOnEncoding } from './filter.js';

/** The `.gz` file to answer with instead of `path`, or undefined to serve `path`. A `.gz`
 * that exists makes the answer vary on Accept-Encoding either way, as in nginx.
 * `get`: answered as a GET whatever the method (an error page). */
export async function gzipStatic(req: IncomingMessage, res: ServerResponse, path: string, config: GzipConfig | undefined, get: boolean): Promise<string | undefined> {
  if (!config || config.static === 'off' || (req.method !== 'GET' && req.method !== 'HEAD' && !get)) return undefined;
  // Before any response header exists: gzip_proxied sees none.
  const ok = config.static === 'always' || gzipOk(req, config, () => undefined);
  if (!ok && !config.vary) return undefined;
  const gz = `${path}.gz`;
  try {
    if (!(await stat(gz)).isFile()) return undefined;
  } catch {
    return undefined;
  }
  varyOnEncoding(res);
  return ok ? gz : undefined;
}
