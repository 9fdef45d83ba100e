// nginx's checks of a request's head that node's parser leaves to the server: the host
// (from an absolute-form target, else the Host header), the framing of the body, and the
// methods nginx refuses before looking for a location.
import type { IncomingMessage } from 'node:http';
import type { CoreSettings } from './config.js';

/** nginx's own code for a header too large for its buffers, answered as a 400. */
export const HEADER_TOO_LARGE = 494;

/** nginx's page of a 400 that says why (its codes 494 to 497), with zonal's footer as
 * errorPage has. */
export const badRequestPage = (why: string): string =>
  `<html>\r\n<head><title>400 ${why}</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<center>${why}</center>\r\n<hr><center>zonal</center>\r\n</body>\r\n</html>\r\n`;

/** nginx's page for it. */
export const HEADER_TOO_LARGE_PAGE = badRequestPage('Request Header Or Cookie Too Large');

/**
 * A host as nginx's ngx_http_validate_host keeps it: lowercase, without its port and
 * final dot; undefined when nginx answers 400 (empty, two dots in a row, a `/`, a control
 * character or a space).
 */
export function validateHost(raw: string): string | undefined {
  const n = raw.length;
  let dot = -2;
  let hostLength = n;
  // 0: the name, 1: an IP literal in brackets, 2: past the name (the port).
  let state = 0;
  let upper = false;
  for (let i = 0; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x2e /* . */) {
      if (dot === i - 1) return undefined;
      dot = i;
    } else if (c === 0x3a /* : */) {
      if (state === 0) {
        hostLength = i;
        state = 2;
      }
    } else if (c === 0x5b /* [ */) {
      if (i === 0) state = 1;
    } else if (c === 0x5d /* ] */) {
      if (state === 1) {
        hostLength = i + 1;
        state = 2;
      }
    } else if (c === 0x2f /* / */ || c <= 0x20 || c === 0x7f) return undefined;
    else if (c >= 0x41 && c <= 0x5a) upper = true;
  }
  if (dot === hostLength - 1) hostLength--;
  if (hostLength <= 0) return undefined;
  const host = hostLength === n ? raw : raw.slice(0, hostLength);
  return upper ? host.toLowerCase() : host;
}

/** The status nginx answers a request's head with before any location, or 0. Rewrites
 * an absolute-form target to its path, and the Host to the host nginx serves (`$host`,
 * the server name looked up): the target's, else the header's without its final dot. */
export function checkHead(req: IncomingMessage, core: CoreSettings): number {
  const url = req.url ?? '/';
  const line = core.largeClientHeaderBuffers.size;
  // A request line or a header longer than one of nginx's large buffers: node's parser
  // only limits the whole head (maxHeaderSize).
  if ((req.method?.length ?? 0) + url.length + 12 > line) return 414;
  const raw = req.rawHeaders;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name.length + raw[i + 1].length + 4 > line) return HEADER_TOO_LARGE;
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
  }
  // nginx: "client sent duplicate host header".
  if (hosts > 1) return 400;
  if (url.charCodeAt(0) !== 0x2f /* / */) {
    const absolute = /^https?:\/\/([^/?#]*)(.*)$/i.exec(url);
    if (absolute) {
      const host = validateHost(absolute[1]);
      // nginx checks the Host header too, though the target's host is the one served.
      if (host === undefined || (hosts === 1 && validateHost(req.headers.host!) === undefined)) return 400;
      req.url = absolute[2] === '' ? '/' : absolute[2].charCodeAt(0) === 0x3f /* ? */ ? `/${absolute[2]}` : absolute[2];
      req.headers.host = host;
    }
  } else if (hosts === 1) {
    const header = req.headers.host!;
    const host = validateHost(header);
    if (host === undefined) return 400;
    // The final dot goes (the same name with or without it is one server), and what
    // follows a second colon ("double port hack"): $host and server names see the host.
    if (header.charCodeAt(0) === 0x5b ? /\.(?::\d*)?$/.test(header) : !/^[^:]*[^:.](?::\d*)?$/.test(header)) req.headers.host = host;
  }
  const te = req.headers['transfer-encoding'];
  if (te !== undefined) {
    // nginx: "client sent HTTP/1.0 request with Transfer-Encoding header".
    if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) return 400;
    // nginx knows `chunked` alone: "client sent unknown Transfer-Encoding".
    if (te.length !== 7 || te.toLowerCase() !== 'chunked') return 501;
  }
  if (req.method === 'TRACE') return 405;
  return 0;
}
