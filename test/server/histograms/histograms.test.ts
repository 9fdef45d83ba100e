// Histograms through bin/zonal: two workers proxy to backends of known delays, and the
// status shows each zone's and peer's histogram in JSON (exact counts across the workers,
// observations in the buckets the delays put them in, percentiles within them) and in
// the text format as Prometheus histograms that promtool accepts.
import t from 'tap';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, connect, type Server as TcpServer } from 'node:net';
import { checkExposition, promtool } from '../../api/exposition.js';
import { freePorts, getJson, Zonal } from '../zonal.js';

const DELAY_MS = 30;
const REQUESTS = 40;
const SESSIONS = 6;

const [site, admin, slowPort, tcpFront, tcpBack] = await freePorts(5);

// A backend that answers after DELAY_MS.
const slow: Server = createServer((req, res) => {
  req.resume();
  setTimeout(() => res.end('slow\n'), DELAY_MS);
});
// A TCP backend that answers one line and closes after DELAY_MS.
const tcp: TcpServer = createTcpServer((socket) => {
  socket.once('data', () => setTimeout(() => socket.end('pong\n'), DELAY_MS));
  socket.on('error', () => {});
});
await Promise.all([new Promise<void>((r) => slow.listen(slowPort, '127.0.0.1', r)), new Promise<void>((r) => tcp.listen(tcpBack, '127.0.0.1', r))]);

const conf = `
worker_processes 2;
http {
    # Off unless asked for: on for the whole block, a location turns it off below.
    status_zone_histogram on;
    upstream u {
        zone u 256k;
        server 127.0.0.1:${slowPort};
        status_zone_histogram 20 10s;
    }
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        location /slow/ { status_zone slow; proxy_pass http://u; }
        location /quick/ { status_zone quick; status_zone_histogram off; return 200 "quick\\n"; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
stream {
    status_zone_histogram on;
    upstream tcp { server 127.0.0.1:${tcpBack}; }
    server { listen 127.0.0.1:${tcpFront}; status_zone tcp_front; proxy_pass tcp; }
}
`;
const zonal = await Zonal.start({ 'zonal.conf': conf });
t.teardown(async () => {
  await zonal.stop();
  await Promise.all([new Promise((r) => slow.close(r)), new Promise((r) => tcp.close(r))]);
});
const status = (path: string) => getJson(`http://127.0.0.1:${admin}/status/${path}`).then((r) => r.body);

/** Runs `total` GETs, 8 at a time (so that both workers answer). */
async function load(path: string, total: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next++ < total) {
        const res = await fetch(`http://127.0.0.1:${site}${path}`);
        await res.text();
      }
    }),
  );
}

/** One TCP session through the stream proxy: a line out, a line back, closed. */
function session(): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect(tcpFront, '127.0.0.1', () => s.write('ping\n'));
    s.on('data', () => {});
    s.on('error', reject);
    s.on('close', () => resolve());
  });
}

await load('/slow/x', REQUESTS);
await load('/quick/x', REQUESTS);
for (let i = 0; i < SESSIONS; i++) await session();

const DEFAULT_BOUNDS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];
const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);

t.test('JSON: each zone and peer has the histograms its configuration gives it', async (t) => {
  const zones = await status('http/server_zones');
  const h = zones.site.histograms.response_time;
  t.same(Object.keys(zones.site), ['requests', 'responses', 'data', 'histograms'], 'one extra member after the spec\'s');
  t.same(h.bounds, DEFAULT_BOUNDS, 'the default bounds: 1-2-5 ms steps to 10 s');
  t.equal(h.buckets.length, h.bounds.length + 1, 'one bucket per bound and +Inf');
  t.equal(h.count, 2 * REQUESTS, 'every request of both workers, exactly');
  t.equal(sum(h.buckets), h.count, 'buckets are not cumulative: they add up to count');
  t.equal(zones.site.requests.total, h.count, 'as many as the zone counted');
  t.same(Object.keys(h), ['bounds', 'buckets', 'count', 'sum', 'p50', 'p90', 'p99']);
  t.ok(h.p50 <= h.p90 && h.p90 <= h.p99, `percentiles ascend: ${h.p50} ${h.p90} ${h.p99}`);

  const locations = await status('http/location_zones');
  const slowZone = locations.slow.histograms.response_time;
  t.equal(slowZone.count, REQUESTS);
  const fasterThanDelay = sum(slowZone.buckets.slice(0, slowZone.bounds.findIndex((b: number) => b >= DELAY_MS)));
  t.equal(fasterThanDelay, 0, `no proxied response took less than the backend's ${DELAY_MS} ms`);
  t.ok(slowZone.sum >= REQUESTS * DELAY_MS, `the sum (${slowZone.sum} ms) is at least ${REQUESTS} x ${DELAY_MS} ms`);
  t.ok(slowZone.p50 >= 20 && slowZone.p50 <= 10000, `p50 ${slowZone.p50} ms lies within the buckets that hold the observations`);
  t.notOk('histograms' in locations.quick, 'status_zone_histogram off: no histograms member');

  const peer = await status(`http/upstreams/u/peers/127.0.0.1:${slowPort}`);
  const p = peer.histograms.response_time;
  t.same(p.bounds, [20, 10000], 'the upstream\'s own bounds');
  t.same(p.buckets, [0, REQUESTS, 0], `every response of the peer between 20 ms and 10 s`);
  t.ok(p.p90 > 20 && p.p90 <= 10000, `p90 ${p.p90} interpolated within (20, 10000]`);
  t.equal(peer.selected.total, p.count, 'as many as were selected');

  const tcpPeer = await status(`stream/upstreams/tcp/peers/127.0.0.1:${tcpBack}`);
  t.same(Object.keys(tcpPeer.histograms), ['connect_time', 'session_time'], 'a stream peer: connect and session time');
  t.equal(tcpPeer.histograms.connect_time.count, SESSIONS);
  t.equal(tcpPeer.histograms.session_time.count, SESSIONS);
  t.ok(tcpPeer.histograms.session_time.sum >= SESSIONS * DELAY_MS, 'sessions lasted at least the backend\'s delay');
  t.equal(
    await status(`http/upstreams/u/peers/127.0.0.1:${slowPort}/histograms/response_time/count`),
    REQUESTS,
    'a path reaches a single member',
  );
  const p99 = await getJson(`http://127.0.0.1:${admin}/status/stream/upstreams/tcp/peers/127.0.0.1:${tcpBack}/histograms/connect_time/p99`);
  t.ok(typeof p99.body === 'number' && p99.body > 0, `a percentile by its path: ${p99.body} ms`);
  const bound = await getJson(`http://127.0.0.1:${admin}/status/http/upstreams/u/peers/127.0.0.1:${slowPort}/histograms/response_time/bounds/1`);
  t.equal(bound.body, 10000, 'and an array\'s element by its index');
});

t.test('text: Prometheus histograms in seconds, accepted by promtool', async (t) => {
  const text = await (await fetch(`http://127.0.0.1:${admin}/status/?format=prometheus`)).text();
  t.same(checkExposition(text), [], 'valid exposition');
  const tool = promtool(text);
  if (tool !== 'absent') t.equal(tool, '', 'promtool check metrics is clean');
  const family = 'zonal_http_upstreams_peers_histograms_response_time_seconds';
  const labels = `upstream="u",peer="127.0.0.1:${slowPort}"`;
  t.match(text, new RegExp(`^# TYPE ${family} histogram$`, 'm'));
  t.match(text, new RegExp(`^${family}_bucket\\{${labels},le="0.02"\\} 0$`, 'm'), 'le in seconds');
  t.match(text, new RegExp(`^${family}_bucket\\{${labels},le="10"\\} ${REQUESTS}$`, 'm'), 'cumulative');
  t.match(text, new RegExp(`^${family}_bucket\\{${labels},le="\\+Inf"\\} ${REQUESTS}$`, 'm'));
  t.match(text, new RegExp(`^${family}_count\\{${labels}\\} ${REQUESTS}$`, 'm'));
  const seconds = Number(new RegExp(`^${family}_sum\\{${labels}\\} (\\S+)$`, 'm').exec(text)?.[1]);
  t.ok(seconds >= (REQUESTS * DELAY_MS) / 1000 && seconds < REQUESTS * 10, `_sum in seconds: ${seconds}`);
  t.match(text, /^zonal_http_location_zones_histograms_response_time_seconds_count\{zone="slow"\} 40$/m);
  t.notMatch(text, /zone="quick",le=/, 'no histogram where it is off');
  t.match(text, /^zonal_stream_upstreams_peers_histograms_session_time_seconds_count\{upstream="tcp",peer="[^"]+"\} 6$/m);
  const flat = await (await fetch(`http://127.0.0.1:${admin}/status/http/location_zones/slow?format=prometheus`)).text();
  t.match(flat, /^histograms_response_time_seconds_bucket\{le="\+Inf"\} 40$/m, 'below a zone: the flat form, with le');
  t.match(flat, /^histograms_response_time_seconds_count 40$/m);
});
