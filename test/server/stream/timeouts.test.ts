// The stream proxy's timeouts: proxy_connect_timeout against a peer whose accept queue is
// full (its SYNs go unanswered: a python listener with a backlog of 0 that never
// accepts, its one place taken by the test), with the client waiting and with the client
// leaving first; proxy_timeout ending a silent session, and not a session whose bytes
// go one way and then the other (a socket only written to is silent in its own sight).
import t from 'tap';
import { spawn } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { EchoBackend, exchange } from './peers.js';

const [admin, stalled, idle, stuckPort, echoPort, oneWay, heldPort] = await freePorts(7);

// A listener that never accepts, its queue filled below.
const python = spawn('python3', ['-c', `import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',${stuckPort}))\ns.listen(0)\nprint('ready',flush=True)\ntime.sleep(120)`], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
t.teardown(() => void python.kill('SIGKILL'));
await new Promise<void>((resolve) => python.stdout!.once('data', () => resolve()));
const fillers: Socket[] = [];
t.teardown(() => fillers.forEach((s) => s.destroy()));
// With a backlog of 0 Linux keeps one connection waiting; the next SYNs are dropped.
for (let i = 0; i < 1; i++) {
  const s = connect(stuckPort, '127.0.0.1');
  s.on('error', () => {});
  fillers.push(s);
  await new Promise<void>((resolve) => s.once('connect', () => resolve()));
}

const echo = new EchoBackend(echoPort);
await echo.start();
t.teardown(() => echo.stop());

// A backend whose connections the test writes to itself.
const held: Socket[] = [];
const heldServer = createServer((s) => {
  s.on('error', () => {});
  s.on('data', () => {});
  held.push(s);
});
await new Promise<void>((resolve) => heldServer.listen(heldPort, '127.0.0.1', () => resolve()));
t.teardown(() => {
  held.forEach((s) => s.destroy());
  heldServer.close();
});

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 2;
http {
    server { listen 127.0.0.1:${admin} admin; location /status/ { api /status/; } }
}
stream {
    upstream stuck { zone stuck 64k; server 127.0.0.1:${stuckPort} max_fails=0; }
    server { listen 127.0.0.1:${stalled}; status_zone stalled; proxy_connect_timeout 300ms; proxy_pass stuck; }
    server { listen 127.0.0.1:${idle}; status_zone idle; proxy_timeout 300ms; proxy_pass 127.0.0.1:${echoPort}; }
    server { listen 127.0.0.1:${oneWay}; status_zone one_way; proxy_timeout 300ms; proxy_pass 127.0.0.1:${heldPort}; }
}
`,
});
t.teardown(() => zonal.stop());

const status = async (path: string) => (await getJson(`http://127.0.0.1:${admin}/status/stream/${path}`)).body;

t.test('proxy_connect_timeout: 502 after the timeout, counted as the peer\'s failure', async (t) => {
  const r = await exchange(stalled, 'hello', { expect: 0 });
  t.equal(r.received.length, 0);
  t.ok(r.ms >= 280 && r.ms < 3000, `closed after ${Math.round(r.ms)} ms (proxy_connect_timeout 300ms)`);
  let zone: any;
  await eventually(async () => (zone = await status('server_zones/stalled')).sessions.bad_gateway === 1);
  t.equal(zone.sessions.bad_gateway, 1);
  const peer = await status(`upstreams/stuck/peers/127.0.0.1:${stuckPort}`);
  t.equal(peer.health.fails, 1);
  t.equal(peer.selected.current, 0);
});

t.test('a client that leaves while its peer is being reached ends its session', async (t) => {
  const s = connect(stalled, '127.0.0.1');
  s.on('error', () => {});
  await new Promise<void>((resolve) => s.once('connect', () => resolve()));
  let zone: any;
  await eventually(async () => (zone = await status('server_zones/stalled')).connections.processing === 1);
  t.equal(zone.connections.processing, 1, 'processing while the peer is reached');
  s.destroy();
  await eventually(async () => (zone = await status('server_zones/stalled')).connections.processing === 0, 5000);
  t.equal(zone.connections.processing, 0, 'over once the connect timed out');
  t.equal(zone.sessions.bad_gateway, 2, 'no peer was reached: 502');
});

t.test('proxy_timeout ends a session silent both ways', async (t) => {
  const s = connect(idle, '127.0.0.1');
  const back = await new Promise<string>((resolve) => {
    s.once('data', (d) => resolve(d.toString()));
    s.write('one');
  });
  t.equal(back, 'one');
  const at = performance.now();
  const closed = await new Promise<number>((resolve) => {
    s.on('end', () => s.end());
    s.once('close', () => resolve(performance.now() - at));
  });
  t.ok(closed >= 250 && closed < 3000, `closed ${Math.round(closed)} ms after the last byte (proxy_timeout 300ms)`);
  let zone: any;
  await eventually(async () => (zone = await status('server_zones/idle')).sessions.success === 1);
  t.equal(zone.sessions.success, 1, 'a timed out session is a success, as nginx has it');
  t.same(zone.data, { received: 3, sent: 3 });
});

t.test('proxy_timeout: bytes one way for twice the timeout, then the other way, then silence', async (t) => {
  const s = connect(oneWay, '127.0.0.1');
  s.on('error', () => {});
  let closedAt: number | undefined;
  s.on('data', () => {});
  s.on('end', () => s.end());
  const closed = new Promise<void>((resolve) => s.once('close', () => ((closedAt = performance.now()), resolve())));
  await new Promise<void>((resolve) => s.once('connect', () => resolve()));
  const tick = () => new Promise((r) => setTimeout(r, 60));
  // Client to backend only: zonal's socket to the backend is written, never read.
  for (let i = 0; i < 10 && closedAt === undefined; i++) {
    s.write('x');
    await tick();
  }
  t.ok(await eventually(async () => held.length === 1), 'the backend has the connection');
  // Backend to client only: zonal's socket to the client is written, never read.
  let last = 0;
  for (let i = 0; i < 10 && closedAt === undefined; i++) {
    held[0].write('y');
    last = performance.now();
    await tick();
  }
  t.equal(closedAt, undefined, 'the session lasted while bytes went either way');
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([closed, new Promise((r) => (timer = setTimeout(r, 5000)))]);
  clearTimeout(timer);
  t.ok(closedAt !== undefined, 'silence both ways ended it');
  if (closedAt !== undefined) t.ok(closedAt - last >= 250 && closedAt - last < 3000, `closed ${Math.round(closedAt - last)} ms after the last byte (proxy_timeout 300ms)`);
  s.destroy();
  let zone: any;
  await eventually(async () => (zone = await status('server_zones/one_way')).sessions.success === 1);
  t.same(zone.data, { received: 10, sent: 10 }, 'every byte counted');
});
