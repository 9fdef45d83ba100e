// limit_rate's pacing of a body, shared by the answers zonal makes (files) and the
// proxied ones (limit_rate, a peer's X-Accel-Limit-Rate).
import type { ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { filterBody } from './body-filter.js';

const RATE = Symbol('zonal.limitRate');
type Rated = IncomingMessage & { [RATE]?: number };

/** `$limit_rate` of a request: what `set $limit_rate` or its place's `limit_rate` made it,
 * in bytes per second; undefined until either did. */
export const requestRate = (req: IncomingMessage): number | undefined => (req as Rated)[RATE];

export function setRequestRate(req: IncomingMessage, rate: number): void {
  (req as Rated)[RATE] = rate;
}

/** Paces a body at `rate` bytes per second once `after` bytes went (`limit_rate`,
 * `limit_rate_after`), counted from its first byte. */
export function rateLimiter(rate: number, after: number): Transform {
  let start = 0;
  let sent = 0;
  let timer: NodeJS.Timeout | undefined;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (start === 0) start = performance.now();
      const step = () => {
        timer = undefined;
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

/** Paces what is written to `res` from here on (a proxied answer, which writes it piece
 * by piece and waits for 'drain' when told to). */
export function paceResponse(res: ServerResponse, rate: number, after: number): void {
  filterBody(res, rateLimiter(rate, after));
}
