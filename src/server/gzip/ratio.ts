// A response's gzip state, and $gzip_ratio read from it: apart from the filter so that the
// variable table (config/variables.ts) loads without the gzip module's configuration.
import type { ServerResponse } from 'node:http';
import type { Gzip } from 'node:zlib';

export const GZIP = Symbol('zonal.gzip');

/** What $gzip_ratio reads of a response's gzip state (filter.ts's GzipState). */
export interface GzipCounts {
  /** The compressor, whose input count and the bytes out of it give $gzip_ratio;
   * absent: not compressed. */
  zlib?: Gzip;
  zout: number;
}

type Counted = ServerResponse & { [GZIP]?: GzipCounts };

/** `$gzip_ratio`: the compression ratio, as nginx prints it ("3.14"); not found when the
 * response was not compressed. */
export function gzipRatio(res: ServerResponse | undefined): string | undefined {
  const state = res && (res as Counted)[GZIP];
  if (!state?.zlib || state.zout === 0) return undefined;
  const zin = state.zlib.bytesWritten;
  const zout = state.zout;
  let whole = Math.floor(zin / zout);
  let frac = Math.floor((zin * 100) / zout) % 100;
  if (Math.floor((zin * 1000) / zout) % 10 > 4) {
    frac++;
    if (frac > 99) {
      whole++;
      frac = 0;
    }
  }
  return `${whole}.${String(frac).padStart(2, '0')}`;
}
