// The variable of nginx's proxy cache.
import type { VariableTable } from '../../api/variables.js';
import type { HttpContext } from '../http/variables.js';

export const cacheVariables: VariableTable<HttpContext> = {
  names: {
    /** HIT, MISS, EXPIRED, ... once the cache decided. */
    upstream_cache_status: (c) => c.upstreamCacheStatus,
  },
};
