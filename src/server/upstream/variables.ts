// The variables of nginx's upstream module: what the peers a request tried gave, one
// entry per peer in order (`, ` between them), as far as the request went.
import type { VariableTable } from '../../api/variables.js';
import { seconds } from '../core/time.js';
import { attemptsOf, type UpstreamAttempt } from '../log/upstream-trace.js';
import type { HttpContext } from '../http/variables.js';

function upstreamList(c: HttpContext, each: (a: UpstreamAttempt) => string): string | undefined {
  const u = c.upstream ?? (c.res && attemptsOf(c.res));
  if (!u?.length) return undefined;
  let out = each(u[0]);
  for (let i = 1; i < u.length; i++) out += `, ${each(u[i])}`;
  return out;
}

const time = (ms: number) => (ms < 0 ? '-' : seconds(ms));

/** `$upstream_http_<name>`: a header of the last peer's response, as nginx keeps only the
 * last upstream's headers (`x_accel_redirect` names X-Accel-Redirect). */
function upstreamHeader(c: HttpContext, name: string): string | undefined {
  const u = c.upstream ?? (c.res && attemptsOf(c.res));
  const headers = u?.[u.length - 1]?.headers;
  if (!headers) return undefined;
  for (let i = 0; i < headers.length; i += 2) if (headers[i].length === name.length && headers[i].toLowerCase() === name) return headers[i + 1];
  return undefined;
}

export const upstreamVariables: VariableTable<HttpContext> = {
  names: {
    upstream_addr: (c) => upstreamList(c, (a) => a.address),
    upstream_status: (c) => upstreamList(c, (a) => (a.status ? String(a.status) : '-')),
    upstream_response_time: (c) => upstreamList(c, (a) => time(a.responseMs)),
    upstream_connect_time: (c) => upstreamList(c, (a) => time(a.connectMs)),
    upstream_header_time: (c) => upstreamList(c, (a) => time(a.headerMs)),
    upstream_bytes_received: (c) => upstreamList(c, (a) => String(a.received)),
    upstream_bytes_sent: (c) => upstreamList(c, (a) => String(a.sent)),
  },
  prefixes: [
    ['upstream_http_', (n) => {
      const name = n.toLowerCase().replace(/_/g, '-');
      return (c) => upstreamHeader(c, name);
    }],
  ],
};

/** Whether a value that names it needs the proxy to record its attempts. */
export const isAttemptVariable = (name: string): boolean => name.startsWith('upstream_') && name !== 'upstream_cache_status';
