// When a stream session ends, and how least_conn counts what is open, from nginx's
// documentation of ngx_stream_proxy_module (`proxy_half_close`, default off: the session
// ends when one side closes) and ngx_stream_upstream_module (`least_conn`: the peer with
// the fewest active connections, weights counted; ties by weighted round robin).
import t from 'tap';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';

const [admin, check, halfOn, least, held, answering] = await freePorts(6);

/** A backend that never ends a connection by itself: what it holds open stays open
 * until zonal closes it (its end, then the backend's close). */
const open = new Set<Socket>();
let silentClosed = 0;
const silent = createServer({ allowHalfOpen: true }, (s) => {
  open.add(s);
  s.on('error', () => {});
  s.on('end', () => s.destroy());
  s.on('close', () => (open.delete(s), silentClosed++));
});

/** nginx-tests' stream daemon for least_conn: answers its own port and closes, except
 * that `held` keeps a connection that sent "w" (nginx's test sleeps there). */
const heldSockets: Socket[] = [];
const portAnswer = (port: number, hold: boolean): Server =>
  createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => {});
    s.once('data', (d: Buffer) => {
      if (hold && d.includes('w')) return void heldSockets.push(s);
      s.end(String(port));
    });
  });
const heldServer = portAnswer(held, true);
const answeringServer = portAnswer(answering, false);

/** An echo that answers only once the client's end came (a half-closing protocol). */
const atEnd = createServer({ allowHalfOpen: true }, (s) => {
  const chunks: Buffer[] = [];
  s.on('data', (d: Buffer) => chunks.push(d));
  s.on('end', () => s.end(Buffer.concat(chunks)));
  s.on('error', () => {});
});

const [silentPort, atEndPort] = await freePorts(2);
await Promise.all(
  [
    [silent, silentPort],
    [heldServer, held],
    [answeringServer, answering],
    [atEnd, atEndPort],
  ].map(([server, port]) => new Promise<void>((resolve) => (server as Server).listen(port as number, '127.0.0.1', () => resolve()))),
);
t.teardown(async () => {
  for (const s of [...open, ...heldSockets]) s.destroy();
  await Promise.all([silent, heldServer, answeringServer, atEnd].map((s) => new Promise((r) => s.close(r))));
});

const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    server { listen 127.0.0.1:${admin} admin; location /status/ { api /status/; } }
}
stream {
    upstream u { zone u 64k; least_conn; server 127.0.0.1:${held}; server 127.0.0.1:${answering}; }
    server { listen 127.0.0.1:${check}; status_zone check; proxy_pass 127.0.0.1:${silentPort}; }
    server { listen 127.0.0.1:${halfOn}; status_zone half; proxy_half_close on; proxy_pass 127.0.0.1:${atEndPort}; }
    server { listen 127.0.0.1:${least}; status_zone least; proxy_pass u; }
}
`,
});
t.teardown(() => zonal.stop());

const status = async (path: string) => (await getJson(`http://127.0.0.1:${admin}/status/stream/${path}`)).body;

/** Connects; resolves with what came back once zonal closed the connection (bounded).
 * `end`: the client ends its side after writing; `answerEnd`: it ends its side when
 * zonal's end comes (false: it keeps its side open, and resolves at zonal's end). */
function session(port: number, write?: string, end = false, answerEnd = true): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let got = '';
    const timer = setTimeout(() => (s.destroy(), reject(new Error(`session on ${port} still open after 5 s (${JSON.stringify(got)})`))), 5000);
    s.on('data', (d: Buffer) => (got += d));
    if (answerEnd) s.on('end', () => s.end());
    else s.on('end', () => (clearTimeout(timer), resolve(got), t.teardown(() => s.destroy())));
    s.on('error', () => {});
    s.on('close', () => (clearTimeout(timer), resolve(got)));
    if (write !== undefined) s.write(write);
    if (end) s.end();
  });
}

t.test('a client that connects and closes without a byte: the session ends at once, 200, the peer connection closed', async (t) => {
  const before = silentClosed;
  await session(check, undefined, true);
  let zone: any;
  t.ok(
    await eventually(async () => (zone = await status('server_zones/check')).connections.processing === 0 && zone.sessions.success === 1),
    'processing back to 0, one session of code 200',
  );
  t.same(zone.connections, { total: 1, processing: 0, discarded: 0 });
  t.same(zone.sessions, { success: 1, invalid: 0, forbidden: 0, internal_error: 0, bad_gateway: 0, service_unavailable: 0 });
  t.ok(await eventually(async () => silentClosed === before + 1), 'the connection to the peer was closed');
  t.equal(open.size, 0, 'no connection to the peer left open');
});

t.test('proxy_half_close off (the default): the peer closing ends the session, the client still open', async (t) => {
  // The answering backend ends its side; the client keeps its own open: the session is
  // over all the same (with proxy_half_close on it would wait for the client's end).
  const got = await session(least, '.', false, false);
  t.match(got, /^\d+$/, 'the answer came, then the end of the connection');
  let zone: any;
  t.ok(
    await eventually(async () => (zone = await status('server_zones/least')).connections.processing === 0 && zone.sessions.success === 1),
    'the session ended with 200 while the client still held its side',
  );
});

t.test('proxy_half_close on: the client end is passed on, the answer after it still comes', async (t) => {
  t.equal(await session(halfOn, 'question', true), 'question');
});

t.test('least_conn: the peer with fewer active connections takes them all, as nginx', async (t) => {
  // Ten short sessions first: equal counts, so round robin between the two (one worker,
  // as nginx's test: each worker has its own round robin).
  const ports: string[] = [];
  for (let i = 0; i < 10; i++) ports.push(await session(least, '.'));
  t.equal(ports.filter((p) => p === String(held)).length, 5, 'balanced: 5 to one');
  t.equal(ports.filter((p) => p === String(answering)).length, 5, 'balanced: 5 to the other');

  // Two sessions sending "w": the held peer keeps its one open, the other answers.
  const kept: Socket[] = [];
  for (let i = 0; i < 2; i++) {
    const s = connect({ port: least, host: '127.0.0.1', allowHalfOpen: true });
    s.on('error', () => {});
    s.write('w');
    kept.push(s);
  }
  t.teardown(() => kept.forEach((s) => s.destroy()));
  t.ok(
    await eventually(async () => {
      const peers = await status('upstreams/u/peers');
      return peers[`127.0.0.1:${held}`]?.selected.current === 1 && peers[`127.0.0.1:${answering}`]?.selected.current === 0;
    }),
    'one session open at the held peer, none at the answering one',
  );

  const after: string[] = [];
  for (let i = 0; i < 10; i++) after.push(await session(least, '.'));
  t.same(after, Array(10).fill(String(answering)), 'all ten to the peer with fewer active connections');
});
