// Both API transports, the uWebSockets.js listener and the node:http listener, run the
// same requests: what reaches the handler, and what the client gets back, byte for byte.
import t from 'tap';
import { createHash } from 'node:crypto';
import { Agent as HttpAgent, createServer, request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { ApiRequest, ApiResponse } from '../../src/api/types.js';
import { apiListener } from '../../src/transport/http.js';
import { BODY_CAP, BODY_LIMIT, serveApi, type ApiHandler } from '../../src/transport/uws.js';
import { startTransport, transports } from './harness.js';
import { RawClient, request, type RawResponse } from './raw.js';

const json = (status: number, value: unknown, extra: Record<string, string> = {}): ApiResponse => {
  const body = JSON.stringify(value);
  return { status, headers: { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)), ...extra }, body };
};

/** A small API: echoes what it was given, and has a few paths with set answers. */
function testApi(seen: ApiRequest[]): ApiHandler {
  return (req) => {
    seen.push(req);
    const headFree = (res: ApiResponse): ApiResponse => (req.method === 'HEAD' ? { ...res, body: '' } : res);
    if (req.path === '/boom') throw new Error('handler exploded');
    if (req.path === '/bad-status') return { status: 42, headers: {}, body: '' };
    if (req.path === '/bad-header') return { status: 200, headers: { 'X-Evil': 'a\r\nInjected: yes' }, body: 'x' };
    // A value with characters above 0x7f, which both transports send as UTF-8.
    if (req.path === '/status/latin1') return { status: 200, headers: { 'Content-Type': 'text/plain', 'X-Name': 'caf\u00e9 \u00ff' }, body: 'x' };
    if (!req.path.startsWith('/status') && !req.path.startsWith('/config')) return undefined;
    const code = /^\/status\/code\/(\d+)$/.exec(req.path);
    if (code) return headFree(json(Number(code[1]), { code: Number(code[1]) }, { 'X-Zonal': 'yes' }));
    if (req.path.startsWith('/config')) {
      const length = req.body?.length ?? 0;
      if (length > BODY_LIMIT) return json(413, { error: 'TooLarge', description: `${length} bytes` });
      return headFree(
        json(req.method === 'PUT' ? 201 : 200, {
          method: req.method,
          length,
          sha1: req.body ? createHash('sha1').update(req.body).digest('hex') : null,
        }),
      );
    }
    return headFree(
      // HEAD gets the headers of the GET answer, so its Content-Length too
      json(200, { method: req.method === 'HEAD' ? 'GET' : req.method, path: req.path, query: req.query, address: req.address, host: req.host ?? null }, {
        'Cache-Control': 'no-cache',
        Expires: 'Thu, 01 Jan 1970 00:00:01 GMT',
      }),
    );
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const jsonOf = async (r: Response): Promise<Record<string, any>> => (await r.json()) as Record<string, any>;
const sha1 = (b: Buffer) => createHash('sha1').update(b).digest('hex');

t.test('the uWebSockets.js native binding is loaded, not the package\'s JS fallback', async (t) => {
  const require = createRequire(import.meta.url);
  require('uWebSockets.js');
  const native = Object.keys(require.cache).filter((k) => /uWebSockets\.js\/binaries\/uws_linux_x64_\d+\.node$/.test(k));
  t.equal(native.length, 1, `native binding in the module cache: ${native.join(', ')}`);
});

for (const kind of transports) {
  t.test(kind, async (t) => {
    const seen: ApiRequest[] = [];
    const errors: unknown[] = [];
    const server = await startTransport(kind, testApi(seen), (err) => errors.push(err));
    t.teardown(() => server.close());
    const port = server.port;
    const fetchOpts = { signal: AbortSignal.timeout(5000) };

    t.test('status, headers and body pass through', async (t) => {
      const res = await fetch(`${server.url}/status/code/201`, fetchOpts);
      t.equal(res.status, 201);
      t.equal(res.statusText, 'Created');
      t.equal(res.headers.get('content-type'), 'application/json');
      t.equal(res.headers.get('x-zonal'), 'yes');
      t.same(await jsonOf(res), { code: 201 });

      const c = await RawClient.connect(port);
      t.teardown(() => c.destroy());
      const lines: Record<number, string> = {
        200: 'OK', 400: 'Bad Request', 404: 'Not Found', 405: 'Method Not Allowed', 413: 'Payload Too Large',
        500: 'Internal Server Error', 507: 'Insufficient Storage', 201: 'Created',
      };
      for (const [code, text] of Object.entries(lines)) {
        await c.send(request('GET', `/status/code/${code}`));
        const r = await c.read();
        t.equal(r.statusLine, `HTTP/1.1 ${code} ${text}`);
        t.equal(r.headerList.filter(([k]) => k.toLowerCase() === 'content-length').length, 1, `${code}: one Content-Length`);
        t.equal(r.headers['content-length'], String(r.body.length));
        t.equal(r.headers['x-zonal'], 'yes');
        t.same(JSON.parse(r.body.toString()), { code: Number(code) });
      }
    });

    t.test('the request reaches the handler as received', async (t) => {
      seen.length = 0;
      const res = await fetch(`${server.url}/status/a%2Fb/%7Ezone?pretty=off&date=epoch&x=%20y`, fetchOpts);
      t.equal(res.status, 200);
      t.same(await jsonOf(res), {
        method: 'GET',
        path: '/status/a%2Fb/%7Ezone',
        query: 'pretty=off&date=epoch&x=%20y',
        address: '127.0.0.1',
        host: `127.0.0.1:${port}`,
      });
      t.equal(seen.length, 1);
      t.equal(seen[0]!.body, undefined, 'no body for a GET');

      const r2 = await fetch(`${server.url}/status/`, fetchOpts);
      t.same((await jsonOf(r2)).query, '', 'no query: empty string');

      for (const method of ['DELETE', 'OPTIONS', 'POST']) {
        const r = await fetch(`${server.url}/status/m`, { ...fetchOpts, method });
        t.equal((await jsonOf(r)).method, method);
      }
    });

    t.test('HEAD: same status and headers as GET, Content-Length of the GET body, no body', async (t) => {
      const c = await RawClient.connect(port);
      t.teardown(() => c.destroy());
      for (const path of ['/status/x?y=1', '/status/code/404', '/nowhere', '/boom']) {
        await c.send(request('GET', path));
        const get = await c.read();
        // HEAD, then GET right behind it: a body sent for HEAD would be read as the next response.
        await c.send(Buffer.concat([request('HEAD', path), request('GET', path)]));
        const head = await c.read({ head: true });
        const after = await c.read();
        t.equal(head.statusLine, get.statusLine, `${path}: status line`);
        // the same header lines, in any order
        const withoutDate = (r: typeof get) =>
          r.headerList.filter(([k]) => k.toLowerCase() !== 'date').map(([k, v]) => `${k}: ${v}`).sort();
        t.same(withoutDate(head), withoutDate(get), `${path}: headers`);
        t.equal(head.headers['content-length'], String(get.body.length), `${path}: Content-Length of the GET body`);
        t.ok(get.body.length > 0);
        t.equal(after.statusLine, get.statusLine, `${path}: the next response follows the HEAD headers directly`);
        t.same(after.body, get.body);
      }
      t.equal(c.pending().length, 0, 'nothing else was sent');
      t.ok(seen.some((r) => r.method === 'HEAD' && r.path === '/status/x'), 'the handler saw HEAD');
      t.notOk(c.closed, 'connection still open');
    });

    t.test('keep-alive: three requests on one connection', async (t) => {
      const c = await RawClient.connect(port);
      t.teardown(() => c.destroy());
      for (let i = 0; i < 3; i++) {
        await c.send(request('GET', `/status/k?i=${i}`));
        const r = await c.read();
        t.equal(r.status, 200);
        t.equal(JSON.parse(r.body.toString()).query, `i=${i}`);
      }
      // and pipelined
      await c.send(Buffer.concat([0, 1, 2].map((i) => request('GET', `/status/p?i=${i}`))));
      for (let i = 0; i < 3; i++) t.equal(JSON.parse((await c.read()).body.toString()).query, `i=${i}`);
      t.notOk(c.closed);
    });

    t.test('request bodies reach the handler (PUT, PATCH, chunked)', async (t) => {
      const body = Buffer.from(JSON.stringify({ weight: 2, max_fails: 3 }));
      const put = await fetch(`${server.url}/config/http/upstreams/u/servers/127.0.0.1:8081`, { ...fetchOpts, method: 'PUT', body });
      t.equal(put.status, 201);
      t.same(await jsonOf(put), { method: 'PUT', length: body.length, sha1: sha1(body) });
      const patch = await fetch(`${server.url}/config/x`, { ...fetchOpts, method: 'PATCH', body: '{"down":true}' });
      t.same(await jsonOf(patch), { method: 'PATCH', length: 13, sha1: sha1(Buffer.from('{"down":true}')) });

      const c = await RawClient.connect(port);
      t.teardown(() => c.destroy());
      await c.send(request('PUT', '/config/c', { 'Transfer-Encoding': 'chunked' }, '3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n'));
      t.same(JSON.parse((await c.read()).body.toString()), { method: 'PUT', length: 5, sha1: sha1(Buffer.from('abcde')) });
      await c.send(request('PUT', '/config/empty', { 'Content-Length': 0 }));
      t.same(JSON.parse((await c.read()).body.toString()), { method: 'PUT', length: 0, sha1: null }, 'an empty body is no body');
      // a body split over several writes
      const big = Buffer.alloc(BODY_LIMIT, 'z');
      const raw = request('PATCH', '/config/split', {}, big);
      await c.send(raw.subarray(0, 1000));
      await c.send(raw.subarray(1000, 40000));
      await c.send(raw.subarray(40000));
      t.same(JSON.parse((await c.read()).body.toString()), { method: 'PATCH', length: BODY_LIMIT, sha1: sha1(big) }, 'exactly the limit: all of it');
    });

    t.test('a body over 64 KiB is capped at 64 KiB + 1 and the connection stays usable', async (t) => {
      seen.length = 0;
      const c = await RawClient.connect(port);
      t.teardown(() => c.destroy());
      const body = Buffer.alloc(300_000, 'q');
      await c.send(request('PUT', '/config/big', {}, body));
      const r = await c.read();
      t.equal(r.status, 413);
      t.same(JSON.parse(r.body.toString()), { error: 'TooLarge', description: `${BODY_CAP} bytes` });
      t.equal(seen.at(-1)!.body!.length, BODY_LIMIT + 1);
      await c.send(request('GET', '/status/after-big'));
      const after = await c.read();
      t.equal(after.status, 200, 'the next request on the same connection is answered');
      t.equal(JSON.parse(after.body.toString()).path, '/status/after-big');

      // chunked, over the limit
      const chunk = Buffer.alloc(50_000, 'w');
      const te = Buffer.concat([...[0, 1].map(() => Buffer.concat([Buffer.from('c350\r\n'), chunk, Buffer.from('\r\n')])), Buffer.from('0\r\n\r\n')]);
      await c.send(request('PUT', '/config/big-chunked', { 'Transfer-Encoding': 'chunked' }, te));
      t.equal((await c.read()).status, 413);
      await c.send(request('GET', '/status/after-chunked'));
      t.equal((await c.read()).status, 200);
    });

    t.test('answers with other headers one after another each carry their own, characters above 0x7f in UTF-8', async (t) => {
      const c = await RawClient.connect(port);
      t.teardown(() => c.destroy());
      const own = (r: RawResponse) => r.headerList.filter(([name]) => !/^(date|content-length|connection|keep-alive)$/i.test(name));
      const want: Record<string, Array<[string, string]>> = {
        '/status/code/200': [
          ['Content-Type', 'application/json'],
          ['X-Zonal', 'yes'],
        ],
        '/status/latin1': [
          ['Content-Type', 'text/plain'],
          // The client reads a header's bytes one per character.
          ['X-Name', Buffer.from('caf\u00e9 \u00ff').toString('latin1')],
        ],
        '/status/plain': [
          ['Content-Type', 'application/json'],
          ['Cache-Control', 'no-cache'],
          ['Expires', 'Thu, 01 Jan 1970 00:00:01 GMT'],
        ],
      };
      for (let round = 0; round < 2; round++)
        for (const path of ['/status/code/200', '/status/latin1', '/status/latin1', '/status/plain', '/status/code/200']) {
          await c.send(request('GET', path));
          const r = await c.read();
          t.same(own(r).map(([k, v]) => [k.toLowerCase(), v]), want[path].map(([k, v]) => [k.toLowerCase(), v]), `${path}, round ${round + 1}`);
        }
    });

    t.test('a handler that throws gives 500 InternalError and the server goes on', async (t) => {
      errors.length = 0;
      const c = await RawClient.connect(port);
      t.teardown(() => c.destroy());
      await c.send(request('GET', '/boom'));
      const r = await c.read();
      t.equal(r.statusLine, 'HTTP/1.1 500 Internal Server Error');
      t.equal(r.headers['content-type'], 'application/json');
      const body = JSON.parse(r.body.toString());
      t.equal(body.error, 'InternalError');
      t.type(body.description, 'string');
      t.equal(errors.length, 1);
      t.match(String(errors[0]), /handler exploded/);
      for (const path of ['/bad-status', '/bad-header']) {
        await c.send(request('GET', path));
        const bad = await c.read();
        t.equal(bad.status, 500, `${path}: an unwritable response is a 500`);
        t.notOk(bad.headers['injected'], 'no header injected');
      }
      await c.send(request('GET', '/status/still'));
      t.equal((await c.read()).status, 200, 'same connection still serves');
      const res = await fetch(`${server.url}/status/still`, fetchOpts);
      t.equal(res.status, 200, 'new connections too');
    });

    t.test('a path no API mount takes gets the JSON 404', async (t) => {
      const res = await fetch(`${server.url}/no%20such/page?x=1`, fetchOpts);
      t.equal(res.status, 404);
      t.equal(res.headers.get('content-type'), 'application/json');
      t.same(await jsonOf(res), { error: 'PathNotFound', description: 'Requested API entity "/no%20such/page" doesn\'t exist.' });
    });

    // uWS answers a read without a body inside its request callback, and everything else
    // once the body is read: both must answer alike, byte for byte but the Date.
    t.test('reads with and without a body get the same answer', async (t) => {
      const c = await RawClient.connect(port);
      t.teardown(() => c.destroy());
      const withoutDate = (r: RawResponse) => r.headerList.filter(([k]) => k.toLowerCase() !== 'date');
      await c.send(request('GET', '/status/same?q=1'));
      const plain = await c.read();
      t.equal(plain.status, 200);
      const bodies: Array<[string, Buffer]> = [
        ['a Content-Length body', request('GET', '/status/same?q=1', {}, 'hello')],
        ['a chunked body', request('GET', '/status/same?q=1', { 'Transfer-Encoding': 'chunked' }, '5\r\nhello\r\n0\r\n\r\n')],
        ['Content-Length: 0', request('GET', '/status/same?q=1', { 'Content-Length': 0 })],
      ];
      for (const [what, bytes] of bodies) {
        await c.send(bytes);
        const r = await c.read();
        t.equal(r.statusLine, plain.statusLine, `GET with ${what}: status line`);
        t.same(withoutDate(r), withoutDate(plain), `GET with ${what}: headers`);
        t.same(r.body, plain.body, `GET with ${what}: body`);
      }
      // HEAD with a body: the GET's headers, no body, and the connection goes on.
      await c.send(Buffer.concat([request('HEAD', '/status/same?q=1', {}, 'hello'), request('GET', '/status/same?q=1')]));
      const head = await c.read({ head: true });
      t.same(withoutDate(head), withoutDate(plain), 'HEAD with a body: the GET headers');
      t.same((await c.read()).body, plain.body, 'and the next answer follows it directly');
      t.equal(c.pending().length, 0, 'nothing else was sent');
      t.notOk(c.closed, 'one connection for all of them');
    });

    t.test('no answer names the implementation', async (t) => {
      const c = await RawClient.connect(port);
      t.teardown(() => c.destroy());
      for (const req of [request('GET', '/status/x'), request('HEAD', '/status/x'), request('PUT', '/config/x', {}, '{}'), request('GET', '/nowhere')]) {
        await c.send(req);
        const r = await c.read({ head: req.subarray(0, 4).toString() === 'HEAD' });
        t.notOk(r.headerList.some(([k]) => /^(uwebsockets|server|x-powered-by)$/i.test(k)), `${r.statusLine}: ${r.headerList.map(([k]) => k).join(', ')}`);
      }
    });

    t.test('a client that aborts mid-request does not stop the server', async (t) => {
      seen.length = 0;
      const c = await RawClient.connect(port);
      await c.send('POST /config/abort HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n');
      await c.send(Buffer.alloc(5000, 'a'));
      c.destroy();
      // aborts after the server answered early, in the middle of the discarded rest
      const d = await RawClient.connect(port);
      await d.send('PUT /config/abort-late HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n');
      await d.send(Buffer.alloc(BODY_CAP + 10, 'b'));
      t.equal((await d.read()).status, 413);
      d.destroy();
      // aborts before the headers are complete
      const e = await RawClient.connect(port);
      await e.send('GET /status/half HTTP/1.1\r\nHost: 1');
      e.destroy();

      const res = await fetch(`${server.url}/status/after-abort`, fetchOpts);
      t.equal(res.status, 200);
      t.equal((await jsonOf(res)).path, '/status/after-abort');
      t.notOk(seen.some((r) => r.path === '/config/abort'), 'the aborted request never reached the handler');
    });
  });
}

// A handler whose large bodies come from one reusable buffer, as the JSON writer's do: a
// transport that released a body before writing it out would let the next request's
// render overwrite it, and the slow client would read the other request's bytes.
t.test('release: a body is handed back only once written, on both transports', async (t) => {
  const SIZE = 8 * 1024 * 1024; // far more than the socket buffers take at once
  for (const kind of transports) {
    let spare: Buffer | undefined;
    let made = 0;
    let released = 0;
    const handler: ApiHandler = () => {
      const buf = spare ?? Buffer.allocUnsafe(SIZE);
      spare = undefined;
      const mark = 0x41 + (made++ % 26);
      buf.fill(mark);
      return {
        status: 200,
        headers: { 'Content-Type': 'text/plain' },
        body: buf,
        release: () => {
          released++;
          spare = buf;
        },
      };
    };
    const server = await startTransport(kind, handler);
    try {
      // Request A, left unread: most of its body waits in the server.
      const slow = await RawClient.connect(server.port);
      slow.socket.pause();
      await slow.send('GET /status/a HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await new Promise((r) => setTimeout(r, 100));
      // Requests B and C, read at once: C renders into B's buffer if B released it.
      for (const path of ['/status/b', '/status/c']) {
        const body = Buffer.from(await (await fetch(`${server.url}${path}`)).arrayBuffer());
        t.equal(body.length, SIZE, `${kind}: ${path} is whole`);
      }
      slow.socket.resume();
      const a = await slow.read();
      t.equal(a.status, 200, `${kind}: the slow request is answered`);
      t.equal(a.body.length, SIZE, `${kind}: the slow body is whole`);
      t.ok(a.body.equals(Buffer.alloc(SIZE, 0x41)), `${kind}: the slow body holds its own render's bytes only`);
      slow.destroy();
      t.ok(released >= 2, `${kind}: written bodies were released (${released})`);
    } finally {
      await server.close();
    }
  }
});

t.test('node:http: a path the API does not take falls through to next', async (t) => {
  const seen: ApiRequest[] = [];
  const listener = apiListener(testApi(seen));
  const results: boolean[] = [];
  const server = createServer((req, res) => {
    results.push(
      listener(req, res, () => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end(`host route ${req.method} ${req.url}`);
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const opts = { signal: AbortSignal.timeout(5000) };

  const other = await fetch(`${base}/index.html?a=1`, opts);
  t.equal(await other.text(), 'host route GET /index.html?a=1');
  const api = await fetch(`${base}/status/x`, opts);
  t.equal((await jsonOf(api)).path, '/status/x');
  t.same(results, [false, true], 'false when passed on at once, true when answered');
  const posted = await fetch(`${base}/upload`, { ...opts, method: 'POST', body: 'data' });
  t.equal(await posted.text(), 'host route POST /upload', 'a request with a body goes on after its body was read');
  t.equal(results[2], true, 'taken while its body is read');
  // without onError, what the handler threw becomes a process warning
  const warned = new Promise<Error>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no warning within 5 s')), 5000);
    process.once('warning', (w) => (clearTimeout(timer), resolve(w)));
  });
  const thrown = await fetch(`${base}/boom`, opts);
  t.equal(thrown.status, 500, 'a throwing handler is a 500, not a fall-through');
  const warning = await warned;
  t.equal(warning.name, 'ZonalApiWarning');
  t.match(warning.message, /handler exploded/);
});

t.test('node:http: express-style mounts keep the full path (originalUrl)', async (t) => {
  const seen: ApiRequest[] = [];
  const listener = apiListener(testApi(seen));
  const server = createServer((req, res) => {
    // what express does for app.use('/status', ...): strips the prefix from req.url
    (req as typeof req & { originalUrl?: string }).originalUrl = req.url;
    req.url = req.url!.replace(/^\/status/, '') || '/';
    listener(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections())));
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/status/http?x=1`, { signal: AbortSignal.timeout(5000) });
  const body = await jsonOf(res);
  t.equal(body.path, '/status/http');
  t.equal(body.query, 'x=1');
});

// A read answered later (basic auth's bcrypt runs off the event loop): the client's
// address is still there when the handler looks, and a client gone before the answer
// leaves nothing behind.
t.test('uWS: a read answered later, and a client gone before the answer', async (t) => {
  const waiting: Array<() => void> = [];
  const addresses: Array<string | undefined> = [];
  const errors: unknown[] = [];
  const server = await serveApi({
    host: '127.0.0.1',
    port: 0,
    onError: (err) => errors.push(err),
    handler: (req) =>
      new Promise((resolve) => {
        waiting.push(() => {
          addresses.push(req.remoteAddress);
          resolve(json(200, { path: req.path }));
        });
      }),
  });
  t.teardown(() => server.close());
  const until = async (n: number) => {
    for (let i = 0; i < 500 && waiting.length < n; i++) await new Promise((r) => setTimeout(r, 2));
    t.equal(waiting.length, n, `${n} request(s) waiting for their answer`);
  };

  const c = await RawClient.connect(server.port);
  t.teardown(() => c.destroy());
  await c.send(request('GET', '/later'));
  await until(1);
  waiting.shift()!();
  const r = await c.read();
  t.equal(r.status, 200);
  t.same(JSON.parse(r.body.toString()), { path: '/later' });
  t.same(addresses, ['127.0.0.1'], 'the address read after the request callback returned');

  // HEAD answered later: headers only, and the connection goes on.
  await c.send(request('HEAD', '/later-head'));
  await until(1);
  waiting.shift()!();
  const head = await c.read({ head: true });
  t.equal(head.headers['content-length'], String(JSON.stringify({ path: '/later-head' }).length));
  t.equal(c.pending().length, 0, 'no body after HEAD');

  // The client leaves while its answer is pending: answering then writes nothing and
  // breaks nothing.
  const gone = await RawClient.connect(server.port);
  await gone.send(request('GET', '/gone'));
  await until(1);
  gone.destroy();
  await new Promise((r) => setTimeout(r, 20));
  waiting.shift()!();
  await c.send(request('GET', '/after'));
  await until(1);
  waiting.shift()!();
  t.same(JSON.parse((await c.read()).body.toString()), { path: '/after' }, 'the server goes on');
  await new Promise((r) => setImmediate(r));
  t.same(errors, [], 'no error reported');
});

t.test('uWS: HTTP/1.0 is not answered (its parser waits for HTTP/1.1), HTTP/1.1 right after is', async (t) => {
  const server = await serveApi({ host: '127.0.0.1', port: 0, handler: () => json(200, {}) });
  t.teardown(() => server.close());
  const old = await RawClient.connect(server.port);
  t.teardown(() => old.destroy());
  await old.send('GET /status/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n');
  await t.rejects(old.read({}, 300), /no response/, 'no answer: documented in the README, with node:http for HTTP/1.0 clients');
  const c = await RawClient.connect(server.port);
  t.teardown(() => c.destroy());
  await c.send(request('GET', '/status/'));
  t.equal((await c.read()).status, 200);
});

t.test('uWS: close() closes open keep-alive connections and the port', async (t) => {
  const server = await serveApi({ host: '127.0.0.1', port: 0, handler: testApi([]) });
  const c = await RawClient.connect(server.port);
  t.teardown(() => c.destroy());
  await c.send(request('GET', '/status/x'));
  t.equal((await c.read()).status, 200);
  server.close();
  server.close();
  await c.waitClosed();
  t.pass('the idle keep-alive connection was closed');
  await t.rejects(RawClient.connect(server.port), { code: 'ECONNREFUSED' });
});

t.test('uWS: a port in use is an error', async (t) => {
  const first = await serveApi({ host: '127.0.0.1', port: 0, handler: testApi([]) });
  t.teardown(() => first.close());
  await t.rejects(serveApi({ host: '127.0.0.1', port: first.port, handler: testApi([]) }), /cannot listen on 127\.0\.0\.1:\d+/);
});

t.test('IPv6 loopback: address is ::1 on both transports', async (t) => {
  const seen: ApiRequest[] = [];
  const probe = createServer();
  const v6 = await new Promise<boolean>((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(0, '::1', () => probe.close(() => resolve(true)));
  });
  if (!v6) {
    t.plan(0, 'no IPv6 loopback here');
    return;
  }
  const uws = await serveApi({ host: '::1', port: 0, handler: testApi(seen) });
  t.teardown(() => uws.close());
  const listener = apiListener(testApi(seen));
  const http = createServer((req, res) => listener(req, res));
  await new Promise<void>((resolve) => http.listen(0, '::1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (http.close(() => resolve()), http.closeAllConnections())));
  for (const port of [uws.port, (http.address() as AddressInfo).port]) {
    const res = await fetch(`http://[::1]:${port}/status/v6`, { signal: AbortSignal.timeout(5000) });
    const body = await jsonOf(res);
    t.equal(body.address, '::1');
    t.equal(body.host, `[::1]:${port}`);
  }
});

// uWS gives no local address of a connection: on a wildcard listener the transport reads
// it from the kernel's socket table (src/transport/local-address.ts). Both transports
// must report the address the client connected to, never 0.0.0.0 or ::.
t.test('a wildcard listener reports the local address of each connection, on both transports', async (t) => {
  const seen: ApiRequest[] = [];
  const ask = (ip: string, port: number, opts: { method?: string; host?: string; agent?: import('node:http').Agent } = {}) =>
    new Promise<{ address: string; host: string | null }>((resolve, reject) => {
      const body = opts.method === 'PUT' ? 'x' : undefined;
      const req = httpRequest(
        { host: ip, port, path: '/status/local', method: opts.method ?? 'GET', agent: opts.agent ?? false, timeout: 5000,
          headers: { Host: opts.host ?? `${ip.includes(':') ? `[${ip}]` : ip}:${port}`, ...(body ? { 'Content-Length': '1' } : {}) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString()) as { address: string; host: string | null }));
        },
      );
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.end(body);
    });
  const listenHttp = async (host: string) => {
    const listener = apiListener(testApi(seen));
    const http = createServer((req, res) => listener(req, res));
    await new Promise<void>((resolve) => http.listen(0, host, resolve));
    t.teardown(() => new Promise<void>((resolve) => (http.close(() => resolve()), http.closeAllConnections())));
    return (http.address() as AddressInfo).port;
  };
  const uws = await serveApi({ host: '0.0.0.0', port: 0, handler: testApi(seen) });
  t.teardown(() => uws.close());
  const sides: Array<[string, number]> = [['uWS', uws.port], ['node:http', await listenHttp('0.0.0.0')]];
  for (const [name, port] of sides)
    for (const ip of ['127.0.0.1', '127.0.0.2', '127.0.0.3'])
      for (const method of ['GET', 'PUT']) t.equal((await ask(ip, port, { method })).address, ip, `${name}: ${method} to ${ip}`);

  // One client on two of the machine's addresses at once: uWS gives no client port to tell
  // the connections apart, so the Host header decides when it names one of them.
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  t.equal((await ask('127.0.0.1', uws.port, { agent })).address, '127.0.0.1', 'a first connection, kept open');
  t.equal((await ask('127.0.0.4', uws.port)).address, '127.0.0.4', 'a second one, Host naming its address');
  t.equal((await ask('127.0.0.4', uws.port, { host: 'example.test' })).address, '0.0.0.0', 'without that, the listener\'s address: the table cannot tell');
  t.equal((await ask('127.0.0.4', sides[1][1], { host: 'example.test' })).address, '127.0.0.4', 'node:http knows its socket');

  const probe = createServer();
  const v6 = await new Promise<boolean>((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(0, '::1', () => probe.close(() => resolve(true)));
  });
  if (!v6) return;
  const uws6 = await serveApi({ host: '::', port: 0, handler: testApi(seen) });
  t.teardown(() => uws6.close());
  for (const [name, port] of [['uWS', uws6.port], ['node:http', await listenHttp('::')]] as Array<[string, number]>) {
    t.equal((await ask('::1', port)).address, '::1', `${name} on [::]: a client of ::1`);
    t.equal((await ask('127.0.0.2', port)).address, '127.0.0.2', `${name} on [::]: an IPv4 client, as IPv4`);
  }
});
