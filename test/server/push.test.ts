// Live push through the zonal server's admin listener (issue 18): the streams go through
// the listener's locations, access rules and basic auth like any read, and a WebSocket
// message that moves to another location is checked there.
import t from 'tap';
import bcrypt from 'bcryptjs';
import { EventSourceClient, SocketClient } from '../transport/push.js';
import { freePorts, Zonal } from './zonal.js';

t.test('admin listener: streams pass its access rules and basic auth', async (t) => {
  const [admin] = await freePorts(1);
  const z = await Zonal.start({
    'zonal.conf': `http {
        server {
            listen 127.0.0.1:${admin} admin;
            location / { api /; }
            location /closed/ { api /status/; deny all; }
            location /secret/ { api /status/; auth_basic "zonal"; auth_basic_user_file htpasswd; }
        }
    }`,
    htpasswd: `alice:${bcrypt.hashSync('secret', 4)}\n`,
  });
  t.teardown(() => z.stop());
  const base = `http://127.0.0.1:${admin}`;
  const ws = `ws://127.0.0.1:${admin}`;

  const open = await EventSourceClient.open(`${base}/status/connections?interval=100`);
  t.equal(open.status, 200);
  await open.events.count(3);
  t.ok(open.json().every((c: any) => typeof c.accepted === 'number'), 'events of /status/connections');
  open.close();

  const closed = await EventSourceClient.open(`${base}/closed/connections`);
  t.equal(closed.status, 403, 'deny all: 403');
  t.equal(JSON.parse(await closed.body).error, 'Forbidden');

  const anonymous = await EventSourceClient.open(`${base}/secret/connections`);
  t.equal(anonymous.status, 401, 'basic auth: 401 without credentials');
  t.match(anonymous.headers['www-authenticate'], /^Basic realm="zonal"/);

  // The right password: the answer comes after the hash check, off the event loop.
  const alice = await EventSourceClient.open(`http://alice:secret@127.0.0.1:${admin}/secret/connections?interval=100`);
  t.equal(alice.status, 200, 'with the password: a stream');
  await alice.events.count(2);
  alice.close();

  const refused = await SocketClient.open(`${ws}/closed/connections`).then(
    () => undefined,
    (e: { status?: number }) => e,
  );
  t.equal(refused?.status, 403, 'a WebSocket upgrade where access is denied: 403');

  // A socket opened where it may read cannot move where it may not.
  const socket = await SocketClient.open(`${ws}/status/connections?interval=100`);
  await socket.messages.count(1);
  let seen = socket.messages.items.length;
  socket.send({ path: '/closed/connections' });
  const error = await socket.next(seen, (m) => 'error' in m);
  t.equal(error.error, 'Forbidden', 'moving to a denied location: Forbidden on the socket');
  seen = socket.messages.items.length;
  socket.send({ path: '/secret/connections' });
  t.equal((await socket.next(seen, (m) => 'error' in m)).error, 'Unauthorized', 'to a location with basic auth, without its credentials: Unauthorized');
  seen = socket.messages.items.length;
  t.ok('accepted' in (await socket.next(seen, () => true)), 'still pushing /status/connections');
  seen = socket.messages.items.length;
  socket.send({ path: '/status/server' });
  t.ok('generation' in (await socket.next(seen, (m) => 'generation' in m)), 'and moves where it may');
  socket.close();
});

t.test('stopping the server with streams open: it exits at once, and the clients see the end', async (t) => {
  const [admin] = await freePorts(1);
  const z = await Zonal.start({ 'zonal.conf': `http { server { listen 127.0.0.1:${admin} admin; location / { api /; } } }` });
  t.teardown(() => z.stop());
  const sse = await EventSourceClient.open(`http://127.0.0.1:${admin}/status/connections?interval=100`);
  const socket = await SocketClient.open(`ws://127.0.0.1:${admin}/status/connections?interval=100`);
  await sse.events.count(1);
  await socket.messages.count(1);
  const start = Date.now();
  z.child.kill('SIGTERM');
  const exit = await z.waitExit(20_000);
  t.same(exit, { code: 0, signal: null }, `exited with 0 in ${Date.now() - start} ms`);
  await sse.events.count(Infinity, 10_000).catch((e: Error) => t.match(e.message, /^ended/, 'the event stream ended'));
  await socket.messages.count(Infinity, 10_000).catch((e: Error) => t.match(e.message, /^ended/, 'the socket closed'));
});
