// The dashboard page (issue 18): one HTML file, its script and style inline, served by
// whichever server has a `dashboard` location (the primary's admin listener, a worker's
// data plane). Nothing is built and nothing comes from another site: the page's policy
// lets it load only itself and talk only to its own origin.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { apiError } from '../../api/errors.js';
import type { ApiResponse } from '../../api/types.js';

// Beside this module in the sources; the built module (dist/src/server/dashboard/) finds
// it in the sources too: tsc copies no HTML, and the page needs no build step.
const PLACES = [new URL('./dashboard.html', import.meta.url), new URL('../../../../src/server/dashboard/dashboard.html', import.meta.url)];

let template: string | undefined;

function page(): string {
  if (template !== undefined) return template;
  for (const place of PLACES) {
    try {
      return (template = readFileSync(place, 'utf8'));
    } catch {
      // the next place
    }
  }
  throw new Error(`the dashboard page is missing: looked for ${PLACES.map((p) => p.pathname).join(' and ')}`);
}

/** The sha256 sources of every inline element `tag` of the page, for its policy. */
function hashes(html: string, tag: 'script' | 'style'): string {
  const re = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g');
  return [...html.matchAll(re)].map((m) => `'sha256-${createHash('sha256').update(m[1]).digest('base64')}'`).join(' ');
}

export class Dashboard {
  private readonly body: Buffer;
  private readonly headers: Record<string, string>;

  /** `api`: the URI prefix of the API's root on this server (`dashboard`'s argument);
   * `push`: the server pushes (an admin listener, on uWebSockets.js), so the page reads
   * over a WebSocket rather than polling. */
  constructor(api: string, push: boolean) {
    const html = page().replace('__ZONAL_API__', api).replace('__ZONAL_PUSH__', push ? 'websocket' : 'poll');
    this.body = Buffer.from(html);
    this.headers = {
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-cache',
      // Only its own inline script and style run; it connects only to its own origin (the
      // API), and no other site may frame it (it edits the configuration).
      'Content-Security-Policy': `default-src 'none'; script-src ${hashes(html, 'script')}; style-src ${hashes(html, 'style')}; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Content-Length': String(this.body.length),
    };
  }

  /** The answer to a request at the location: the page for GET and HEAD. */
  response(method: string): ApiResponse {
    const head = method === 'HEAD';
    if (method !== 'GET' && !head) return apiError(405, 'MethodNotAllowed', `The ${method} method is not allowed for the dashboard page.`, false, { Allow: 'GET, HEAD' });
    return { status: 200, headers: this.headers, body: head ? '' : this.body };
  }

  /** response(), written to a node:http response. */
  send(res: ServerResponse, method: string): void {
    const r = this.response(method);
    res.writeHead(r.status, r.headers);
    res.end(r.body);
  }
}
