// The variable of nginx's gzip module.
import type { VariableTable } from '../../api/variables.js';
import type { HttpContext } from '../http/variables.js';
import { gzipRatio } from './ratio.js';

export const gzipVariables: VariableTable<HttpContext> = {
  names: {
    /** The compression ratio of the response ("3.14"), once it is compressed. */
    gzip_ratio: (c) => gzipRatio(c.res),
  },
};
