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
};

/** Whether a value that names it needs the proxy to record its attempts. */
export const isAttemptVariable = (name: string): boolean => name.startsWith('upstream_') && name !== 'upstream_cache_status';
