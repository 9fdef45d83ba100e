// The peers a proxied request tried, for $upstream_addr, $upstream_status and the
// $upstream_*_time lists: kept on the response, and only when some value of the
// configuration (a log format, add_header...) names one of them (a request pays nothing
// otherwise).
import type { ServerResponse } from 'node:http';

/** What one upstream attempt left: nginx's $upstream_* lists, one per peer tried. */
export interface UpstreamAttempt {
  readonly address: string;
  /** 0 until the peer answered; 502 or 504 for an attempt that failed without one. */
  status: number;
  /** Milliseconds; -1 when the attempt did not get so far. */
  connectMs: number;
  /** Bytes read from the peer and sent to it. */
  received: number;
  sent: number;
  headerMs: number;
  responseMs: number;
  /** The peer's response headers (name, value, ...), for $upstream_http_<name>. */
  headers?: readonly string[];
}

const TRACE = Symbol('zonal.upstreamTrace');
type Traced = ServerResponse & { [TRACE]?: UpstreamAttempt[] };

let tracing = false;

/** Set when the values are compiled: some names an $upstream_* variable. */
export function traceUpstreams(on: boolean): void {
  tracing = on;
}

/** A new attempt at `address`; undefined when nothing logs attempts. `reused`: the
 * connection was open already, so connecting took no time. */
export function attemptStarted(res: ServerResponse, address: string, reused: boolean): UpstreamAttempt | undefined {
  if (!tracing) return undefined;
  const attempt: UpstreamAttempt = { address, status: 0, connectMs: reused ? 0 : -1, headerMs: -1, responseMs: -1, received: 0, sent: 0 };
  ((res as Traced)[TRACE] ??= []).push(attempt);
  return attempt;
}

/** The peer's response head came, `ms` after the attempt started; `connectMs`: when its
 * connection was up (-1: not yet known). */
export function attemptHeaders(a: UpstreamAttempt | undefined, status: number, ms: number, connectMs: number, headers: readonly string[]): void {
  if (!a) return;
  // A copy: the proxy takes headers out of its list in place.
  a.headers = headers.slice();
  a.status = status;
  a.headerMs = ms;
  if (a.connectMs < 0) a.connectMs = connectMs;
}

/** The attempt ended, `ms` after it started (its connection up after `connectMs`, -1 for
 * one that never was), with `received` and `sent` bytes; `failed`
 * is the status nginx records for an attempt that got no response (502, or 504 after a
 * timeout). */
export function attemptEnded(a: UpstreamAttempt | undefined, ms: number, connectMs: number, received: number, sent: number, failed?: number): void {
  if (!a) return;
  a.responseMs = ms;
  if (a.connectMs < 0) a.connectMs = connectMs;
  a.received = received;
  a.sent = sent;
  if (a.status === 0 && failed) a.status = failed;
}

export function attemptsOf(res: ServerResponse): readonly UpstreamAttempt[] | undefined {
  return (res as Traced)[TRACE];
}
