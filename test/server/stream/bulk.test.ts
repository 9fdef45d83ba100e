// 100 MB through the stream proxy both ways at once (an echo backend): every byte comes
// back, the zone and the peer count exactly 100 MB each way, and the worker's memory
// does not grow with the transfer (backpressure holds what is in flight to a few socket
// buffers) even when the client stops reading for a while. The worker's RSS is read
// from /proc while the bytes flow.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { EchoBackend, exchange } from './peers.js';

const TOTAL = 100 * 1024 * 1024;
const PIECE = 64 * 1024;
const STALL_EVERY = 8 * 1024 * 1024;
const STALL_MS = 100;

const [admin, listen, backendPort] = await freePorts(3);
const backend = new EchoBackend(backendPort);
await backend.start();
t.teardown(() => backend.stop());

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    server { listen 127.0.0.1:${admin} admin; location /status/ { api /status/; } }
}
stream {
    upstream echo { zone echo 64k; server 127.0.0.1:${backendPort}; }
    server { listen 127.0.0.1:${listen}; status_zone bulk; proxy_pass echo; }
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
