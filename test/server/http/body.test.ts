// Chunked request bodies before proxying, as nginx reads them: in full first; past
// client_body_buffer_size into a file of client_body_temp_path (removed after); past
// client_max_body_size answered 413 with nothing forwarded; a body the client stops
// sending answered 408 after client_body_timeout; $request_body, the body read into
// memory. (A body with a Content-Length streams: the limit is checked on the header,
// connections.test.ts.)
import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, freePorts, Zonal } from '../zonal.js';
import { exchange, statuses } from './raw.js';

const [site, backendPort] = await freePorts(2);

/** What reached the backend, and a gate that holds its answers while a test looks. */
const received: Array<{ url: string; body: string; headers: IncomingMessage['headers'] }> = [];
let hold: Promise<void> | undefined;
let arrived: (() => void) | undefined;
const backend = createServer((req: IncomingMessage, res: ServerResponse) => {
  let body = '';
  req.setEncoding('latin1');
  // A peer slow to start reading: zonal's writes to it wait (its queue is full).
  if (req.url?.startsWith('/large/')) {
    req.pause();
    setTimeout(() => req.resume(), 500);
  }
  req.on('data', (d: string) => (body += d));
  req.on('end', async () => {
    received.push({ url: req.url ?? '', body, headers: req.headers });
    arrived?.();
    await hold;
    res.end(`got ${body.length}\n`);
  });
});
await new Promise<void>((r) => backend.listen(backendPort, '127.0.0.1', r));

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    client_body_temp_path body_temp 1 2;
    server {
        listen 127.0.0.1:${site};
        client_body_buffer_size 16;
        client_max_body_size 100;
        client_body_timeout 1s;
        location / { proxy_pass http://127.0.0.1:${backendPort}; }
        location /large/ { client_max_body_size 0; proxy_pass http://127.0.0.1:${backendPort}; }
        location /echo/ {
            add_header X-Body "[$request_body]" always;
            proxy_pass http://127.0.0.1:${backendPort};
        }
    }
}
`,
});
t.teardown(async () => {
  await z.stop();
  backend.close();
});

const chunked = (path: string, pieces: string[]) =>
  `POST ${path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
  pieces.map((p) => `${p.length.toString(16)}\r\n${p}\r\n`).join('') +
  '0\r\n\r\n';

/** Every file under `dir`, with its text; one the server removes while it is read (as it
 * does once the response closes) is not there. */
function filesUnder(dir: string): Array<{ path: string; text: string }> {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    try {
      return statSync(path).isDirectory() ? filesUnder(path) : [{ path, text: readFileSync(path, 'latin1') }];
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
  });
}

t.test('a chunked body within client_max_body_size is proxied whole', async (t) => {
  const r = await exchange(site, chunked('/small', ['abc', 'defg']), { count: 1 });
  t.same(statuses(r.text), [200], r.text);
  t.match(r.text, /got 7\n$/);
  t.equal(received.at(-1)?.body, 'abcdefg');
});

t.test('$request_body: the body read into memory; none once it went to a file, or streamed', async (t) => {
  const memory = await exchange(site, chunked('/echo/memory', ['abc', 'defg']), { count: 1 });
  t.match(memory.text, /\r\nX-Body: \[abcdefg\]\r\n/i, 'within client_body_buffer_size');
  const file = await exchange(site, chunked('/echo/file', ['a'.repeat(20)]), { count: 1 });
  t.match(file.text, /\r\nX-Body: \[\]\r\n/i, 'past client_body_buffer_size');
  const streamed = await exchange(site, 'POST /echo/streamed HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc', { count: 1 });
  t.same(statuses(streamed.text), [200]);
  t.match(streamed.text, /\r\nX-Body: \[\]\r\n/i, 'a Content-Length body is not read first');
});

t.test('a chunked body past client_max_body_size gets 413, and nothing is forwarded', async (t) => {
  const before = received.length;
  const r = await exchange(site, chunked('/big', ['a'.repeat(60), 'b'.repeat(60)]), { count: 1 });
  t.same(statuses(r.text), [413], r.text);
  const control = await exchange(site, chunked('/after', ['x']), { count: 1 });
  t.same(statuses(control.text), [200]);
  t.same(received.slice(before).map((x) => x.url), ['/after'], 'only the request after it reached the backend');
});

t.test('a body past client_body_buffer_size goes through a file of client_body_temp_path', async (t) => {
  let open!: () => void;
  hold = new Promise<void>((r) => (open = r));
  const came = new Promise<void>((r) => (arrived = r));
  const body = 'z'.repeat(40) + 'END';
  const answer = exchange(site, chunked('/file', [body.slice(0, 10), body.slice(10)]), { count: 1 });
  await came;
  const temp = join(z.dir, 'body_temp');
  const files = filesUnder(temp);
  t.equal(files.length, 1, 'one file while the request is proxied');
  t.equal(files[0]?.text, body, 'the whole body');
  // nginx's levels: a directory of the name's last character, then one of the two before.
  const name = files[0]?.path.slice(temp.length + 1).split('/') ?? [];
  t.equal(name.length, 3, name.join('/'));
  t.equal(name[0], name[2]?.slice(-1));
  t.equal(name[1], name[2]?.slice(-3, -1));
  open();
  hold = undefined;
  arrived = undefined;
  const r = await answer;
  t.match(r.text, /got 43\n$/);
  t.equal(received.at(-1)?.body, body);
  // Removed as the response closes, which the client may see first.
  t.ok(await eventually(async () => filesUnder(temp).length === 0), 'the file is removed after the response');
});

t.test('a body the client stops sending gets 408 after client_body_timeout', async (t) => {
  const before = received.length;
  const started = Date.now();
  const r = await exchange(site, 'POST /slow HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\na\r\nabc', { ms: 4000 });
  const after = Date.now() - started;
  t.same(statuses(r.text), [408], r.text);
  t.ok(after >= 900 && after < 3000, `after about 1s (${after} ms)`);
  t.equal(received.length, before, 'nothing was forwarded');
});

t.test('a large chunked body goes to the peer whole, its chunks framed while the socket is full', async (t) => {
  // 16 MiB, more than loopback buffers hold while the peer does not read: each chunk's
  // size, data and end are written even when a write says the queue is full.
  const pieces = Array.from({ length: 256 }, (_, i) => String.fromCharCode(97 + (i % 26)).repeat(64 * 1024));
  const r = await exchange(site, chunked('/large/', pieces), { count: 1, ms: 20_000 });
  t.match(r.text, new RegExp(`got ${256 * 64 * 1024}\\n$`), 'the peer read the whole body');
  t.equal(received.at(-1)?.body, pieces.join(''), 'intact');
});
