// A worker's /config writes when the configuration is kept in a store: the primary holds
// the store's one client (store.ts), so a write served by an `api` location of the data
// plane goes to it over the cluster channel, and its answer is the worker's. Nothing here
// loads the store's client: a worker never does.
import type { ConfigRequest } from '../../api/config.js';
import type { ApiResponse } from '../../api/types.js';
import { apiError } from '../../api/errors.js';
import type { ConfigAnswer, ConfigWrite } from '../messages.js';

/** The request as it crosses the channel. */
export function writeMessage(id: number, req: ConfigRequest): ConfigWrite {
  return {
    type: 'config-write',
    id,
    method: req.method,
    segments: [...req.segments],
    path: req.path,
    query: req.query.toString(),
    ...(req.body ? { body: Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength).toString('base64') } : {}),
    ...(req.contentType !== undefined ? { contentType: req.contentType } : {}),
    ...(req.ifMatch !== undefined ? { ifMatch: req.ifMatch } : {}),
    ...(req.ifNoneMatch !== undefined ? { ifNoneMatch: req.ifNoneMatch } : {}),
  };
}

/** The request a primary answers, from what crossed the channel. */
export function requestOf(m: ConfigWrite): ConfigRequest {
  return {
    method: m.method,
    segments: m.segments,
    path: m.path,
    query: new URLSearchParams(m.query),
    ...(m.body !== undefined ? { body: Buffer.from(m.body, 'base64') } : {}),
    ...(m.contentType !== undefined ? { contentType: m.contentType } : {}),
    ...(m.ifMatch !== undefined ? { ifMatch: m.ifMatch } : {}),
    ...(m.ifNoneMatch !== undefined ? { ifNoneMatch: m.ifNoneMatch } : {}),
  };
}

export function answerMessage(id: number, r: ApiResponse): ConfigAnswer {
  const body = typeof r.body === 'string' ? r.body : Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength).toString('utf8');
  return { type: 'config-answer', id, status: r.status, headers: r.headers, body };
}

/**
 * The worker's side: each write is sent with an id, and answered when the primary's
 * answer with that id comes back. A primary that does not answer within `timeout`
 * (plus the time a store's write may take) gets the write refused with 503.
 */
export function forwardToPrimary(timeout: number): (req: ConfigRequest) => Promise<ApiResponse> {
  const waiting = new Map<number, (r: ApiResponse) => void>();
  let next = 0;
  process.on('message', (m: { type?: string }) => {
    if (m.type !== 'config-answer') return;
    const a = m as ConfigAnswer;
    waiting.get(a.id)?.({ status: a.status, headers: a.headers, body: a.body });
  });
  return (req) =>
    new Promise((resolve) => {
      const id = ++next;
      const timer = setTimeout(
        () => done(apiError(503, 'ServiceUnavailable', `The configuration store's writer (the primary process) did not answer within ${timeout} ms: nothing was changed by this request unless its answer says so.`)),
        timeout,
      );
      const done = (r: ApiResponse) => {
        clearTimeout(timer);
        waiting.delete(id);
        resolve(r);
      };
      waiting.set(id, done);
      if (!process.send?.(writeMessage(id, req))) done(apiError(503, 'ServiceUnavailable', 'The configuration store\'s writer (the primary process) cannot be reached.'));
    });
}
