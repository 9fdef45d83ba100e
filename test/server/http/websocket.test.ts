// WebSocket proxying through a running bin/zonal, as nginx documents it
// (https://nginx.org/en/docs/http/websocket.html, ngx_http_proxy_module): the client's
// Upgrade request goes to the peer with the Upgrade and Connection headers the
// configuration sets; the peer's `101 Switching Protocols` goes back through the header
// filters and the connection becomes a tunnel until either side closes;
// proxy_read_timeout closes a silent tunnel, send_timeout and proxy_send_timeout one
// whose reader stopped; a non-101 answer is a normal response and the connection goes
// on. The request counts as a 101 in its zones and upstream peer, with the tunnel's
// bytes, and is logged when the tunnel closes.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';

const [front, secureFront, admin, echoPort, rawPort, wssPort] = await freePorts(6);

/** A WebSocket echo server (the `ws` package), with an X-Secret and an X-Shown header on
 * its 101; `/ws/hello` greets first. */
const echo = new WebSocketServer({ host: '127.0.0.1', port: echoPort });
echo.on('headers', (headers) => headers.push('X-Secret: s', 'X-Shown: v'));
/** What the echo server's last handshake request carried. */
let seenHeaders: Record<string, string | string[] | undefined> = {};
echo.on('connection', (socket, req) => {
  seenHeaders = req.headers;
  socket.on('message', (data, binary) => socket.send(data, { binary }));
  if (req.url === '/ws/hello') socket.send('hello');
});
await new Promise((r) => echo.once('listening', r));
t.teardown(() => new Promise((r) => echo.close(r)));

/** The Sec-WebSocket-Accept of a key (RFC 6455 4.2.2). */
const accept = (key: string) => createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC11B65`).digest('base64');

/** A raw backend: what each test makes it do with a connection, after its request head. */
type RawHandler = (socket: Socket, head: string, rest: Buffer) => void;
let onRaw: RawHandler = () => {};
const rawSockets = new Set<Socket>();
const raw: Server = createServer((socket) => {
  rawSockets.add(socket);
  socket.on('close', () => rawSockets.delete(socket));
  socket.on('error', () => {});
  let got = Buffer.alloc(0);
  const read = (d: Buffer) => {
    got = Buffer.concat([got, d]);
    const end = got.indexOf('\r\n\r\n');
    if (end < 0) return;
    socket.off('data', read);
    onRaw(socket, got.toString('latin1', 0, end), got.subarray(end + 4));
  };
  socket.on('data', read);
});
await new Promise<void>((r) => raw.listen(rawPort, '127.0.0.1', () => r()));
t.teardown(() => {
  for (const s of rawSockets) s.destroy();
  return new Promise((r) => raw.close(r));
});

/** The 101 a raw backend answers a WebSocket handshake with. */
const switching = (head: string) =>
  `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept(/sec-websocket-key: *(\S+)/i.exec(head)![1])}\r\n\r\n`;

/** A certificate for the TLS listener and the TLS backend. */
const certs = mkdtempSync(join(tmpdir(), 'zonal-ws-certs-'));
t.teardown(() => rmSync(certs, { recursive: true, force: true }));
execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '2', '-subj', '/CN=localhost'], { cwd: certs, stdio: 'ignore' });
const cert = readFileSync(join(certs, 'cert.pem'), 'utf8');
const key = readFileSync(join(certs, 'key.pem'), 'utf8');

/** A WebSocket echo server behind TLS (proxy_pass https://). */
const tlsBackend = createHttpsServer({ cert, key });
const wss = new WebSocketServer({ server: tlsBackend });
wss.on('connection', (socket) => socket.on('message', (data, binary) => socket.send(data, { binary })));
await new Promise<void>((r) => tlsBackend.listen(wssPort, '127.0.0.1', () => r()));
t.teardown(() => new Promise((r) => (wss.close(), tlsBackend.close(r))));

const upgradeHeaders = `proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";`;
const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    log_format tunnel '$request_uri $status $request_time $upstream_status $upstream_bytes_received';
    upstream echo { zone echo 64k; server 127.0.0.1:${echoPort}; }
    server {
        listen 127.0.0.1:${front};
        listen 127.0.0.1:${secureFront} ssl;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        status_zone ws_site;
        access_log tunnel.log tunnel;
        location /ws/ {
            status_zone ws_location;
            proxy_pass http://echo;
            ${upgradeHeaders}
            proxy_hide_header X-Secret;
            add_header X-Always a always;
            add_header X-Not-For-101 n;
        }
        location /tls/ {
            proxy_pass https://127.0.0.1:${wssPort};
            ${upgradeHeaders}
        }
        location /raw/ {
            proxy_pass http://127.0.0.1:${rawPort};
            ${upgradeHeaders}
            proxy_read_timeout 700ms;
        }
        location /stall/ {
            proxy_pass http://127.0.0.1:${rawPort};
            ${upgradeHeaders}
            proxy_read_timeout 10s;
            client_max_body_size 0;
            send_timeout 700ms;
            proxy_send_timeout 700ms;
        }
        location /plain/ { proxy_pass http://127.0.0.1:${rawPort}; }
        location /static/ { return 200 "static\\n"; }
    }
    server {
        listen 127.0.0.1:${admin};
        location / { api /; }
    }
}
`,
  'cert.pem': cert,
  'key.pem': key,
});
t.teardown(() => zonal.stop());

const status = (path: string) => getJson(`http://127.0.0.1:${admin}/status/${path}`).then((r) => r.body);

/** A WebSocket client, open. */
function open(url: string, options: WebSocket.ClientOptions = {}): Promise<{ ws: WebSocket; headers: Record<string, string | string[] | undefined>; status: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { ...options, handshakeTimeout: 5000 });
    keep(ws);
    let upgrade: { headers: Record<string, string | string[] | undefined>; status: number } | undefined;
    ws.once('upgrade', (res) => (upgrade = { headers: res.headers, status: res.statusCode ?? 0 }));
    ws.once('open', () => resolve({ ws, ...upgrade! }));
    ws.once('error', reject);
  });
}

/** The messages `ws` received, kept from its opening. */
const INBOX = new WeakMap<WebSocket, { messages: Buffer[]; wake?: () => void }>();
function keep(ws: WebSocket): void {
  const box: { messages: Buffer[]; wake?: () => void } = { messages: [] };
  INBOX.set(ws, box);
  ws.on('message', (data) => {
    box.messages.push(Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]));
    box.wake?.();
  });
}

/** The next message of `ws`, within `ms`. */
function message(ws: WebSocket, ms = 5000): Promise<Buffer> {
  const box = INBOX.get(ws)!;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no message')), ms);
    const take = () => {
      const next = box.messages.shift();
      if (next === undefined) return void (box.wake = take);
      box.wake = undefined;
      clearTimeout(timer);
      resolve(next);
    };
    take();
  });
}

/** Resolves with the ms it took `socket` (or ws) to close, rejects after `ms`. */
function closed(target: Socket | WebSocket, ms = 5000): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const done = () => (clearTimeout(timer), resolve(performance.now() - start));
    const timer = setTimeout(() => reject(new Error('not closed')), ms);
    if (target instanceof WebSocket ? target.readyState === WebSocket.CLOSED : target.destroyed) return done();
    target.once('close', done);
  });
}

/** A masked client frame (RFC 6455 5.2) of a short text. */
function clientFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = Buffer.from([1, 2, 3, 4]);
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, Buffer.from(payload.map((b, i) => b ^ mask[i % 4]))]);
}

/** A server frame (unmasked) of a short text. */
const serverFrame = (text: string) => Buffer.concat([Buffer.from([0x81, text.length]), Buffer.from(text)]);

/** A raw client connection to zonal, what it read so far, and a wait for more. */
function rawClient(port = front): Promise<{ socket: Socket; text: () => string; until: (re: RegExp, ms?: number) => Promise<string> }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const waiters: Array<() => void> = [];
    socket.on('data', (d) => {
      text += d.toString('latin1');
      waiters.splice(0).forEach((w) => w());
    });
    socket.on('error', () => {});
    const until = (re: RegExp, ms = 5000) =>
      new Promise<string>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`no ${re} in ${JSON.stringify(text)}`)), ms);
        const check = () => (re.test(text) ? (clearTimeout(timer), ok(text)) : socket.destroyed ? (clearTimeout(timer), fail(new Error(`closed before ${re}: ${JSON.stringify(text)}`))) : waiters.push(check));
        socket.once('close', () => waiters.splice(0).forEach((w) => w()));
        check();
      });
    socket.once('connect', () => resolve({ socket, text: () => text, until }));
  });
}

/** Writes to `socket` as fast as it takes it, until it closes, `done` says so, 8 s pass
 * or 256 MiB went (far past what loopback buffers hold). */
function flood(socket: Socket, done = () => false): void {
  const chunk = Buffer.alloc(256 * 1024, 1);
  const stop = performance.now() + 8000;
  let sent = 0;
  const pump = () => {
    while (!socket.destroyed && !done() && sent < 256 * 1024 * 1024 && performance.now() < stop) {
      sent += chunk.length;
      if (!socket.write(chunk)) return void socket.once('drain', pump);
    }
  };
  pump();
}

/** A raw client through zonal's `path` to the raw backend, which answers 101: both ends
 * of the tunnel once the 101 is in. */
async function tunnelTo(path: string): Promise<{ client: Awaited<ReturnType<typeof rawClient>>; peer: Socket }> {
  let peer: Socket | undefined;
  onRaw = (socket, head) => {
    peer = socket;
    socket.write(switching(head));
  };
  const client = await rawClient();
  client.socket.write(handshake(path));
  await client.until(/\r\n\r\n/);
  return { client, peer: peer! };
}

const handshake = (path: string, extra = '') =>
  `GET ${path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`;

t.test('the handshake: the peer gets Upgrade and the configured Connection, the client its 101 through the header filters', async (t) => {
  const { ws, headers, status } = await open(`ws://127.0.0.1:${front}/ws/`);
  t.equal(status, 101, '101 Switching Protocols');
  t.equal(headers.upgrade, 'websocket', "the peer's Upgrade is passed on");
  t.equal(headers.connection, 'upgrade', "nginx's Connection: upgrade");
  t.equal(headers['x-shown'], 'v', "the peer's other headers are passed on");
  t.notOk('x-secret' in headers, 'proxy_hide_header applies');
  t.equal(headers['x-always'], 'a', 'add_header ... always applies to a 101');
  t.notOk('x-not-for-101' in headers, 'add_header without always does not (101 is not among its statuses)');
  t.equal(seenHeaders.upgrade, 'websocket', 'the peer saw Upgrade, set by proxy_set_header');
  t.equal(seenHeaders.connection, 'upgrade', 'the peer saw the configured Connection');
  ws.close();
  await closed(ws);
});

t.test('frames go both ways, a big one too, and what the peer sends first', async (t) => {
  const { ws } = await open(`ws://127.0.0.1:${front}/ws/hello`);
  t.equal((await message(ws)).toString(), 'hello', 'the peer spoke first');
  ws.send('foo');
  t.equal((await message(ws)).toString(), 'foo', 'a text frame there and back');
  const big = Buffer.alloc(8 * 1024 * 1024 + 3);
  for (let i = 0; i < big.length; i++) big[i] = i % 251;
  ws.send(big);
  t.ok((await message(ws, 15_000)).equals(big), 'an 8 MiB binary frame there and back intact');
  for (let i = 0; i < 20; i++) ws.send(`m${i}`);
  const got: string[] = [];
  for (let i = 0; i < 20; i++) got.push((await message(ws)).toString());
  t.same(got, Array.from({ length: 20 }, (_, i) => `m${i}`), 'many frames in order');
  ws.close();
  t.ok((await closed(ws)) >= 0, 'the close handshake goes through');
});

t.test('a TLS listener and a TLS peer (proxy_pass https://)', async (t) => {
  const { ws, status } = await open(`wss://127.0.0.1:${secureFront}/tls/`, { rejectUnauthorized: false });
  t.equal(status, 101, 'wss to zonal, https to the peer: 101');
  ws.send('over tls');
  t.equal((await message(ws)).toString(), 'over tls', 'frames both ways through both TLS hops');
  const big = Buffer.alloc(2 * 1024 * 1024, 7);
  ws.send(big);
  t.ok((await message(ws, 15_000)).equals(big), 'a 2 MiB frame through both TLS hops');
  ws.close();
  await closed(ws);
});

t.test("bytes pipelined after the client's head and after the peer's 101 are passed on", async (t) => {
  let peerGot = '';
  onRaw = (socket, head, rest) => {
    // The 101 and a frame in one write.
    socket.write(Buffer.concat([Buffer.from(switching(head)), serverFrame('first')]));
    // What the client pipelined comes after the head (nginx passes it once upgraded).
    peerGot = rest.toString('latin1');
    socket.on('data', (d) => (peerGot += d.toString('latin1')));
  };
  const client = await rawClient();
  client.socket.write(Buffer.concat([Buffer.from(handshake('/raw/pipelined')), clientFrame('early')]));
  const text = await client.until(/first$/);
  t.match(text, /^HTTP\/1\.1 101 Switching Protocols\r\n/, 'the 101 first');
  t.ok(text.endsWith(serverFrame('first').toString('latin1')), "the peer's frame right after the 101's head");
  t.ok(await eventually(async () => peerGot === clientFrame('early').toString('latin1')), 'the peer got the frame the client pipelined with its handshake');
  client.socket.destroy();
});

t.test('the peer closing closes the client; the client closing closes the peer', async (t) => {
  const one = await tunnelTo('/raw/peer-closes');
  one.peer.end();
  t.ok((await closed(one.client.socket)) < 5000, 'the peer ended: the client is closed');

  const two = await tunnelTo('/raw/client-closes');
  two.client.socket.end();
  t.ok((await closed(two.peer)) < 5000, 'the client ended: the peer is closed');

  // What one side sent before its end reaches the other first.
  onRaw = (socket, head) => {
    socket.end(Buffer.concat([Buffer.from(switching(head)), serverFrame('last words')]));
  };
  const three = await rawClient();
  three.socket.write(handshake('/raw/last-words'));
  await closed(three.socket);
  t.ok(three.text().endsWith(serverFrame('last words').toString('latin1')), "the peer's last bytes before its end reach the client");
});

t.test('proxy_read_timeout closes a silent tunnel; traffic either way keeps it open', async (t) => {
  const busy = await tunnelTo('/raw/busy');
  busy.peer.on('data', () => {});
  // 1.4 s of client frames every 200 ms: twice proxy_read_timeout, never silent that long.
  for (let i = 0; i < 7; i++) {
    await new Promise((r) => setTimeout(r, 200));
    busy.client.socket.write(clientFrame('ping'));
  }
  t.notOk(busy.client.socket.destroyed, 'a tunnel with traffic stays open past proxy_read_timeout');
  const ms = await closed(busy.client.socket, 5000);
  t.ok(ms >= 500 && ms < 2500, `silent, it closes after proxy_read_timeout (700ms): ${Math.round(ms)} ms`);
  t.ok((await closed(busy.peer)) < 1000, 'the peer is closed too');
});

t.test('send_timeout: a client that stops reading is closed; proxy_send_timeout: a peer that stops reading is', async (t) => {
  // proxy_read_timeout is 10 s there: only the send timeouts (700ms) close these.
  const deaf = await tunnelTo('/stall/deaf-client');
  deaf.client.socket.pause();
  flood(deaf.peer);
  const ms = await closed(deaf.peer, 8000);
  t.ok(ms < 4000, `the peer's connection closed once the client read nothing for send_timeout: ${Math.round(ms)} ms`);
  deaf.client.socket.destroy();

  const loud = await tunnelTo('/stall/deaf-peer');
  loud.peer.pause();
  flood(loud.client.socket);
  const closedIn = await closed(loud.client.socket, 8000);
  t.ok(closedIn < 4000, `the client's connection closed once the peer read nothing for proxy_send_timeout: ${Math.round(closedIn)} ms`);
  loud.peer.destroy();
});

t.test('a non-101 answer to an Upgrade request is a normal response, and the connection goes on', async (t) => {
  onRaw = (socket) => {
    // The peer's own connection closes after its answer; the client's goes on.
    socket.end('HTTP/1.1 426 Upgrade Required\r\nConnection: close\r\nContent-Length: 15\r\n\r\nno upgrade here');
  };
  const client = await rawClient();
  client.socket.write(handshake('/raw/refused'));
  await client.until(/no upgrade here$/);
  t.match(client.text(), /^HTTP\/1\.1 426 /, "the peer's 426 is the answer");
  t.notMatch(client.text(), /connection: close/i, 'kept alive');
  client.socket.write('GET /static/ HTTP/1.1\r\nHost: localhost\r\n\r\n');
  await client.until(/static\n$/);
  t.pass('the next request on the connection is answered');
  client.socket.write(handshake('/static/again'));
  await client.until(/static\n[^]*static\n$/);
  t.pass('an Upgrade request to a location that does not proxy is answered as any request');
  client.socket.destroy();

  // Without the configured headers the peer is asked for no upgrade (hop-by-hop headers
  // stay on their hop), and its answer is a normal response.
  let seen = '';
  onRaw = (socket, head) => {
    seen = head;
    socket.end('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok');
  };
  const plain = await rawClient();
  plain.socket.write(handshake('/plain/'));
  await plain.until(/ok$/);
  t.notMatch(seen, /^upgrade:/im, 'no Upgrade header went to the peer');
  t.notMatch(seen, /^connection: *upgrade/im, 'nor Connection: upgrade');
  plain.socket.destroy();
});

t.test('counted as a 101 in the server zone, the location zone and the peer, with the tunnel bytes, logged when it closes', async (t) => {
  const peerPath = `http/upstreams/echo/peers/127.0.0.1:${echoPort}`;
  const before = { site: await status('http/server_zones/ws_site'), location: await status('http/location_zones/ws_location'), peer: await status(peerPath) };
  const { ws } = await open(`ws://127.0.0.1:${front}/ws/counted`);
  const payload = Buffer.alloc(300_000, 9);
  ws.send(payload);
  await message(ws);
  // Not counted while the tunnel is open: nginx counts a request at its end.
  const during = await status('http/server_zones/ws_site');
  t.equal(during.responses['101'] ?? 0, before.site.responses['101'] ?? 0, 'not counted while the tunnel is open');
  await new Promise((r) => setTimeout(r, 300));
  ws.close();
  await closed(ws);
  t.ok(await eventually(async () => ((await status('http/server_zones/ws_site')).responses['101'] ?? 0) > (before.site.responses['101'] ?? 0)), 'the server zone counts a 101');
  const site = await status('http/server_zones/ws_site');
  const location = await status('http/location_zones/ws_location');
  const peer = await status(peerPath);
  t.equal(site.requests.total - before.site.requests.total, 1, 'one request in the server zone');
  t.ok(site.data.received - before.site.data.received > payload.length, `the server zone received the frame's bytes (${site.data.received - before.site.data.received})`);
  t.ok(site.data.sent - before.site.data.sent > payload.length, `the server zone sent the echo's bytes (${site.data.sent - before.site.data.sent})`);
  t.equal(location.responses['101'] - (before.location.responses['101'] ?? 0), 1, 'the location zone counts a 101');
  t.ok(location.data.received - before.location.data.received > payload.length, 'the location zone received the bytes');
  t.equal(peer.responses['101'] - (before.peer.responses['101'] ?? 0), 1, 'the peer counts a 101 response');
  t.ok(peer.data.sent - before.peer.data.sent > payload.length, `the peer was sent the frame's bytes (${peer.data.sent - before.peer.data.sent})`);
  t.ok(peer.data.received - before.peer.data.received > payload.length, `the peer's echo was received (${peer.data.received - before.peer.data.received})`);
  t.equal(peer.selected.current, 0, 'the peer is released once the tunnel closed');
  const lines = await (async () => {
    let found: string[] = [];
    await eventually(async () => (found = readFileSync(join(zonal.dir, 'tunnel.log'), 'utf8').split('\n').filter((l) => l.startsWith('/ws/counted '))).length > 0);
    return found;
  })();
  t.equal(lines.length, 1, 'one access log line');
  const [, code, time, upstreamStatus, upstreamBytes] = lines[0].split(' ');
  t.equal(code, '101', '$status is 101');
  t.ok(Number(time) >= 0.3, `$request_time covers the tunnel (${time})`);
  t.equal(upstreamStatus, '101', '$upstream_status is 101');
  t.ok(Number(upstreamBytes) > payload.length, '$upstream_bytes_received counts the tunnel');
});

t.test('proxy_send_timeout is checked as nginx checks a time', async (t) => {
  const { checkConfig } = await import('../zonal.js');
  const bad = await checkConfig('events {}\nhttp { server { listen 127.0.0.1:1; location / { proxy_pass http://127.0.0.1:2; proxy_send_timeout soon; } } }\n');
  t.equal(bad.code, 1, 'an invalid time is refused');
  t.match(bad.err, /invalid value "soon" in "proxy_send_timeout" directive/, "nginx's words");
  t.equal((await checkConfig('events {}\nhttp { proxy_send_timeout 5s; server { listen 127.0.0.1:1; location / { proxy_pass http://127.0.0.1:2; proxy_send_timeout 1m; } } }\n')).code, 0, 'accepted in http and location');
});

t.test('proxy_send_timeout: a request body the peer stops reading ends the attempt as a timeout (504)', async (t) => {
  let peer: Socket | undefined;
  onRaw = (socket) => {
    peer = socket;
    // Reads the head, then nothing more.
    socket.pause();
  };
  const client = await rawClient();
  const length = 256 * 1024 * 1024;
  client.socket.write(`POST /stall/upload HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${length}\r\n\r\n`);
  const start = performance.now();
  flood(client.socket, () => /\r\n\r\n/.test(client.text()));
  const text = await client.until(/\r\n\r\n/, 8000);
  const ms = performance.now() - start;
  t.match(text, /^HTTP\/1\.1 504 /, '504 Gateway Time-out');
  t.ok(ms < 4000, `within about proxy_send_timeout (700ms) of the stall: ${Math.round(ms)} ms`);
  client.socket.destroy();
  peer?.destroy();
});
