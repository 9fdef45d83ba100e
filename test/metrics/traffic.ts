// The traffic each family's test records, once in the test process and once in a forked
// worker (test/fixtures/families.ts): the sums must come out exactly twice one run's.
import { cache } from '../../src/metrics/caches.js';
import { httpLimitConns, httpLimitReqs, streamLimitConns } from '../../src/metrics/limits.js';
import { resolver } from '../../src/metrics/resolvers.js';
import type { Status } from '../../src/metrics/status.js';
import { streamZone } from '../../src/metrics/stream-zones.js';

export const traffic = {
  resolvers(status: Status): void {
    const r = resolver(status, 'res_local');
    for (let i = 0; i < 3; i++) r.query('name');
    r.query('srv');
    r.query('addr');
    r.query('addr');
    r.response(0);
    r.response(0);
    for (const rcode of [1, 2, 3, 3, 4, 5, 6, 15, -1]) r.response(rcode);
    r.timedOut();
    resolver(status, 'res_other').query('srv');
  },

  stream(status: Status): void {
    const front = streamZone(status, 's_front');
    for (let i = 0; i < 10; i++) front.connectionStarted();
    for (let i = 0; i < 3; i++) front.sessionEnded(200, 5, 96);
    for (const code of [400, 403, 500, 502, 503] as const) front.sessionEnded(code, 1, 0);
    front.connectionDiscarded(2, 0);
    // one connection stays open
    front.sslHandshaked(false); // the server does not listen with SSL: not shown
    const tls = streamZone(status, 's_tls');
    tls.connectionStarted();
    tls.sslHandshaked(false);
    tls.sslHandshaked(true);
    tls.sslTimedOut();
    tls.sslFailed();
    tls.sessionEnded(200, 10, 20);
  },

  caches(status: Status): void {
    const p = cache(status, 'pcache');
    p.served('miss', 11, 11);
    p.served('miss', 7); // not written to the cache
    p.served('hit', 11);
    p.served('hit', 11);
    p.served('stale', 3);
    p.served('updating', 4);
    p.served('revalidated', 5);
    p.served('expired', 20, 0);
    p.served('bypass', 30);
    p.served('hit', 2, 99); // `written` means nothing for a hit
    p.sizeChanged(8192);
    p.sizeChanged(4096);
    p.sizeChanged(-4096);
    const s = cache(status, 'sharded');
    s.sizeChanged(100, '/var/cache/a');
    s.sizeChanged(50, '/var/cache/b');
    s.sizeChanged(-10, '/var/cache/b');
    s.served('miss', 1000, 1000);
  },

  /** Another process's cache loader starts: what it sets, every process sees. */
  cacheLoader(status: Status): void {
    cache(status, 'plain').setCold(true);
    cache(status, 'sharded').setCold(true, '/var/cache/a');
  },

  limits(status: Status): void {
    const conn = httpLimitConns.recorder(status, 'perip_conn');
    conn.passed();
    conn.rejected();
    conn.rejected();
    conn.skipped();
    conn.exhausted();
    const req = httpLimitReqs.recorder(status, 'perip_req');
    req.passed();
    req.passed();
    req.delayed();
    for (let i = 0; i < 3; i++) req.rejected();
    req.skipped();
    const s = streamLimitConns.recorder(status, 's_perip');
    for (let i = 0; i < 5; i++) s.passed();
    // A stream limit named like an HTTP one: same zone, its own counters.
    streamLimitConns.recorder(status, 'perip_conn').exhausted();
  },
};

export type Family = keyof typeof traffic;
