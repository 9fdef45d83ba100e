// A response's gzip state, and $gzip_ratio read from it: apart from the filter so that the
// variable table (config/variables.ts) loads without the gzip module's configuration.
import type { ServerResponse } from 'node:http';
import type { Gzip } from 'node:zlib';
import type { GzipConfig } from './config.js';

export const GZIP = Symbol('zonal.gzip');

/** A response's gzip state. */
export interface GzipState {
  /** The settings of the place answering (the last one entered); absent: it has none. */
  config: GzipConfig | undefined;
  /** nginx's r->gzip_vary: the answer depends on Accept-Encoding (`Vary` with gzip_vary). */
  vary: boolean;
  /** The compressor, whose input count and the bytes out of it give $gzip_ratio;
   * absent: not compressed. */
  zlib?: Gzip;
  zout: number;
}

export type Filtered = ServerResponse & { [GZIP]?: GzipState };

/** `$gzip_ratio`: the compression ratio, as nginx prints it ("3.14"); not found when the
 * response was not compressed. */
export function gzipRatio(res: ServerResponse | undefined): string | undefined {
  const state = res && (res as Filtered)[GZIP];
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
