// limit_conn in the stream module, through bin/zonal over 2 workers: the count per key
// is shared by the workers, a refused connection ends its session with 503 before the
// access rules, the count is given back when a session ends, and
// /status/stream/limit_conns/<zone> counts each decision.
import t from 'tap';
import { connect, type Socket } from 'node:net';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { EchoBackend, exchange } from './peers.js';

const [admin, limited, denied, backendPort] = await freePorts(4);
const backend = new EchoBackend(backendPort);
await backend.start();
t.teardown(() => backend.stop());

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 2;
http {
    server { listen 127.0.0.1:${admin} admin; location /status/ { api /status/; } }
}
stream {
    limit_conn_zone $binary_remote_addr zone=per_client:64k;
    limit_conn per_client 2;
    server { listen 127.0.0.1:${limited}; status_zone limited; proxy_pass 127.0.0.1:${backendPort}; }
    server { listen 127.0.0.1:${denied}; status_zone denied; deny all; proxy_pass 127.0.0.1:${backendPort}; }
}
`,
});
t.teardown(() => zonal.stop());

const status = async (path: string) => (await getJson(`http://127.0.0.1:${admin}/status/stream/${path}`)).body;

async function hold(port: number): Promise<Socket> {
  const s = connect(port, '127.0.0.1');
  s.on('error', () => {});
  await new Promise<void>((resolve) => {
    s.once('data', () => resolve());
    s.write('hold');
  });
  return s;
}

t.test('two sessions per client across both workers, the third refused with 503', async (t) => {
  const held = [await hold(limited), await hold(limited)];
  for (let i = 0; i < 3; i++) t.equal((await exchange(limited, 'x', { expect: 0 })).received.length, 0, 'refused: closed without an answer');
  let zone: any;
  await eventually(async () => (zone = await status('server_zones/limited')).sessions.service_unavailable === 3);
  t.equal(zone.sessions.service_unavailable, 3);
  t.equal(zone.connections.processing, 2);
  const limits = await status('limit_conns/per_client');
  t.same(limits, { passed: 2, skipped: 0, rejected: 3, exhausted: 0 });
  // Given back when a session ends: one more may come.
  const closed = new Promise<void>((resolve) => held[0].once('close', () => resolve()));
  held[0].end();
  held[0].on('end', () => held[0].end());
  await closed;
  let echoed = '';
  await eventually(async () => (echoed = (await exchange(limited, 'again')).received.toString()) === 'again');
  t.equal(echoed, 'again');
  held[1].destroy();
  await eventually(async () => (zone = await status('server_zones/limited')).connections.processing === 0);
  t.ok(zone.sessions.success >= 2, 'the held and the later sessions succeeded');
});

t.test('the limit comes before the access rules (nginx\'s preaccess phase)', async (t) => {
  // The stream block's limit holds here too: the denied connections pass it first, then
  // the access rules refuse them (403, not 503).
  for (let i = 0; i < 2; i++) await exchange(denied, 'x', { expect: 0 });
  let zone: any;
  await eventually(async () => (zone = await status('server_zones/denied')).sessions.forbidden === 2);
  t.equal(zone.sessions.forbidden, 2);
  t.equal(zone.sessions.service_unavailable, 0);
  const limits = await status('limit_conns/per_client');
  t.ok(limits.passed >= 5, `the denied connections passed the limit first (${limits.passed})`);
});
