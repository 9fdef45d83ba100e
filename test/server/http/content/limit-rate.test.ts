// limit_rate and limit_rate_after through bin/zonal, as nginx's documentation says: the
// response is sent to the client at most `rate` bytes per second, after the first
// `limit_rate_after` bytes, which go at once. A 12 KB file at 16k per second takes about
// 0.75 s; with the first 8 KB free, about 0.25 s; without a limit, no time at all.
import t from 'tap';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, Zonal } from '../../zonal.js';

const [port, backendPort] = await freePorts(2);
const docs = mkdtempSync(join(tmpdir(), 'zonal-limit-rate-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));
const body = Buffer.alloc(12 * 1024, 'abcdefghijklmnopqrstuvwxyz');
for (const name of ['slow', 'after', 'fast', 'var', 'set']) writeFileSync(join(docs, `${name}.bin`), body);
// The peer answers the same body at once, in two writes.
const backend = createServer((_req, res) => {
  res.writeHead(200, { 'Content-Length': body.length });
  res.write(body.subarray(0, 5000));
  res.end(body.subarray(5000));
});
await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', resolve));
t.teardown(() => backend.close());

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    server {
        listen 127.0.0.1:${port};
        root ${docs};
        location = /slow.bin { limit_rate 16k; }
        location = /after.bin { limit_rate 16k; limit_rate_after 8k; }
        location = /fast.bin { }
        location /proxied/ { limit_rate 16k; proxy_pass http://127.0.0.1:${backendPort}; }
        location /proxied-fast/ { proxy_pass http://127.0.0.1:${backendPort}; }
        location = /var.bin { limit_rate $arg_rate; limit_rate_after $arg_after; }
        location = /set.bin { set $limit_rate $arg_rate; add_header X-Rate $limit_rate; }
        location = /shown { set $limit_rate $arg_rate; return 200 "$limit_rate"; }
    }
}
`,
});
t.teardown(() => z.stop());

const timed = async (path: string) => {
  const started = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, bytes, ms: performance.now() - started };
};

t.test('limit_rate with variables, and set $limit_rate: the rate read per request', async (t) => {
  const paced = await timed('/var.bin?rate=16k');
  t.ok(paced.bytes.equals(body));
  t.ok(paced.ms >= 600, `limit_rate $arg_rate, 16k: ${paced.ms.toFixed(0)} ms`);
  const after = await timed('/var.bin?rate=16k&after=8k');
  t.ok(after.ms >= 150 && after.ms < paced.ms, `and limit_rate_after $arg_after, 8k: ${after.ms.toFixed(0)} ms`);
  const set = await timed('/set.bin?rate=16k');
  t.ok(set.ms >= 600, `set $limit_rate 16k: ${set.ms.toFixed(0)} ms`);
  const shown = await fetch(`http://127.0.0.1:${port}/shown?rate=40k`);
  t.equal(await shown.text(), '40960', '$limit_rate in bytes per second');
  const invalid = await fetch(`http://127.0.0.1:${port}/shown`);
  t.equal(await invalid.text(), '0', 'an invalid rate is 0: no limit');
});

t.test('the body is paced at the rate, after limit_rate_after bytes', async (t) => {
  const slow = await timed('/slow.bin');
  t.equal(slow.status, 200);
  t.ok(slow.bytes.equals(body), 'the whole file, unchanged');
  t.ok(slow.ms >= 600, `12 KB at 16 KB/s took ${slow.ms.toFixed(0)} ms (at least 600)`);
  const after = await timed('/after.bin');
  t.ok(after.bytes.equals(body));
  t.ok(after.ms >= 150, `4 KB paced took ${after.ms.toFixed(0)} ms (at least 150)`);
  t.ok(after.ms < slow.ms, 'the first 8 KB went at once');
  const fast = await timed('/fast.bin');
  t.ok(fast.bytes.equals(body));
  t.ok(fast.ms < 500, `no limit: ${fast.ms.toFixed(0)} ms`);
});

t.test('a proxied answer is paced too', async (t) => {
  const slow = await timed('/proxied/x');
  t.equal(slow.status, 200);
  t.ok(slow.bytes.equals(body), 'the whole body, unchanged');
  t.ok(slow.ms >= 600, `12 KB at 16 KB/s took ${slow.ms.toFixed(0)} ms (at least 600)`);
  const fast = await timed('/proxied-fast/x');
  t.ok(fast.bytes.equals(body));
  t.ok(fast.ms < 500, `no limit: ${fast.ms.toFixed(0)} ms`);
});
