// A body filter of a response: what its writer writes goes through a Transform (limit_rate's
// pacing, gzip's compression) and on to the socket through the write and end the response
// had before, with the Transform's backpressure as the response's. Filters stack: the
// later one wraps the earlier's write, so its output goes through the earlier filter.
import type { ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';

/** Routes what is written to `res` from here on through `t`: its 'drain' is the
 * response's, and its end ends it. `whole`: a body given whole to end() (nothing written
 * before) leaves the filter in one piece, as nginx's gzip makes one buffer of a body it
 * has whole (zlib's stream gives its header on its own first). */
export function filterBody(res: ServerResponse, t: Transform, whole = false): void {
  const write = res.write.bind(res) as (chunk: Buffer) => boolean;
  const end = res.end.bind(res) as (chunk?: Buffer) => void;
  let written = false;
  let gathered: Buffer[] | undefined;
  t.on('data', (chunk: Buffer) => {
    if (gathered) return void gathered.push(chunk);
    if (write(chunk)) return;
    t.pause();
    res.once('drain', () => t.resume());
  });
  t.on('end', () => end(gathered && Buffer.concat(gathered)));
  t.on('drain', () => res.emit('drain'));
  t.on('error', () => res.destroy());
  res.once('close', () => t.destroy());
  res.write = function (chunk: unknown, ...rest: unknown[]) {
    written = true;
    return (t.write as (...a: unknown[]) => boolean)(chunk, ...rest);
  } as ServerResponse['write'];
  res.end = function (...args: unknown[]) {
    const done = typeof args[args.length - 1] === 'function' ? (args.pop() as () => void) : undefined;
    if (done) res.once('finish', done);
    if (args[0] !== undefined && typeof args[0] !== 'function') {
      if (whole && !written) gathered = [];
      t.end(args[0], args[1] as BufferEncoding);
    } else t.end();
    return res;
  } as ServerResponse['end'];
}
