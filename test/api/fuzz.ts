// Deterministic generators for the API fuzz tests: a seeded PRNG and the path segments,
// queries and methods they pick from (test/api/robustness.test.ts in-process,
// test/server/api-fuzz.test.ts over both transports of the zonal server).

/** A seeded generator (mulberry32): the same seed, the same sequence; `rnd(n)` is in [0, n). */
export function prng(seed: number): { rnd: (n: number) => number; pick: <T>(xs: readonly T[]) => T } {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let z = Math.imul(s ^ (s >>> 15), s | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 2 ** 32;
  };
  const rnd = (n: number) => Math.floor(next() * n);
  return { rnd, pick: (xs) => xs[rnd(xs.length)] };
}

/** Path segments: real names of the tree, traversal, bad percent-encoding, long and odd names. */
export const SEGMENTS = ['status', 'http', 'server_zones', 'site', 'ssl', 'requests', 'total', 'upstreams', 'u', 'peers', '127.0.0.1:1',
  'health', 'probes', 'caches', 'c', 'shards', 'slabs', 'slots', '8', 'stream', 'resolvers', 'r', '..', '.', '', '%2e%2e', '%2F',
  '%zz', '%00', '\u00e9', 'x'.repeat(300), 'constructor', '__proto__', 'toString', 'hasOwnProperty'];

export const QUERIES = ['', 'pretty=off', 'pretty', 'date=epoch', 'format=prometheus', 'format=xml', 'format=', 'z=site', 'z=../..', '%zz=1', 'a=%ff'];

export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'BREW', ''];

/** A path of up to `depth` random segments under one of `prefixes`. */
export function randomPath(g: ReturnType<typeof prng>, prefixes: readonly string[], depth = 6): string {
  return g.pick(prefixes) + '/' + Array.from({ length: g.rnd(depth) }, () => g.pick(SEGMENTS)).join('/');
}
