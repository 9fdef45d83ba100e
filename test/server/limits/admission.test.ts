// The two ways a place decides its limit_req: the fast path (one limit_req and no
// limit_conn: no context, no arrays, a `$binary_remote_addr` key kept on the socket for
// the connection's next requests) and the general one (here made to run by a limit_conn
// that never refuses). On the same traffic they answer the same, with the same headers
// and bodies, and count the same; a key kept on a socket is that connection's alone.
import t from 'tap';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Status } from '../../../src/metrics/status.js';
import { freePorts, getJson, Zonal } from '../zonal.js';

const [port, port6, admin] = await freePorts(3);
// 1r/m with burst=3 nodelay: four requests of a key pass at once, the next ones are
// refused for the rest of the minute, whatever the machine's speed.
const conf = `worker_processes 2;
http {
  limit_req_zone $binary_remote_addr zone=fast:64k rate=1r/m;
  limit_req_zone $binary_remote_addr zone=general:64k rate=1r/m;
  limit_req_zone $remote_addr zone=fast_text:64k rate=1r/m;
  limit_req_zone $remote_addr zone=general_text:64k rate=1r/m;
  limit_req_zone $http_x_key zone=fast_header:64k rate=1r/m;
  limit_req_zone $http_x_key zone=general_header:64k rate=1r/m;
  limit_conn_zone $binary_remote_addr zone=roomy:64k;
  server {
    listen 127.0.0.1:${port};
    listen [::1]:${port6};
    root .;
    location /fast/ { limit_req zone=fast burst=3 nodelay; }
    location /general/ { limit_req zone=general burst=3 nodelay; limit_conn roomy 1000; }
    location /fast_text/ { limit_req zone=fast_text burst=3 nodelay; }
    location /general_text/ { limit_req zone=general_text burst=3 nodelay; limit_conn roomy 1000; }
    location /fast_header/ { limit_req zone=fast_header burst=3 nodelay; limit_req_status 429; }
    location /general_header/ { limit_req zone=general_header burst=3 nodelay; limit_req_status 429; limit_conn roomy 1000; }
  }
  server {
    listen 127.0.0.1:${admin} admin;
    location /status/ { api /status/; }
  }
}
`;
const zonal = await Zonal.start({ 'zonal.conf': conf });
for (const dir of ['fast', 'general', 'fast_text', 'general_text', 'fast_header', 'general_header']) {
  mkdirSync(join(zonal.dir, dir));
  writeFileSync(join(zonal.dir, dir, 'f'), 'hello\n');
}
t.teardown(() => zonal.stop());

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** Sent on a connection an earlier request had used. */
  reused: boolean;
}

function send(agent: Agent, host: string, p: number, method: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port: p, method, path, agent, headers }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.end();
  });
}

/** The same traffic for a location: from 127.0.0.1 on one keep-alive connection, then
 * from 127.0.0.2 (to the 127.0.0.1 listener) and from ::1, each on a connection of its
 * own, with HEADs among the GETs. */
async function traffic(location: string, key?: string): Promise<Answer[]> {
  const answers: Answer[] = [];
  const clients = [
    { host: '127.0.0.1', port, localAddress: '127.0.0.1' },
    { host: '127.0.0.1', port, localAddress: '127.0.0.2' },
    { host: '::1', port: port6, localAddress: '::1' },
  ];
  for (const c of clients) {
    // A header-keyed limit would see one key from every address: the header differs.
    const headers: Record<string, string> = key ? { 'x-key': `${key}-${c.localAddress}` } : {};
    const agent = new Agent({ keepAlive: true, maxSockets: 1, localAddress: c.localAddress });
    try {
      for (const method of ['GET', 'GET', 'HEAD', 'GET', 'GET', 'HEAD', 'GET']) answers.push(await send(agent, c.host, c.port, method, `/${location}/f`, headers));
    } finally {
      agent.destroy();
    }
  }
  return answers;
}

/** What a client can compare of two answers: all but the Date. */
const comparable = (a: Answer) => {
  const { date, ...headers } = a.headers;
  return { status: a.status, headers, body: a.body, reused: a.reused };
};

const limitReqs = (zone: string) => getJson(`http://127.0.0.1:${admin}/status/http/limit_reqs/${zone}`).then((r) => r.body);

t.test('$binary_remote_addr: the fast path answers and counts as the general one', async (t) => {
  const fast = await traffic('fast');
  const general = await traffic('general');
  const expected = [200, 200, 200, 200, 503, 503, 503];
  t.same(
    fast.map((a) => a.status),
    [...expected, ...expected, ...expected],
    'per client address: four pass (one and the burst), then 503: 127.0.0.2 and ::1 have buckets of their own',
  );
  t.same(
    fast.map((a) => a.reused),
    [false, true, true, true, true, true, true, false, true, true, true, true, true, true, false, true, true, true, true, true, true],
    'each client sent all its requests on one connection: the key kept on it served every one',
  );
  t.same(fast.map(comparable), general.map(comparable), 'the same statuses, headers and bodies on both paths');
  t.equal(fast[2].body, '', 'a HEAD passed has no body');
  t.match(fast[4].body, /<h1>503 Service Temporarily Unavailable<\/h1>/, 'a refusal has the error page');
  const counts = { passed: 12, skipped: 0, delayed: 0, rejected: 9, exhausted: 0 };
  t.same(await limitReqs('fast'), counts, 'the fast path counted every decision');
  t.same(await limitReqs('general'), counts, 'as the general path did');
});

t.test('$remote_addr, kept on the socket as bytes: the same answers and counts, and the key its text is', async (t) => {
  const fast = await traffic('fast_text');
  const general = await traffic('general_text');
  const expected = [200, 200, 200, 200, 503, 503, 503];
  t.same(
    fast.map((a) => a.status),
    [...expected, ...expected, ...expected],
  );
  t.same(fast.map(comparable), general.map(comparable));
  const counts = { passed: 12, skipped: 0, delayed: 0, rejected: 9, exhausted: 0 };
  t.same(await limitReqs('fast_text'), counts);
  t.same(await limitReqs('general_text'), counts);
  // The embedding API's string keys count by their UTF-8 bytes: the server's kept bytes
  // must be the very key the text '127.0.0.1' is, for both paths.
  const reader = Status.attach({ instance: `p${zonal.child.pid}`, writer: false });
  t.teardown(() => reader.zone.detach());
  for (const zone of ['fast_text', 'general_text']) {
    const table = reader.zoneNamed(zone).limitReqTable('http/limit_reqs/keys');
    for (const address of ['127.0.0.1', '127.0.0.2', '::1']) t.ok(table.peek(address) > 0, `${zone}: the bucket of "${address}" is the one its text names`);
    t.equal(table.size, 3, `${zone}: one bucket per client address`);
  }
});

t.test('a key of the request ($http_x_key): the one limit_req of a place, decided without the general path, answers and counts the same', async (t) => {
  const fast = await traffic('fast_header', 'k');
  const general = await traffic('general_header', 'k');
  const expected = [200, 200, 200, 200, 429, 429, 429];
  t.same(
    fast.map((a) => a.status),
    [...expected, ...expected, ...expected],
  );
  t.same(fast.map(comparable), general.map(comparable));
  const counts = { passed: 12, skipped: 0, delayed: 0, rejected: 9, exhausted: 0 };
  t.same(await limitReqs('fast_header'), counts);
  t.same(await limitReqs('general_header'), counts);
  const conns = (await getJson(`http://127.0.0.1:${admin}/status/http/limit_conns/roomy`)).body;
  t.same(conns, { passed: 36, skipped: 0, rejected: 0, exhausted: 0 }, 'the general path took its limit_conn for each request limit_req passed');
});
