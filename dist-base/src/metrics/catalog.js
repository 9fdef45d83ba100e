// What the status tree contains: the configured server zones, upstreams, caches and so
// on. It lives in a seqlocked record of the status zone, written by the process that
// creates the zones (and rewritten on reload), so that any process can serve the API
// without having read the configuration itself.
/** The shared-memory zones the configuration implies besides the status zone itself:
 * what `/status/slabs` lists, in order. */
export function slabZones(c, workers) {
    const out = [];
    const seen = new Set();
    const add = (name, size, fallback) => {
        if (seen.has(name))
            return;
        seen.add(name);
        out.push({ name, size: size ?? fallback });
    };
    for (const cache of c.http?.caches ?? [])
        add(cache.name, cache.zoneSize, 1 << 20);
    for (const limit of c.http?.limitConns ?? [])
        add(limit.name, limit.zoneSize, 1 << 20);
    for (const limit of c.http?.limitReqs ?? [])
        add(limit.name, limit.zoneSize, 1 << 20);
    for (const u of c.http?.upstreams ?? [])
        add(u.zone ?? u.name, u.zoneSize, upstreamZoneBytes(u, workers));
    for (const limit of c.stream?.limitConns ?? [])
        add(limit.name, limit.zoneSize, 1 << 20);
    for (const u of c.stream?.upstreams ?? [])
        add(u.zone ?? u.name, u.zoneSize, upstreamZoneBytes(u, workers));
    return out;
}
/** Room for an upstream's peers, and as many again added at run time: a peer's counter
 * block takes about 1.4 KiB per worker. */
function upstreamZoneBytes(u, workers) {
    return Math.max(64 * 1024, 2 * u.peers.length * (workers * 1536 + 1024));
}
/** The key a peer is known by: its canonical address. */
export function peerName(p) {
    return p.name ?? p.server;
}
//# sourceMappingURL=catalog.js.map