// limit_rate's pacing of a body, shared by the answers zonal makes (files) and the
// proxied ones (limit_rate, a peer's X-Accel-Limit-Rate, proxy_limit_rate). As in nginx
// since 1.17.0, the rate of an answer is the one in force where its body is written: the
// location that serves it (an internal redirect's, an X-Accel-Redirect's), unless the
// request set its own (`set $limit_rate`, a peer's X-Accel-Limit-Rate).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { filterBody } from './body-filter.js';

const RATE = Symbol('zonal.limitRate');
type Rated = IncomingMessage & { [RATE]?: number };

/** `$limit_rate` of a request: the rate `set $limit_rate` or a peer's X-Accel-Limit-Rate
 * gave it, in bytes per second; undefined when neither did (its place's applies). */
export const requestRate = (req: IncomingMessage): number | undefined => (req as Rated)[RATE];

export function setRequestRate(req: IncomingMessage, rate: number): void {
  (req as Rated)[RATE] = rate;
}

/** A rate and the bytes that go before it applies, read at each step: a later place of
 * the same answer may change them. A rate of 0 lets everything through. */
export interface Pace {
  rate: number;
  after: number;
}

/** Paces a body at `pace.rate` bytes per second once `pace.after` bytes went
 * (`limit_rate`, `limit_rate_after`), counted from its first byte. */
export function rateLimiter(pace: Pace): Transform {
  let start = 0;
  let sent = 0;
  let timer: NodeJS.Timeout | undefined;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (start === 0) start = performance.now();
      const step = () => {
        timer = undefined;
        const { rate, after } = pace;
        if (rate <= 0) {
          sent += chunk.length;
          this.push(chunk);
          return done();
        }
        const allowed = Math.floor(after + (rate * (performance.now() - start)) / 1000) - sent;
        if (allowed <= 0) {
          // When the next 1/20 of a second's worth may go: nginx sends in bursts too.
          const next = ((sent + Math.max(1, Math.floor(rate / 20)) - after) / rate) * 1000 - (performance.now() - start);
          timer = setTimeout(step, Math.max(1, Math.ceil(next)));
          return;
        }
        const n = Math.min(allowed, chunk.length);
        this.push(chunk.subarray(0, n));
        sent += n;
        chunk = chunk.subarray(n);
        if (chunk.length === 0) done();
        else step();
      };
      step();
    },
    destroy(error, done) {
      if (timer) clearTimeout(timer);
      done(error);
    },
  });
}

const PACE = Symbol('zonal.pace');
type Paced = ServerResponse & { [PACE]?: Pace };

/** Paces what is written to `res` from here on at `rate` after `after` bytes; a response
 * paced already takes the new values (the place that now serves it). */
export function paceResponse(res: ServerResponse, rate: number, after: number): void {
  const held = (res as Paced)[PACE];
  if (held) {
    held.rate = rate;
    held.after = after;
    return;
  }
  if (rate <= 0) return;
  const pace: Pace = { rate, after };
  (res as Paced)[PACE] = pace;
  filterBody(res, rateLimiter(pace));
}
