// 100 MB through the stream proxy both ways at once (an echo backend): every byte comes
// back, the zone and the peer count exactly 100 MB each way, and the worker's memory
// does not grow with the transfer (backpressure holds what is in flight to a few socket
// buffers) even when the client stops reading for a while. Then a fast client against
// a backend that stops reading now and then: the worker's reads share one buffer, so
// what the backend's socket does not take at once must be kept aside intact. The
// worker's RSS is read from /proc while the bytes flow.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { EchoBackend, exchange } from './peers.js';

const TOTAL = 100 * 1024 * 1024;
const PIECE = 64 * 1024;
const STALL_EVERY = 8 * 1024 * 1024;
const STALL_MS = 100;

const [admin, listen, backendPort, slowListen, sinkPort] = await freePorts(5);
const backend = new EchoBackend(backendPort);
await backend.start();
t.teardown(() => backend.stop());

/** What the fast client repeats: a prime length, so no read or write lines up with it. */
const PATTERN = randomBytes(65_521);
/** The slow backend: it stops reading for STALL_MS after every STALL_EVERY bytes, checks
 * every byte against the pattern, and ends its side when the client's end comes. */
const sink = { bytes: 0, firstWrong: -1, ended: false };
const sinkServer = createServer({ allowHalfOpen: true }, (s) => {
  s.on('data', (d: Buffer) => {
    for (let i = 0; i < d.length && sink.firstWrong < 0; i++) if (d[i] !== PATTERN[(sink.bytes + i) % PATTERN.length]) sink.firstWrong = sink.bytes + i;
    const before = sink.bytes;
    sink.bytes += d.length;
    if (Math.floor(sink.bytes / STALL_EVERY) !== Math.floor(before / STALL_EVERY)) {
      s.pause();
      setTimeout(() => s.resume(), STALL_MS);
    }
  });
  s.on('end', () => {
    sink.ended = true;
    s.end();
  });
  s.on('error', () => {});
});
await new Promise<void>((resolve) => sinkServer.listen(sinkPort, '127.0.0.1', () => resolve()));
t.teardown(() => new Promise<void>((resolve) => sinkServer.close(() => resolve())));

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    server { listen 127.0.0.1:${admin} admin; location /status/ { api /status/; } }
}
stream {
    upstream echo { zone echo 64k; server 127.0.0.1:${backendPort}; }
    server { listen 127.0.0.1:${listen}; status_zone bulk; proxy_pass echo; }
    upstream sink { zone sink 64k; server 127.0.0.1:${sinkPort}; }
    server { listen 127.0.0.1:${slowListen}; status_zone slow; proxy_half_close on; proxy_pass sink; }
}
`,
});
t.teardown(() => zonal.stop());

const rss = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

t.test('100 MB both ways, exact, with bounded memory', async (t) => {
  const [worker] = zonal.workers();
  t.ok(worker, 'one worker');
  // Warm up: the code paths compiled, the first buffers allocated.
  await exchange(listen, Buffer.alloc(4 * 1024 * 1024, 7), { piece: PIECE });
  const baseline = rss(worker);
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rss(worker))), 20);

  const piece = Buffer.alloc(PIECE);
  for (let i = 0; i < PIECE; i++) piece[i] = i & 0xff;
  const s = connect({ port: listen, host: '127.0.0.1', allowHalfOpen: true });
  let back = 0;
  let mismatch = false;
  const done = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`transfer not over in 120 s (${back} bytes back)`)), 120_000);
    s.on('data', (d: Buffer) => {
      // Bytes come back in order: each is its offset's low byte.
      for (let i = 0; i < d.length; i += 4093) if (d[i] !== ((back + i) % PIECE) % 256) mismatch = true;
      const before = back;
      back += d.length;
      if (back >= TOTAL) s.end();
      // A slow reader now and then: what the peer sends meanwhile must wait in the
      // peer's socket, not in the worker.
      else if (Math.floor(back / STALL_EVERY) !== Math.floor(before / STALL_EVERY)) {
        s.pause();
        setTimeout(() => s.resume(), STALL_MS);
      }
    });
    s.on('close', () => (clearTimeout(timer), resolve()));
    s.on('error', reject);
  });
  await new Promise<void>((resolve) => s.once('connect', () => resolve()));
  for (let sent = 0; sent < TOTAL; sent += PIECE) if (!s.write(piece)) await new Promise((r) => s.once('drain', r));
  await done;
  clearInterval(sampler);
  peak = Math.max(peak, rss(worker));

  t.equal(back, TOTAL, 'every byte came back');
  t.notOk(mismatch, 'in order');
  const growth = peak - baseline;
  t.ok(growth < 48 * 1024 * 1024, `the worker's RSS grew by ${(growth / 1048576).toFixed(1)} MB during 100 MB each way (baseline ${(baseline / 1048576).toFixed(1)} MB)`);
  let zone: any;
  await eventually(async () => (zone = (await getJson(`http://127.0.0.1:${admin}/status/stream/server_zones/bulk`)).body).connections.processing === 0);
  const warm = 4 * 1024 * 1024;
  t.same(zone.data, { received: TOTAL + warm, sent: TOTAL + warm }, 'the zone counts every byte');
  const peer = (await getJson(`http://127.0.0.1:${admin}/status/stream/upstreams/echo/peers/127.0.0.1:${backendPort}`)).body;
  t.same(peer.data, { received: TOTAL + warm, sent: TOTAL + warm }, 'and so does the peer');
  t.equal(backend.bytes, TOTAL + warm);
});

t.test('a fast client, a backend that stops reading now and then: every byte arrives intact', async (t) => {
  const total = 64 * 1024 * 1024;
  const [worker] = zonal.workers();
  const baseline = rss(worker);
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rss(worker))), 20);
  const s = connect({ port: slowListen, host: '127.0.0.1', allowHalfOpen: true });
  s.on('data', () => {});
  s.on('end', () => s.end());
  const closed = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not over in 120 s (${sink.bytes} bytes at the backend)`)), 120_000);
    s.on('close', () => (clearTimeout(timer), resolve()));
    s.on('error', reject);
  });
  await new Promise<void>((resolve) => s.once('connect', () => resolve()));
  const piece = Buffer.concat([PATTERN, PATTERN, PATTERN, PATTERN]);
  for (let sent = 0; sent < total; ) {
    const at = sent % PATTERN.length;
    const n = Math.min(piece.length - at, total - sent);
    const ok = s.write(piece.subarray(at, at + n));
    sent += n;
    if (!ok) await new Promise((r) => s.once('drain', r));
  }
  s.end();
  await closed;
  clearInterval(sampler);
  peak = Math.max(peak, rss(worker));

  t.equal(sink.bytes, total, 'every byte reached the backend');
  t.equal(sink.firstWrong, -1, 'intact and in order');
  t.ok(sink.ended, "the client's end was passed on");
  const growth = peak - baseline;
  t.ok(growth < 48 * 1024 * 1024, `the worker's RSS grew by ${(growth / 1048576).toFixed(1)} MB (baseline ${(baseline / 1048576).toFixed(1)} MB)`);
  let zone: any;
  await eventually(async () => (zone = (await getJson(`http://127.0.0.1:${admin}/status/stream/server_zones/slow`)).body).connections.processing === 0);
  t.same(zone.data, { received: total, sent: 0 }, 'the zone counts every byte');
  t.equal(zone.sessions.success, 1, 'one session, a success');
  const peer = (await getJson(`http://127.0.0.1:${admin}/status/stream/upstreams/sink/peers/127.0.0.1:${sinkPort}`)).body;
  t.same(peer.data, { received: 0, sent: total }, 'and so does the peer');
});
