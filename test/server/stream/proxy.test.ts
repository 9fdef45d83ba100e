// The stream proxy end to end: bin/zonal over 2 workers in front of echo backends this
// test starts on loopback. Every status field checked here is produced by the test's
// own connections, and compared with what the client and the backends saw.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { EchoBackend, exchange } from './peers.js';

const [admin, plain, denied, dead, next, weighted, slow, edit, proxied, limited, hashed, least, a, b, c, d, e, closed, closed2] = await freePorts(19);
const backends = [a, b, c, d].map((p) => new EchoBackend(p));
const delayed = new EchoBackend(e, { delayMs: 300, greeting: 'hi' });
for (const x of [...backends, delayed]) await x.start();
t.teardown(() => Promise.all([...backends, delayed].map((x) => x.stop())));
const [ea, eb, ec, ed] = backends;

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 2;
http {
    server {
        listen 127.0.0.1:${admin} admin;
        location /status/ { api /status/; }
        location /config/ { api /config/; }
    }
}
stream {
    proxy_connect_timeout 2s;
    upstream one { zone one 64k; server 127.0.0.1:${a}; }
    upstream dead { zone dead 64k; server 127.0.0.1:${closed}; server 127.0.0.1:${closed2}; }
    upstream next { zone next 64k; server 127.0.0.1:${closed} max_fails=0; server 127.0.0.1:${b} max_fails=0; }
    upstream weighted { zone weighted 64k; server 127.0.0.1:${c} weight=3; server 127.0.0.1:${d}; }
    upstream slow { zone slow 64k; server 127.0.0.1:${e}; }
    upstream edit { zone edit 64k; server 127.0.0.1:${a}; }
    upstream limited { zone limited 64k; server 127.0.0.1:${c} max_conns=1; }
    upstream hashed { zone hashed 64k; hash $remote_addr; server 127.0.0.1:${c}; server 127.0.0.1:${d}; }
    upstream least { zone least 64k; least_conn; server 127.0.0.1:${c}; server 127.0.0.1:${d}; }
    server { listen 127.0.0.1:${plain}; status_zone plain; proxy_pass one; }
    server { listen 127.0.0.1:${denied}; status_zone denied; deny 127.0.0.1; proxy_pass one; }
    server { listen 127.0.0.1:${dead}; status_zone dead; proxy_pass dead; }
    server { listen 127.0.0.1:${next}; status_zone next; proxy_pass next; }
    server { listen 127.0.0.1:${weighted}; status_zone weighted; proxy_pass weighted; }
    server { listen 127.0.0.1:${slow}; status_zone slow; proxy_pass slow; }
    server { listen 127.0.0.1:${edit}; status_zone edit; proxy_pass edit; }
    server { listen 127.0.0.1:${limited}; status_zone limited; proxy_pass limited; }
    server { listen 127.0.0.1:${hashed}; proxy_pass hashed; }
    server { listen 127.0.0.1:${least}; proxy_pass least; }
    server { listen 127.0.0.1:${proxied} proxy_protocol; status_zone proxied; proxy_pass 127.0.0.1:${b}; }
}
`,
});
t.teardown(() => zonal.stop());

const status = async (path: string) => (await getJson(`http://127.0.0.1:${admin}/status/stream/${path}`)).body;
/** The status once `probe` holds of it: workers record a session as its sockets close,
 * which the client may see first. */
async function settled(path: string, probe: (body: any) => boolean): Promise<any> {
  let body: any;
  await eventually(async () => probe((body = await status(path))));
  return body;
}

t.test('bytes both ways are exact, in the zone and at the peer', async (t) => {
  let sent = 0;
  for (let i = 0; i < 20; i++) {
    const data = randomBytes(1 + Math.floor(Math.random() * 200_000));
    const r = await exchange(plain, data, { piece: 1 + Math.floor(Math.random() * 9000) });
    t.ok(r.received.equals(data), `session ${i}: the echo is what was sent`);
    sent += data.length;
  }
  const zone = await settled('server_zones/plain', (z) => z.sessions.success === 20);
  t.same(zone.connections, { total: 20, processing: 0, discarded: 0 });
  t.same(zone.data, { received: sent, sent });
  t.equal(zone.sessions.success, 20);
  const peer = (await status('upstreams/one/peers'))[`127.0.0.1:${a}`];
  t.same(peer.data, { received: sent, sent }, 'the peer received and sent the same bytes');
  t.equal(peer.selected.total, 20, 'selected counts connections');
  t.equal(peer.selected.current, 0);
  t.notOk('responses' in peer, 'a stream peer has no responses');
  t.notOk('sid' in peer, 'nor a sid');
  t.equal(ea.bytes, sent, 'the backend read what the zone says');
});

t.test('a session in progress is processing; its end is counted', async (t) => {
  const s = connect(plain, '127.0.0.1');
  await new Promise<void>((resolve) => {
    s.once('data', () => resolve());
    s.write('ping');
  });
  const open = await settled('server_zones/plain', (z) => z.connections.processing === 1);
  t.equal(open.connections.processing, 1);
  t.equal((await status('upstreams/one/peers'))[`127.0.0.1:${a}`].selected.current, 1, 'the peer has it as current');
  s.end();
  const done = await settled('server_zones/plain', (z) => z.connections.processing === 0);
  t.equal(done.connections.processing, 0);
});

t.test('403: access rules', async (t) => {
  const r = await exchange(denied, 'hello', { expect: 0 });
  t.equal(r.received.length, 0, 'nothing comes back');
  const zone = await settled('server_zones/denied', (z) => z.sessions.forbidden === 1);
  t.equal(zone.sessions.forbidden, 1);
  t.equal(zone.sessions.success, 0);
  t.equal(zone.connections.total, 1);
});

t.test('502: no peer could be reached; each failed connect counts at its peer', async (t) => {
  const r = await exchange(dead, 'hello', { expect: 0 });
  t.equal(r.received.length, 0);
  const zone = await settled('server_zones/dead', (z) => z.sessions.bad_gateway === 1);
  t.equal(zone.sessions.bad_gateway, 1);
  const peers = await status('upstreams/dead/peers');
  t.equal(peers[`127.0.0.1:${closed}`].health.fails + peers[`127.0.0.1:${closed2}`].health.fails, 2, 'both peers were tried once');
  // Both unavailable now (max_fails=1): the next session finds no peer at all.
  await exchange(dead, 'hello', { expect: 0 });
  const after = await settled('server_zones/dead', (z) => z.sessions.bad_gateway === 2);
  t.equal(after.sessions.bad_gateway, 2);
  const again = await status('upstreams/dead/peers');
  t.equal(again[`127.0.0.1:${closed}`].state, 'unavailable');
  t.equal(again[`127.0.0.1:${closed}`].selected.total + again[`127.0.0.1:${closed2}`].selected.total, 2, 'no peer selected for the second');
});

t.test('proxy_next_upstream: a refused connect is followed by the next peer', async (t) => {
  for (let i = 0; i < 6; i++) t.equal((await exchange(next, 'abc')).received.toString(), 'abc');
  const zone = await settled('server_zones/next', (z) => z.sessions.success === 6);
  t.equal(zone.sessions.success, 6);
  t.equal(zone.sessions.bad_gateway, 0);
  const peers = await status('upstreams/next/peers');
  t.equal(peers[`127.0.0.1:${b}`].selected.total, 6);
  t.ok(peers[`127.0.0.1:${closed}`].health.fails >= 1, 'the dead peer failed');
  t.equal(peers[`127.0.0.1:${closed}`].health.fails, peers[`127.0.0.1:${closed}`].selected.total, 'each of its selections failed');
});

t.test('balancing over 2 workers: weight 3 to 1', async (t) => {
  const n = 400;
  for (let i = 0; i < n; i++) await exchange(weighted, 'x');
  const peers = await settled('upstreams/weighted/peers', (p) => p[`127.0.0.1:${c}`].selected.total + p[`127.0.0.1:${d}`].selected.total === n);
  const three = peers[`127.0.0.1:${c}`].selected.total;
  const one = peers[`127.0.0.1:${d}`].selected.total;
  t.equal(three + one, n);
  // Each worker's smooth round robin is exact over each 4 picks.
  t.ok(Math.abs(three - 300) <= 3, `3:1 within a cycle per worker (${three}:${one})`);
  t.equal(ec.connections, three, 'the backends saw what the status says');
  t.equal(ed.connections, one);
});

t.test('hash $remote_addr: one client, one peer; least_conn: away from the busy peer, across workers', async (t) => {
  const before = [ec.connections, ed.connections];
  for (let i = 0; i < 10; i++) await exchange(hashed, 'h');
  const got = [ec.connections - before[0], ed.connections - before[1]];
  t.same(got.slice().sort(), [0, 10], `every connection of 127.0.0.1 to one peer (${got})`);

  // Two sessions held open: least_conn puts them on both peers (the counts are shared).
  const hold = async () => {
    const s = connect(least, '127.0.0.1');
    s.on('error', () => {});
    await new Promise<void>((resolve) => {
      s.once('data', () => resolve());
      s.write('hold');
    });
    return s;
  };
  const held = [await hold(), await hold()];
  const peers = await status('upstreams/least/peers');
  t.same([peers[`127.0.0.1:${c}`].selected.current, peers[`127.0.0.1:${d}`].selected.current], [1, 1], 'one each');
  // A third held on d's side makes c the least busy: the next goes to c.
  held.push(await hold());
  const fewer = (await status('upstreams/least/peers'))[`127.0.0.1:${c}`].selected.current === 2 ? d : c;
  const beforeLeast = fewer === c ? ec.connections : ed.connections;
  await exchange(least, 'l');
  t.equal((fewer === c ? ec.connections : ed.connections) - beforeLeast, 1, 'the next connection went to the peer with fewer');
  for (const s of held) s.destroy();
});

t.test('connect, first byte and last byte times against a backend that waits 300 ms', async (t) => {
  const r = await exchange(slow, '', { expect: 2 });
  t.equal(r.received.toString(), 'hi');
  const peer = (await settled('upstreams/slow/peers', (p) => p[`127.0.0.1:${e}`].health.last_byte_time !== undefined && p[`127.0.0.1:${e}`].selected.current === 0))[
    `127.0.0.1:${e}`
  ];
  t.ok(peer.health.connect_time >= 0 && peer.health.connect_time < 100, `connect_time ${peer.health.connect_time}`);
  t.ok(peer.health.first_byte_time >= 295 && peer.health.first_byte_time < 600, `first_byte_time ${peer.health.first_byte_time}`);
  t.ok(peer.health.last_byte_time >= peer.health.first_byte_time && peer.health.last_byte_time < 1000, `last_byte_time ${peer.health.last_byte_time}`);
  t.equal(peer.data.received, 2);
});

t.test('/config edits take effect for the next connection', async (t) => {
  const api = `http://127.0.0.1:${admin}/config/stream/upstreams/edit/servers`;
  const json = { 'Content-Type': 'application/json' };
  const sid = await getJson(`${api}/127.0.0.1:${b}`, { method: 'PUT', headers: json, body: JSON.stringify({ sid: 'x' }) });
  t.equal(sid.status, 400, 'sid is refused for a stream peer');
  t.equal(sid.body.error, 'FormatError');
  const put = await getJson(`${api}/127.0.0.1:${b}`, { method: 'PUT', headers: json, body: JSON.stringify({ weight: 1 }) });
  t.equal(put.status, 201);
  const down = await getJson(`${api}/127.0.0.1:${a}`, { method: 'PATCH', headers: json, body: JSON.stringify({ down: true }) });
  t.equal(down.status, 200);
  const before = eb.connections;
  for (let i = 0; i < 4; i++) t.equal((await exchange(edit, 'z')).received.toString(), 'z');
  t.equal(eb.connections - before, 4, 'every connection went to the new peer');
  const peers = await status('upstreams/edit/peers');
  t.equal(peers[`127.0.0.1:${a}`].state, 'down');
  t.equal(peers[`127.0.0.1:${b}`].selected.total, 4);
  const removed = await getJson(`${api}/127.0.0.1:${b}`, { method: 'DELETE' });
  t.equal(removed.status, 200);
  const again = await getJson(`${api}/127.0.0.1:${a}`, { method: 'PATCH', headers: json, body: JSON.stringify({ down: false }) });
  t.equal(again.status, 200);
  const beforeA = ea.connections;
  await exchange(edit, 'y');
  t.equal(ea.connections - beforeA, 1, 'back to the first peer');
});

t.test('proxy_protocol: a good header is taken off; a bad one is 400', async (t) => {
  const header = 'PROXY TCP4 192.0.2.1 192.0.2.2 4000 5000\r\n';
  const r = await exchange(proxied, header + 'payload', { expect: 7 });
  t.equal(r.received.toString(), 'payload', 'the peer saw what followed the header');
  const v2 = Buffer.concat([Buffer.from('\r\n\r\n\0\r\nQUIT\n', 'latin1'), Buffer.from([0x21, 0x11, 0, 12]), Buffer.alloc(12, 1), Buffer.from('v2')]);
  t.equal((await exchange(proxied, v2, { expect: 2 })).received.toString(), 'v2', 'version 2');
  const bad = await exchange(proxied, 'GET / HTTP/1.0\r\n\r\n', { expect: 0 });
  t.equal(bad.received.length, 0);
  const zone = await settled('server_zones/proxied', (z) => z.sessions.invalid === 1 && z.sessions.success === 2);
  t.equal(zone.sessions.invalid, 1);
  t.equal(zone.sessions.success, 2);
  t.equal(zone.data.received, header.length + 7 + v2.length + 18, 'the headers are bytes the client sent');
  t.equal(zone.data.sent, 9);
});

t.test('/status/connections counts stream connections', async (t) => {
  const before = (await getJson(`http://127.0.0.1:${admin}/status/connections`)).body;
  await exchange(plain, 'q');
  await eventually(async () => (await getJson(`http://127.0.0.1:${admin}/status/connections`)).body.active === before.active);
  const after = (await getJson(`http://127.0.0.1:${admin}/status/connections`)).body;
  t.equal(after.accepted - before.accepted, 1);
  t.equal(after.active, before.active);
});

t.test('a reload: a session in progress goes on in the draining worker, new ones reach the new workers', async (t) => {
  const s = connect(plain, '127.0.0.1');
  const echo = (text: string) =>
    new Promise<string>((resolve) => {
      s.once('data', (d) => resolve(d.toString()));
      s.write(text);
    });
  t.equal(await echo('before'), 'before');
  const old = zonal.workers();
  t.ok(await zonal.reload(), 'reloaded');
  t.equal(await echo('after'), 'after', 'the open session still echoes');
  t.equal((await exchange(plain, 'new')).received.toString(), 'new', 'a new connection is served');
  const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
  s.end();
  s.on('end', () => s.end());
  await closed;
  // The old workers exit once their sessions are over.
  t.ok(await eventually(async () => zonal.workers().every((pid) => !old.includes(pid)), 10_000), 'the old workers are gone');
  const zone = await settled('server_zones/plain', (z) => z.connections.processing === 0);
  t.equal(zone.connections.processing, 0);
});

t.test('max_conns across workers; a worker killed with a session gives its slot back', async (t) => {
  const held = connect(limited, '127.0.0.1');
  held.on('error', () => {});
  await new Promise<void>((resolve) => {
    held.once('data', () => resolve());
    held.write('hold');
  });
  // Whichever worker takes them, the peer's one slot is taken.
  for (let i = 0; i < 4; i++) t.equal((await exchange(limited, 'no', { expect: 0 })).received.length, 0, 'no peer below max_conns: closed');
  let zone = await settled('server_zones/limited', (z) => z.sessions.bad_gateway === 4);
  t.equal(zone.sessions.bad_gateway, 4);
  const peerPath = `upstreams/limited/peers/127.0.0.1:${c}`;
  t.equal((await status(peerPath)).selected.current, 1);
  const from = zonal.log.length;
  const old = zonal.workers();
  const gone = new Promise<void>((resolve) => held.once('close', () => resolve()));
  for (const pid of old) process.kill(pid, 'SIGKILL');
  await gone;
  await zonal.waitLog(/starting another[\s\S]*starting another/, 10_000, from);
  t.ok(await eventually(async () => zonal.workers().length === 2 && zonal.workers().every((p) => !old.includes(p)), 10_000), 'both workers replaced');
  t.equal((await status(peerPath)).selected.current, 0, "the dead worker's session is no longer current");
  let echoed = '';
  await eventually(async () => (echoed = (await exchange(limited, 'yes').catch(() => ({ received: Buffer.alloc(0) }))).received.toString()) === 'yes', 10_000);
  t.equal(echoed, 'yes', 'its max_conns slot was given back');
  // The exchange just made ends its own session as both sides close, which the client
  // may see before the worker counts it: wait for it, bounded.
  await eventually(async () => (zone = await status('server_zones/limited')).connections.processing === 0, 3000);
  t.equal(zone.connections.processing, 0, 'processing is repaired too');
});
