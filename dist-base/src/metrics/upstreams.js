import { peerName } from './catalog.js';
import { CLAIMED, RESPONSE_COUNTERS, responseEntries, responseIndex } from './responses.js';
import { entries, group, leaf, time, Layout } from './shape.js';
import { collection, FieldNode, ObjectNode } from './tree.js';
/** Shared peer states, in a cell all workers agree on. `down` comes from configuration. */
export const PeerState = { up: 0, unavailable: 1, unhealthy: 2, checking: 3, recovering: 4 };
const STATE_NAMES = ['up', 'unavailable', 'unhealthy', 'checking', 'recovering'];
// The text format's numbers for states (DESIGN.md).
const STATE_NUMBERS = { up: 1, down: 2, unavailable: 3, recovering: 4, unhealthy: 5, checking: 6 };
function averageOf(s, avg) {
    return Math.round(s.block.weightedMean(avg.value, avg.samples));
}
// No average: the other protocol's timings, which take no memory.
const NO_AVERAGE = { value: -1, samples: -1 };
function peerLayout(protocol) {
    const layout = new Layout();
    // Only the protocol's own timings take words: a peer's block is kept within 2 KiB for
    // two workers, half a page, so that a render reads half as many pages.
    const average = (own) => (own === protocol ? { value: layout.reserve(1), samples: layout.reserve(1) } : NO_AVERAGE);
    const l = {
        current: layout.gauge('current', 'Current connections to the peer.'),
        total: layout.counter('total', protocol === 'http' ? 'Requests forwarded to the peer.' : 'Connections forwarded to the peer.'),
        last: layout.reserve(1),
        responses: protocol === 'http' ? layout.reserve(RESPONSE_COUNTERS) : -1,
        received: layout.counter('received', 'Bytes received from the peer.'),
        sent: layout.counter('sent', 'Bytes sent to the peer.'),
        fails: layout.counter('fails', 'Unsuccessful attempts to communicate with the peer.'),
        unavailable: layout.counter('unavailable', 'Times the peer became unavailable by reaching max_fails.'),
        downtime: layout.reserve(1),
        downstart: layout.reserve(1),
        probeCount: layout.counter('count', 'Health probes made.'),
        probeFails: layout.counter('fails', 'Failed health probes.'),
        probeLast: layout.reserve(1),
        headerTime: average('http'),
        responseTime: average('http'),
        connectTime: average('stream'),
        firstByteTime: average('stream'),
        lastByteTime: average('stream'),
    };
    return { layout, l };
}
function peerFields(protocol) {
    const { layout, l } = peerLayout(protocol);
    const state = (s) => (s.peer.down ? 'down' : (STATE_NAMES[s.state] ?? 'up'));
    const downtime = (s, ctx) => {
        const past = s.sums[l.downtime];
        // While unavailable, the time since it went down counts too.
        return s.state === PeerState.unavailable ? past + Math.max(0, ctx.now - s.block.max(l.downstart)) : past;
    };
    const avg = (name, a, help) => leaf(name, help, (s) => averageOf(s, a), 'gauge');
    const health = [
        leaf('fails', 'Unsuccessful attempts to communicate with the peer.', (s) => s.sums[l.fails.index], 'counter'),
        leaf('unavailable', 'Times the peer became unavailable by reaching max_fails.', (s) => s.sums[l.unavailable.index], 'counter'),
        leaf('downtime', 'Milliseconds the peer was unavailable for selection.', downtime, 'counter'),
        time('downstart', 'When the peer became unavailable.', (s) => s.block.max(l.downstart)),
    ];
    if (protocol === 'http')
        health.push(avg('header_time', l.headerTime, 'Average milliseconds to receive response headers.'), avg('response_time', l.responseTime, 'Average milliseconds to receive the whole response.'));
    else
        health.push(avg('connect_time', l.connectTime, 'Average milliseconds to connect to the peer.'), avg('first_byte_time', l.firstByteTime, 'Average milliseconds to the first byte of the response.'), avg('last_byte_time', l.lastByteTime, 'Average milliseconds to the whole response.'));
    health.push(group('probes', [l.probeCount, l.probeFails, time('last', 'Time of the last health probe.', (s) => s.block.max(l.probeLast))], (s) => !!s.upstream.probes));
    const fields = [
        leaf('server', 'The server parameter as configured.', (s) => s.peer.server),
        leaf('service', 'Service name of the server directive.', (s) => s.peer.service),
        leaf('slow_start', 'Configured slow start, in seconds.', (s) => s.peer.slowStart ?? 0),
        leaf('backup', 'Whether the peer is a backup server.', (s) => !!s.peer.backup, 'gauge'),
        leaf('weight', 'Configured weight.', (s) => s.peer.weight ?? 1, 'gauge'),
        {
            ...leaf('state', 'State: 1 up, 2 down, 3 unavailable, 4 recovering, 5 unhealthy, 6 checking.', state, 'gauge'),
            numeric: (v) => STATE_NUMBERS[String(v)] ?? 0,
        },
        group('selected', [l.current, l.total, time('last', 'When the peer was last selected.', (s) => s.block.max(l.last))]),
        leaf('max_conns', 'Configured maximum simultaneous connections.', (s) => s.peer.maxConns || undefined, 'gauge'),
    ];
    if (protocol === 'http')
        fields.push(entries('responses', 'code', 'counter', 'Responses from the peer by status code.', (s) => responseEntries(s.sums, l.responses, s.claims)));
    fields.push(group('data', [l.received, l.sent]), group('health', health));
    if (protocol === 'http')
        fields.push(leaf('sid', 'Configured id of the server in its upstream.', (s) => s.peer.sid));
    return { fields: group('', fields), size: layout.size, l };
}
const http = peerFields('http');
const stream = peerFields('stream');
export const httpPeerFields = http.fields;
export const streamPeerFields = stream.fields;
const upstreamLayout = new Layout();
const keepalive = upstreamLayout.gauge('keepalive', 'Cached keep-alive connections to the upstream.');
const queue = {
    queued: upstreamLayout.counter('queued', 'Requests that entered the queue.'),
    waiting: upstreamLayout.gauge('waiting', 'Requests in the queue now.'),
    dropped: upstreamLayout.counter('dropped', 'Requests removed because the client closed the connection.'),
    timedout: upstreamLayout.counter('timedout', 'Requests removed because of the queue timeout.'),
    overflows: upstreamLayout.counter('overflows', 'Times the queue overflowed.'),
};
const queueFields = group('queue', Object.values(queue), (s) => !!s.upstream.queue);
const zoneOf = (u) => u.zone ?? u.name;
const peerKey = (name) => `peer/${name}`;
const UPSTREAM_KEY = 'upstream';
function upstreams(status, protocol) {
    const c = status.catalog();
    return (protocol === 'http' ? c.http?.upstreams : c.stream?.upstreams) ?? [];
}
/** What a worker calls as it uses a peer. */
export class Peer {
    constructor(block, cells, claims, l, factor) {
        this.block = block;
        this.cells = cells;
        this.claims = claims;
        this.l = l;
        this.factor = factor;
    }
    /** The balancer chose this peer for a request (HTTP) or a connection (stream). */
    selected(now = Date.now()) {
        this.block.add(this.l.total.index);
        this.block.add(this.l.current.index);
        this.block.set(this.l.last, now);
    }
    /** The request or connection to the peer ended, however it ended. */
    released() {
        this.block.sub(this.l.current.index);
    }
    /** HTTP: the peer's response, its bytes, and how long headers and body took (ms). */
    responded(status, received, sent, headerMs, responseMs) {
        const b = this.block;
        if (this.claims)
            b.add(this.l.responses + responseIndex(status, this.claims));
        b.add(this.l.received.index, received);
        b.add(this.l.sent.index, sent);
        this.sample(this.l.headerTime, headerMs);
        this.sample(this.l.responseTime, responseMs);
    }
    /** Stream: the session's bytes and timings (ms). */
    sessionEnded(received, sent, connectMs, firstByteMs, lastByteMs) {
        this.block.add(this.l.received.index, received);
        this.block.add(this.l.sent.index, sent);
        this.sample(this.l.connectTime, connectMs);
        this.sample(this.l.firstByteTime, firstByteMs);
        this.sample(this.l.lastByteTime, lastByteMs);
    }
    /** An attempt to talk to the peer failed. */
    failed() {
        this.block.add(this.l.fails.index);
    }
    /** The peer reached max_fails. Only the worker that makes the change counts it. */
    becameUnavailable(now = Date.now()) {
        if (this.cells.compareExchange(0, PeerState.up, PeerState.unavailable) !== PeerState.up)
            return false;
        this.block.add(this.l.unavailable.index);
        this.block.set(this.l.downstart, now);
        return true;
    }
    /** The peer is selectable again after being unavailable. */
    becameAvailable(now = Date.now()) {
        if (this.cells.compareExchange(0, PeerState.unavailable, PeerState.up) !== PeerState.unavailable)
            return false;
        this.block.add(this.l.downtime, Math.max(0, Math.round(now - this.block.max(this.l.downstart))));
        return true;
    }
    /** A probe-driven state: unhealthy, checking, recovering or up. */
    setState(state) {
        this.cells.store(0, state);
    }
    get state() {
        return this.cells.load(0);
    }
    probed(ok, now = Date.now()) {
        this.block.add(this.l.probeCount.index);
        if (!ok)
            this.block.add(this.l.probeFails.index);
        this.block.set(this.l.probeLast, now);
    }
    sample(avg, ms) {
        const n = this.block.own(avg.samples);
        this.block.set(avg.value, n === 0 ? ms : this.block.own(avg.value) * this.factor + ms * (1 - this.factor));
        this.block.add(avg.samples);
    }
}
/** What a worker calls for the upstream as a whole. */
export class Upstream {
    constructor(block) {
        this.block = block;
    }
    keepaliveCached() {
        this.block.add(keepalive.index);
    }
    keepaliveUsed() {
        this.block.sub(keepalive.index);
    }
    queued() {
        this.block.add(queue.queued.index);
        this.block.add(queue.waiting.index);
    }
    /** The request left the queue for a peer. */
    dequeued() {
        this.block.sub(queue.waiting.index);
    }
    queueDropped() {
        this.block.add(queue.dropped.index);
        this.block.sub(queue.waiting.index);
    }
    queueTimedOut() {
        this.block.add(queue.timedout.index);
        this.block.sub(queue.waiting.index);
    }
    queueOverflowed() {
        this.block.add(queue.overflows.index);
    }
}
function find(status, protocol, name) {
    const u = upstreams(status, protocol).find((x) => x.name === name);
    if (!u)
        throw new Error(`no ${protocol} upstream "${name}" with a zone is configured`);
    return u;
}
function peerStorage(status, protocol, u, name) {
    const spec = protocol === 'http' ? http : stream;
    const zone = zoneOf(u);
    return {
        block: status.gauges(zone, peerKey(name), spec.size),
        cells: status.cells(zone, `${peerKey(name)}/state`, 1),
        claims: protocol === 'http' ? status.cells(zone, `${peerKey(name)}/codes`, CLAIMED) : undefined,
    };
}
// Peers written one after another in a render share one source object and one array
// for their sums.
const reused = {};
let peerScratch = new Float64Array(0);
function scratchFor(length) {
    if (peerScratch.length < length)
        peerScratch = new Float64Array(length);
    return peerScratch;
}
// One array of sums per peer of the upstream being written, reused from one upstream to
// the next.
let peerSums = [];
let peerStates = new Int32Array(0);
function sumsFor(peers, length) {
    if (peerSums.length < peers || (peerSums[0]?.length ?? 0) < length)
        peerSums = Array.from({ length: Math.max(peers, peerSums.length) }, () => new Float64Array(Math.max(length, peerSums[0]?.length ?? 0)));
    if (peerStates.length < peers)
        peerStates = new Int32Array(peers);
    return peerSums;
}
const storageOf = new WeakMap();
function cachedStorage(status, protocol, u) {
    let s = storageOf.get(u);
    if (!s) {
        s = {
            peers: u.peers.map((p) => peerStorage(status, protocol, u, peerName(p))),
            block: status.gauges(zoneOf(u), UPSTREAM_KEY, upstreamLayout.size),
        };
        storageOf.set(u, s);
    }
    return s;
}
export function peer(status, protocol, upstream, name) {
    const u = find(status, protocol, upstream);
    if (!u.peers.some((p) => peerName(p) === name))
        throw new Error(`upstream "${upstream}" has no peer "${name}"`);
    const { block, cells, claims } = peerStorage(status, protocol, u, name);
    return new Peer(block, cells, claims, (protocol === 'http' ? http : stream).l, (u.responseTimeFactor ?? 90) / 100);
}
export function upstream(status, protocol, name) {
    const u = find(status, protocol, name);
    return new Upstream(status.gauges(zoneOf(u), UPSTREAM_KEY, upstreamLayout.size));
}
function upstreamNode(status, protocol, u) {
    const spec = protocol === 'http' ? http : stream;
    const storage = cachedStorage(status, protocol, u);
    const peers = collection('peer', () => u.peers, (p) => peerName(p), (p, transient) => {
        const s = storage.peers[u.peers.indexOf(p)];
        const sums = s.block.values(transient ? scratchFor(spec.size) : undefined);
        return new FieldNode(spec.fields, { sums, peer: p, upstream: u, block: s.block, cells: s.cells, claims: s.claims, state: s.cells.load(0) });
    }, {
        fields: spec.fields,
        // All the peers' sums first, in one pass over their memory: interleaved with
        // writing the JSON, these reads wait on memory one peer at a time.
        prepare: () => {
            const all = sumsFor(u.peers.length, spec.size);
            for (let i = 0; i < storage.peers.length; i++) {
                all[i] = storage.peers[i].block.values(all[i]);
                peerStates[i] = storage.peers[i].cells.load(0);
            }
        },
        fill: (p, index) => {
            const s = storage.peers[index];
            const source = reused;
            source.sums = peerSums[index];
            source.peer = p;
            source.upstream = u;
            source.block = s.block;
            source.cells = s.cells;
            source.claims = s.claims;
            source.state = peerStates[index];
            return source;
        },
    });
    const source = { sums: storage.block.values(), upstream: u };
    const members = [['peers', peers]];
    if (protocol === 'http')
        members.push(['keepalive', new FieldNode(keepalive, source)]);
    if (u.queue && protocol === 'http')
        members.push(['queue', new FieldNode(queueFields, source)]);
    return new ObjectNode(() => members, undefined, undefined, true);
}
export function upstreamsNode(protocol) {
    return (status) => collection('upstream', () => upstreams(status, protocol), (u) => u.name, (u) => upstreamNode(status, protocol, u));
}
//# sourceMappingURL=upstreams.js.map