// A response's send_timeout: the location's, kept on the response when it is not nginx's
// default (the plane's checks of responses in flight, and a tunnel's writes to the client
// after a 101, read it).
import type { ServerResponse } from 'node:http';
import { TOP_CORE } from './core/config.js';

const SEND_TIMEOUT = Symbol('zonal.send_timeout');
type Timed = ServerResponse & { [SEND_TIMEOUT]?: number };

export function setSendTimeout(res: ServerResponse, ms: number): void {
  if (ms !== TOP_CORE.sendTimeout) (res as Timed)[SEND_TIMEOUT] = ms;
}

/** Milliseconds. */
export function sendTimeoutOf(res: ServerResponse): number {
  return (res as Timed)[SEND_TIMEOUT] ?? TOP_CORE.sendTimeout;
}
