// Live answers (issue 18): a read asked for as a stream is answered once now, with the way
// to answer it again every `interval` milliseconds. The transports push and pace; this
// only says what is pushed and how often, so both the JSON and the text format, and
// every query parameter a GET takes, stream as they read.
import { apiError, pathNotFound } from './errors.js';
import type { ApiRequest, ApiResponse } from './types.js';

export const INTERVAL_DEFAULT = 1000;
/** Below this, a dashboard gains nothing a person can see, and each subscriber costs more. */
export const INTERVAL_MIN = 100;
/** An hour: longer is a typo, or what a plain GET now and then does better. */
export const INTERVAL_MAX = 3_600_000;

// Each API instance has its own mounts: equal paths of two instances may name different
// elements, so a stream's key names its instance.
let instances = 0;

/** The `interval` a stream request asks for, or why it is not valid. */
export function parseInterval(values: readonly string[]): number | string {
  if (values.length === 0) return INTERVAL_DEFAULT;
  if (values.length > 1) return 'The "interval" argument is given more than once.';
  const text = values[0];
  const n = /^\d{1,10}$/.test(text) ? Number(text) : NaN;
  if (!(n >= INTERVAL_MIN && n <= INTERVAL_MAX))
    return `The interval "${text}" is not valid: it is a whole number of milliseconds from ${INTERVAL_MIN} to ${INTERVAL_MAX}.`;
  return n;
}

/**
 * Wraps an API handler so that a GET with `stream` set is answered as a stream: the
 * first answer, and a `stream` member that gives the same read again. The read is the
 * request without `interval`, in compact JSON unless it asks for `pretty`: one JSON text
 * is then one line, one Server-Sent Event's `data:`. Errors (a bad interval, a path that
 * does not exist) are answered as a GET's errors are, and start no stream.
 */
export function liveAnswers(answer: (request: ApiRequest) => ApiResponse | undefined): (request: ApiRequest) => ApiResponse | undefined {
  const id = ++instances;
  return (request) => {
    if (request.method !== 'GET') return answer({ ...request, stream: false });
    const query = new URLSearchParams(request.query);
    const interval = parseInterval(query.getAll('interval'));
    query.delete('interval');
    if (!query.has('pretty')) query.set('pretty', 'off');
    const read: ApiRequest = {
      method: 'GET',
      path: request.path,
      query: query.toString(),
      address: request.address,
      ...(request.host !== undefined ? { host: request.host } : {}),
      ...(request.secure ? { secure: true } : {}),
      ...(request.captures ? { captures: request.captures } : {}),
    };
    const first = answer(read);
    // No mount of this API takes the path: whoever is in front answers it.
    if (first === undefined) return undefined;
    if (typeof interval === 'string') {
      first.release?.();
      return apiError(400, 'BadRequest', interval);
    }
    if (first.status !== 200) return first;
    const key = `${id} ${read.path}?${read.query} ${read.host ?? ''} ${read.address} ${read.captures?.join('/') ?? ''}`;
    return { ...first, stream: { key, interval, next: () => answer(read) ?? pathNotFound(read.path) } };
  };
}
