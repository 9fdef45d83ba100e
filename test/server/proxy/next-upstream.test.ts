// proxy_next_upstream with every condition nginx's documentation lists, and
// proxy_next_upstream_timeout: when a request goes to the next peer, and which answers
// count as the peer's unsuccessful attempts (max_fails).
import t from 'tap';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { checkConfig, freePorts, getJson, Zonal } from '../zonal.js';

const [admin, front, bad, good, garbage, slow] = await freePorts(6);

/** `bad` answers /code/NNN with NNN, `slow` after 300 ms; `good` answers 200. Each counts
 * the requests it had. */
const hits = { bad: 0, good: 0, slow: 0 };
function backend(name: 'bad' | 'good' | 'slow'): Server {
  return createHttpServer((req, res) => {
    hits[name]++;
    req.resume();
    const code = name === 'good' ? 200 : Number(/\/code\/(\d{3})/.exec(req.url ?? '')?.[1] ?? 200);
    const answer = () => res.writeHead(code, { 'Content-Type': 'text/plain' }).end(`${name} ${code}`);
    if (name === 'slow') setTimeout(answer, 300);
    else answer();
  });
}
const servers = [backend('bad'), backend('good'), backend('slow')];
/** Answers what is no HTTP response. */
const garbageServer = createTcpServer((s) => {
  s.on('error', () => {});
  s.once('data', () => s.end('HELLO THERE\r\n\r\n'));
});
await Promise.all(
  [
    [servers[0], bad],
    [servers[1], good],
    [servers[2], slow],
    [garbageServer, garbage],
  ].map(([server, port]) => new Promise<void>((resolve) => (server as Server).listen(port as number, '127.0.0.1', () => resolve()))),
);
t.teardown(() => Promise.all([...servers, garbageServer].map((s) => new Promise((r) => s.close(r)))));

// One upstream per case: round robin in one worker sends each upstream's first request to
// its first peer. max_fails=5 keeps a peer in the game, so that its fails can be counted.
const cases = ['n500', 'n502', 'n403', 'n404', 'n429', 'plain', 'post', 'postok', 'last', 'invalid', 'noinvalid', 'timeout', 'notimeout', 'tries'];
const upstreams = cases
  .map((c) => {
    const first = c === 'invalid' || c === 'noinvalid' ? garbage : c === 'timeout' || c === 'notimeout' ? slow : bad;
    const second = c === 'last' ? slow : good;
    return `    upstream ${c} { server 127.0.0.1:${first} max_fails=5; server 127.0.0.1:${second} max_fails=5; }`;
  })
  .join('\n');
const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
${upstreams}
    server { listen 127.0.0.1:${admin} admin; location /status/ { api /status/; } }
    server {
        listen 127.0.0.1:${front};
        location /n500/ { proxy_pass http://n500; proxy_next_upstream http_500; }
        location /n502/ { proxy_pass http://n502; proxy_next_upstream error timeout http_502; }
        location /n403/ { proxy_pass http://n403; proxy_next_upstream http_403; }
        location /n404/ { proxy_pass http://n404; proxy_next_upstream http_404; }
        location /n429/ { proxy_pass http://n429; proxy_next_upstream http_429; }
        location /plain/ { proxy_pass http://plain; }
        location /post/ { proxy_pass http://post; proxy_next_upstream http_500; }
        location /postok/ { proxy_pass http://postok; proxy_next_upstream http_500 non_idempotent; }
        location /last/ { proxy_pass http://last; proxy_next_upstream http_500; }
        location /invalid/ { proxy_pass http://invalid; proxy_next_upstream invalid_header; }
        location /noinvalid/ { proxy_pass http://noinvalid; proxy_next_upstream error; }
        location /timeout/ { proxy_pass http://timeout; proxy_next_upstream http_500; proxy_next_upstream_timeout 100ms; }
        location /notimeout/ { proxy_pass http://notimeout; proxy_next_upstream http_500; }
        location /tries/ { proxy_pass http://tries; proxy_next_upstream http_500; proxy_next_upstream_tries 1; }
    }
}
`,
});
t.teardown(() => zonal.stop());

async function get(path: string, init?: RequestInit): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${front}${path}`, init);
  return { status: res.status, body: await res.text() };
}
/** The first peer's health.fails and selections in an upstream. */
async function firstPeer(upstream: string, port: number): Promise<{ fails: number; selected: number }> {
  const peers = (await getJson(`http://127.0.0.1:${admin}/status/http/upstreams/${upstream}/peers`)).body;
  const p = peers[`127.0.0.1:${port}`];
  return { fails: p.health.fails, selected: p.selected.total };
}

t.test('http_500, http_502, http_429: the next peer answers, and the first counts a failure', async (t) => {
  for (const [c, code] of [
    ['n500', 500],
    ['n502', 502],
    ['n429', 429],
  ] as const) {
    const r = await get(`/${c}/code/${code}`);
    t.same(r, { status: 200, body: 'good 200' }, `${c}: the good peer's answer`);
    t.same(await firstPeer(c, bad), { fails: 1, selected: 1 }, `${c}: the ${code} counted against its peer`);
  }
});

t.test('http_403, http_404: passed on, but never counted as a failure', async (t) => {
  for (const [c, code] of [
    ['n403', 403],
    ['n404', 404],
  ] as const) {
    t.same(await get(`/${c}/code/${code}`), { status: 200, body: 'good 200' }, `${c}: the good peer's answer`);
    t.same(await firstPeer(c, bad), { fails: 0, selected: 1 }, `${c}: no failure counted`);
  }
});

t.test('a status not listed is the answer', async (t) => {
  t.same(await get('/plain/code/500'), { status: 500, body: 'bad 500' });
  t.same(await firstPeer('plain', bad), { fails: 0, selected: 1 });
});

t.test('POST is not passed on once a peer had it, unless non_idempotent', async (t) => {
  t.same(await get('/post/code/500', { method: 'POST' }), { status: 500, body: 'bad 500' }, 'POST: the first answer');
  t.same(await get('/postok/code/500', { method: 'POST' }), { status: 200, body: 'good 200' }, 'POST with non_idempotent: the next peer');
});

t.test("the last peer's answer is passed on as it is", async (t) => {
  const before = [hits.bad, hits.slow];
  t.same(await get('/last/code/500'), { status: 500, body: 'slow 500' });
  t.same([hits.bad - before[0], hits.slow - before[1]], [1, 1], 'both peers tried once');
});

t.test('invalid_header: an answer that is no HTTP goes to the next peer; without it, 502', async (t) => {
  t.same(await get('/invalid/x'), { status: 200, body: 'good 200' });
  t.equal((await firstPeer('invalid', garbage)).fails, 1, 'counted as a failure');
  const r = await get('/noinvalid/x');
  t.equal(r.status, 502, 'not listed: 502');
  t.equal((await firstPeer('noinvalid', garbage)).fails, 1, 'counted even when not listed, as nginx');
});

t.test('proxy_next_upstream_timeout: past it, no other peer is tried', async (t) => {
  t.same(await get('/timeout/code/500'), { status: 500, body: 'slow 500' }, '300 ms > 100 ms: the answer as it is');
  t.same(await get('/notimeout/code/500'), { status: 200, body: 'good 200' }, 'without a limit: the next peer');
});

t.test('proxy_next_upstream_tries 1: no other peer', async (t) => {
  t.same(await get('/tries/code/500'), { status: 500, body: 'bad 500' });
});

t.test('the conditions at -t', async (t) => {
  const conf = (line: string) => `http { server { listen 127.0.0.1:1; location / { proxy_pass http://127.0.0.1:2; ${line} } } }\n`;
  const all = await checkConfig(conf('proxy_next_upstream error timeout invalid_header http_500 http_502 http_503 http_504 http_403 http_404 http_429 non_idempotent; proxy_next_upstream_timeout 10s;'));
  t.equal(all.code, 0, `every condition nginx has: ${all.err}`);
  // The refusals (`updating`, a bad timeout) are in test/server/config.test.ts's table.
});
