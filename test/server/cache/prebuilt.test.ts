// A hit's prebuilt bytes (src/server/cache/prebuilt.ts) against node:http's own: one
// server answers the same cached response through writeHead()/end() on one path and the
// way the cache's serve() does on the other (the head node:http wrote for an earlier hit
// reused when it fits), and every request shape must get the same bytes and leave its
// connection in the same state.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { PrebuiltAnswer, reusable, reusableHeaders } from '../../../src/server/cache/prebuilt.js';
import { RawClient } from '../../transport/raw.js';
import { freePorts } from '../zonal.js';

const body = Buffer.from('cached body, not quite ASCII: \xe9\xff\n'.repeat(40), 'latin1');
const stored = ['Server', 'peer/1.0', 'Content-Type', 'text/plain', 'Content-Length', String(body.length), 'ETag', '"e1"', 'X-Cache-Status', 'HIT'];

/** Answers the fast side gave from prebuilt bytes. */
const used = { prebuilt: 0 };

function general(res: ServerResponse, head: boolean, headers: string[]): void {
  res.writeHead(200, 'OK', headers);
  res.end(head ? undefined : body);
}

async function serverOn(port: number, configure: (s: Server) => void): Promise<Server> {
  // One cached response per header list, as the cache keeps one per file and location.
  const prebuilt = new Map<string, PrebuiltAnswer>();
  const s = createServer((req: IncomingMessage, res: ServerResponse) => {
    const head = req.method === 'HEAD';
    const variant = req.url?.includes('special') ? 'special' : 'plain';
    const headers = variant === 'special' ? [...stored, 'Content-Disposition', 'inline'] : [...stored];
    if (!req.url?.startsWith('/fast')) return general(res, head, headers);
    // As the cache's serve() does it.
    const reuse = reusable(res);
    const now = Date.now();
    const p = prebuilt.get(variant);
    if (reuse && p?.fits(res, now)) {
      used.prebuilt++;
      return p.send(res, head);
    }
    res.writeHead(200, 'OK', headers);
    const captured = reuse && reusableHeaders(headers) ? PrebuiltAnswer.capture(res, body, now) : undefined;
    if (captured) prebuilt.set(variant, captured);
    res.end(head ? undefined : body);
  });
  configure(s);
  await new Promise<void>((resolve) => s.listen(port, '127.0.0.1', resolve));
  return s;
}

/** Bytes with every Date value replaced, and those values (ms). */
function undated(bytes: Buffer): { text: string; dates: number[] } {
  const dates: number[] = [];
  const text = bytes.toString('latin1').replace(/\r\nDate: ([^\r]+)\r\n/g, (_, d: string) => {
    dates.push(Date.parse(d));
    return '\r\nDate: <date>\r\n';
  });
  return { text, dates };
}

/** Sends each of `requests` (raw text, possibly several pipelined) on one new connection
 * after the answers to the one before it, reading `count` responses for each; then asks
 * once more: returns every byte the server sent for the requests, and whether it had
 * closed the connection after them. */
async function exchange(port: number, requests: readonly string[], count: number, head: boolean): Promise<{ bytes: Buffer; closed: boolean }> {
  const c = await RawClient.connect(port);
  const chunks: Buffer[] = [];
  c.socket.on('data', (d: Buffer) => chunks.push(d));
  try {
    for (const r of requests) {
      await c.send(r);
      for (let i = 0; i < count; i++) await c.read({ head });
    }
    const bytes = Buffer.concat(chunks);
    let closed = false;
    try {
      await c.send('GET /general HTTP/1.1\r\nHost: x\r\n\r\n');
      await c.read();
    } catch {
      closed = true;
    }
    return { bytes, closed };
  } finally {
    c.destroy();
  }
}

/** The same requests to the general path and (twice, so that the second may reuse) to
 * the fast one; returns how many answers the second gave from prebuilt bytes. Asked again
 * (at most 5 times) when a second turned between them, which changes Dates, and makes
 * the fast side build its bytes again (node:http's clock turns a little late): so when
 * fewer than `expected` answers were prebuilt. */
async function same(t: Test, port: number, name: string, make: (path: string) => string | string[], count: number, expected: number, head = false): Promise<number> {
  const requests = (path: string) => [make(path)].flat();
  for (let attempt = 1; ; attempt++) {
    const g = await exchange(port, requests('/general'), count, head);
    await exchange(port, requests('/fast'), count, head);
    const before = used.prebuilt;
    const f = await exchange(port, requests('/fast'), count, head);
    const a = undated(g.bytes);
    const b = undated(f.bytes);
    if ((a.dates.join() !== b.dates.join() || used.prebuilt - before !== expected) && attempt < 5) continue;
    t.equal(b.text, a.text, `${name}: the same bytes`);
    t.equal(b.dates.length, count * requests('').length, `${name}: a Date in each response`);
    t.same(b.dates, a.dates, `${name}: the same Dates`);
    t.equal(f.closed, g.closed, `${name}: the connection ${g.closed ? 'closed' : 'kept open'} alike`);
    return used.prebuilt - before;
  }
}

const [p1, p2] = await freePorts(2);
const plain = await serverOn(p1, () => {});
const tuned = await serverOn(p2, (s) => {
  s.keepAliveTimeout = 7000;
  s.maxRequestsPerSocket = 3;
});
t.teardown(() => {
  plain.closeAllConnections();
  tuned.closeAllConnections();
  plain.close();
  tuned.close();
});

const get = (extra = '') => (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;

t.test('a keep-alive GET is answered from the prebuilt bytes, as node:http answers it', async (t) => {
  t.equal(await same(t, p1, 'GET', get(), 1, 1), 1, 'the prebuilt bytes were used');
});

t.test('HEAD: the head alone', async (t) => {
  t.equal(await same(t, p1, 'HEAD', (p) => `HEAD ${p} HTTP/1.1\r\nHost: x\r\n\r\n`, 1, 1, true), 1, 'the prebuilt head was used');
});

t.test('HTTP/1.0 asking for keep-alive', async (t) => {
  t.equal(await same(t, p1, 'HTTP/1.0 keep-alive', (p) => `GET ${p} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n`, 1, 1), 1, 'the prebuilt bytes were used');
});

t.test('pipelined requests', async (t) => {
  // node:http gives a pipelined response its socket once the one before it finished:
  // those read with the first one wait, and take node:http's path.
  t.equal(await same(t, p1, 'pipelined', (p) => get()(p).repeat(3), 3, 1), 1, 'the prebuilt bytes were used for the first');
  t.equal(await same(t, p1, 'one after the other', (p) => [get()(p), get()(p), get()(p)], 1, 3), 3, 'the prebuilt bytes were used for each');
});

t.test('what node:http answers otherwise takes its own path, with the same bytes', async (t) => {
  t.equal(await same(t, p1, 'Connection: close', get('Connection: close\r\n'), 1, 0), 0, 'Connection: close: node:http');
  t.equal(await same(t, p1, 'HTTP/1.0', (p) => `GET ${p} HTTP/1.0\r\n\r\n`, 1, 0), 0, 'HTTP/1.0: node:http');
  t.equal(await same(t, p1, 'a header node:http treats specially', (p) => get()(`${p}/special`), 1, 0), 0, 'Content-Disposition: node:http');
});

t.test("another server's keep-alive settings, and its connection's last request", async (t) => {
  // Keep-Alive: timeout=7, max=3; the third request of a connection closes it.
  t.equal(await same(t, p2, 'keep-alive settings', get(), 1, 1), 1, 'the prebuilt bytes were used');
  t.equal(await same(t, p2, 'the last request of a connection', (p) => [get()(p), get()(p), get()(p)], 1, 2), 2, 'node:http answers the last one');
});

t.test('reusableHeaders: a Content-Length and none of the names node:http reacts to', async (t) => {
  t.ok(reusableHeaders(['Content-Length', '3', 'X-A', 'b']));
  t.notOk(reusableHeaders(['X-A', 'b']), 'no Content-Length');
  for (const name of ['Connection', 'keep-alive', 'Transfer-Encoding', 'DATE', 'Expect', 'Trailer', 'Content-Disposition'])
    t.notOk(reusableHeaders(['Content-Length', '3', name, 'x']), name);
});
