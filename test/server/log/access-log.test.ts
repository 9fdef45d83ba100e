// access_log and error_log in a running bin/zonal, as nginx's documentation describes them:
// the combined format, every variable a format may name rendered as nginx renders it
// (`-` for one not found), escaping, several logs and `off`, `if=`, `buffer=` with
// `flush=`, the peers a proxied request tried, two workers appending whole lines to one
// file, the error log's levels and line format, and USR1 reopening the files after a
// rotation.
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { eventually, freePorts } from '../zonal.js';
import { Logged } from './logged.js';

const [port, backendPort, deadPort] = await freePorts(3);

const backend: Server = createServer((req, res) => {
  res.setHeader('X-Sent', 'from backend');
  // /slow: the head comes 600 ms after the request, on a connection made at once.
  if (req.url?.startsWith('/slow')) setTimeout(() => res.end('up\n'), 600);
  else res.end('up\n');
});
await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => backend.close(() => resolve())));

// The directory is the server's: its paths are known only once it starts, so the
// configuration names files relative to itself (nginx's relative paths).
const conf = `worker_processes 2;
error_log stderr notice;
error_log error.log info;
error_log crit.log crit;
http {
  log_format vars '$remote_addr|$remote_user|$request|$request_method|$request_uri|$uri|$args|$server_protocol|$status|$body_bytes_sent|$bytes_sent|$request_length|$request_time|$connection_requests|$host|$server_name|$server_port|$http_x_test|$cookie_c|$arg_a|$arg_none|$msec|$time_iso8601|$time_local|$http_referer|$request_id';
  log_format up '$upstream_addr|$upstream_status|$upstream_response_time|$upstream_connect_time|$upstream_header_time|$sent_http_x_sent|$sent_http_x_none|$status|$upstream_bytes_received';
  log_format esc '$http_x_test';
  log_format js escape=json '{"h":"$http_x_test","m":"$http_x_missing"}';
  log_format raw escape=none '$http_x_test';
  log_format conn '$connection $connection_requests $request_uri $pipe';
  access_log access.log;
  limit_req_zone $binary_remote_addr zone=one:64k rate=1r/m;
  upstream u { server 127.0.0.1:${deadPort}; server 127.0.0.1:${backendPort}; }
  server {
    listen 127.0.0.1:${port};
    server_name example.test;
    location / { return 200 "hello\\n"; }
    location /vars { access_log vars.log vars; return 200 "v\\n"; }
    location /off { access_log off; return 204; }
    location /two { access_log a1.log esc; access_log a2.log js; access_log a3.log raw; return 200; }
    location /cond { access_log cond.log esc if=$arg_log; return 200; }
    location /buf { access_log buf.log esc buffer=4k flush=1s; return 200; }
    location /up { access_log up.log up; proxy_pass http://u; }
    location /slow { access_log slow.log up; proxy_pass http://127.0.0.1:${backendPort}; }
    location /conn { access_log conn.log conn; return 200; }
    location /limited { error_log loc.log info; limit_req zone=one; proxy_pass http://127.0.0.1:${backendPort}; }
  }
}
`;

const zonal = await Logged.start(conf);
t.teardown(() => zonal.stop());
const file = (name: string) => join(zonal.dir, name);
const lines = (name: string) => (existsSync(file(name)) ? readFileSync(file(name), 'utf8').split('\n').filter((l) => l !== '') : []);
/** The lines of `name` once it has `n` (what a worker writes lands as its response goes out). */
async function linesOf(name: string, n: number): Promise<string[]> {
  await eventually(async () => lines(name).length >= n, 5000);
  return lines(name);
}

/** Sends raw requests on one connection and reads their answers (each with a length). */
async function exchange(requests: Array<string | Buffer>): Promise<string[]> {
  const socket: Socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const answers: string[] = [];
  let buffer = Buffer.alloc(0);
  for (const r of requests) {
    socket.write(r);
    const answer = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${JSON.stringify(r)}`)), 5000);
      const check = () => {
        const head = buffer.indexOf('\r\n\r\n');
        if (head < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(buffer.subarray(0, head).toString())?.[1] ?? 0);
        if (buffer.length < head + 4 + length) return;
        const whole = buffer.subarray(0, head + 4 + length).toString('latin1');
        buffer = buffer.subarray(head + 4 + length);
        socket.off('data', onData);
        clearTimeout(timer);
        resolve(whole);
      };
      const onData = (d: Buffer) => {
        buffer = Buffer.concat([buffer, d]);
        check();
      };
      socket.on('data', onData);
      check();
    });
    answers.push(answer);
  }
  socket.destroy();
  return answers;
}

const get = (path: string, headers: Record<string, string> = {}) => fetch(`http://127.0.0.1:${port}${path}`, { headers }).then(async (r) => ({ status: r.status, body: await r.text() }));

t.test('combined, nginx\'s predefined format, inherited from the http block', async (t) => {
  t.equal((await get('/index?x=1', { 'User-Agent': 'tester/1', Referer: 'http://ref.test/' })).status, 200);
  const [line] = await linesOf('access.log', 1);
  t.match(line, /^127\.0\.0\.1 - - \[\d\d\/[A-Z][a-z]{2}\/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\] "GET \/index\?x=1 HTTP\/1\.1" 200 6 "http:\/\/ref\.test\/" "tester\/1"$/);
});

t.test('the variables of a format, rendered as nginx renders them', async (t) => {
  const first = 'GET /vars/p?a=1&b=2 HTTP/1.1\r\nHost: Example.Test:8080\r\nX-Test: t1\r\nCookie: d=4; c=5\r\nAuthorization: Basic YWxpY2U6cHc=\r\n\r\n';
  const second = 'GET /vars HTTP/1.0\r\nConnection: keep-alive\r\n\r\n';
  const answers = await exchange([first, second]);
  const [a, b] = (await linesOf('vars.log', 2)).map((l) => l.split('|'));
  const [addr, user, request, method, requestUri, uri, args, protocol, status, bodyBytes, bytesSent, requestLength, requestTime, connRequests, host, serverName, serverPort, xTest, cookie, argA, argNone, msec, iso, local, referer, requestId] = a;
  t.equal(addr, '127.0.0.1', '$remote_addr');
  t.equal(user, 'alice', '$remote_user: the Basic credentials\' user');
  t.equal(request, 'GET /vars/p?a=1&b=2 HTTP/1.1', '$request: the request line');
  t.equal(method, 'GET');
  t.equal(requestUri, '/vars/p?a=1&b=2');
  t.equal(uri, '/vars/p');
  t.equal(args, 'a=1&b=2');
  t.equal(protocol, 'HTTP/1.1');
  t.equal(status, '200');
  t.equal(bodyBytes, '2', '$body_bytes_sent: the body alone');
  t.equal(bytesSent, String(Buffer.byteLength(answers[0], 'latin1')), '$bytes_sent: what the client received, head and body');
  t.equal(requestLength, String(Buffer.byteLength(first)), '$request_length: the request line and headers');
  t.match(requestTime, /^\d+\.\d{3}$/, '$request_time: seconds with milliseconds');
  t.equal(connRequests, '1');
  t.equal(host, 'example.test', '$host: lowercase, without the port');
  t.equal(serverName, 'example.test');
  t.equal(serverPort, String(port));
  t.equal(xTest, 't1', '$http_x_test');
  t.equal(cookie, '5', '$cookie_c');
  t.equal(argA, '1', '$arg_a');
  t.equal(argNone, '-', 'an argument not given: -');
  t.match(msec, /^\d{10}\.\d{3}$/, '$msec');
  t.ok(Math.abs(Number(msec) * 1000 - Date.now()) < 60_000, '$msec is now');
  t.match(iso, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/, '$time_iso8601');
  t.match(local, /^\d\d\/[A-Z][a-z]{2}\/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}$/, '$time_local');
  t.equal(referer, '-', 'a header not sent: -');
  t.match(requestId, /^[0-9a-f]{32}$/, '$request_id: 16 random bytes in hex');
  t.not(requestId, b[25], 'one per request');
  t.equal(b[1], '-', 'no credentials: $remote_user is -');
  t.equal(b[2], 'GET /vars HTTP/1.0');
  t.equal(b[6], '-', 'no query: $args is -');
  t.equal(b[7], 'HTTP/1.0');
  t.equal(b[13], '2', '$connection_requests: the second request of the connection');
  t.equal(b[14], '127.0.0.1', 'no Host: $host is the local address');
});

t.test('$connection numbers connections, $connection_requests counts their requests', async (t) => {
  await exchange(['GET /conn/a HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /conn/b HTTP/1.1\r\nHost: x\r\n\r\n']);
  await exchange(['GET /conn/c HTTP/1.1\r\nHost: x\r\n\r\n']);
  // Two requests in one write: the second is pipelined ($pipe "p").
  const socket = connect(port, '127.0.0.1');
  socket.write('GET /conn/d HTTP/1.1\r\nHost: x\r\n\r\nGET /conn/e HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  socket.resume();
  await new Promise<void>((resolve, reject) => socket.once('close', () => resolve()).once('error', reject));
  const logged = (await linesOf('conn.log', 5)).map((l) => l.split(' '));
  const byUri = Object.fromEntries(logged.map(([c, n, u, p]) => [u, { c, n, p }]));
  t.equal(byUri['/conn/a'].c, byUri['/conn/b'].c, 'one connection, one number');
  t.not(byUri['/conn/a'].c, byUri['/conn/c'].c, 'another connection, another number');
  t.same([byUri['/conn/a'].n, byUri['/conn/b'].n, byUri['/conn/c'].n], ['1', '2', '1']);
  t.match(byUri['/conn/c'].c, /^\d+$/);
  // One counter of all the workers, as nginx's: the next connection, whichever worker took it.
  t.equal(Number(byUri['/conn/c'].c), Number(byUri['/conn/a'].c) + 1, 'the next connection has the next number');
  t.equal(Number(byUri['/conn/d'].c), Number(byUri['/conn/c'].c) + 1, 'and the one after it the one after');
  t.same([byUri['/conn/a'].p, byUri['/conn/b'].p, byUri['/conn/d'].p, byUri['/conn/e'].p], ['.', '.', '.', 'p'], '$pipe: p for a request that came with the one before it');
});

t.test('several logs at one level, each with its escaping; off logs nothing', async (t) => {
  // The header's bytes as sent: é in UTF-8 (two bytes), then a lone byte 0xe9, as a
  // client that sends latin1 does. nginx logs bytes, whatever they encode.
  const request = (value: string) => Buffer.from(`GET /two HTTP/1.1\r\nHost: x\r\nX-Test: ${value}\r\n\r\n`, 'latin1');
  await exchange([request('quote" back\\ tab\t \xc3\xa9'), request('caf\xe9')]);
  t.same(await linesOf('a1.log', 2), ['quote\\x22 back\\x5C tab\\x09 \\xC3\\xA9', 'caf\\xE9'], 'escape=default: ", \\, controls and each byte above 0x7e as \\xXX');
  await linesOf('a2.log', 2);
  await linesOf('a3.log', 2);
  const bytes = (name: string) => readFileSync(file(name)).toString('latin1').split('\n').filter((l) => l !== '');
  t.same(bytes('a2.log'), ['{"h":"quote\\" back\\\\ tab\\t \xc3\xa9","m":""}', '{"h":"caf\xe9","m":""}'], 'escape=json: a JSON string, its bytes above 0x7f as they came; a variable not found is empty');
  t.same(bytes('a3.log'), ['quote" back\\ tab\t \xc3\xa9', 'caf\xe9'], 'escape=none: the bytes as they came');
  const before = lines('access.log').length;
  t.equal((await get('/off')).status, 204);
  await get('/after-off');
  const after = await linesOf('access.log', before + 1);
  t.equal(after.length, before + 1, 'the request under access_log off left no line');
  t.match(after.at(-1), /"GET \/after-off HTTP\/1\.1"/);
});

t.test('if=: a line only when the condition is neither empty nor "0"', async (t) => {
  await get('/cond?log=0', { 'X-Test': 'zero' });
  await get('/cond', { 'X-Test': 'none' });
  await get('/cond?log=1', { 'X-Test': 'one' });
  await get('/cond?log=yes', { 'X-Test': 'yes' });
  // Two workers: each appends its line once its response is out, so they may land in
  // either order; which lines are there is what if= decides.
  t.same((await linesOf('cond.log', 2)).sort(), ['one', 'yes']);
});

t.test('buffer= with flush=: lines held, then written once flush has passed', async (t) => {
  await get('/buf', { 'X-Test': 'held' });
  t.same(lines('buf.log'), [], 'not written with the response');
  t.same(await linesOf('buf.log', 1), ['held'], 'written by flush=');
});

t.test('buffer=: long values that repeat, change and come back are each written as they are', async (t) => {
  const before = lines('buf.log').length;
  const values = ['a long value of more than sixteen', 'a long value of more than sixteen', 'another long value, 0123456789', 'short', 'a "quoted" long value, escaped', 'a long value of more than sixteen'];
  for (const v of values) await get('/buf', { 'X-Test': v });
  // Each worker holds its own buffer: the lines of two workers come in the order they flush.
  const written = (await linesOf('buf.log', before + values.length)).slice(before).sort();
  const expected = [...values.slice(0, 4), 'a \\x22quoted\\x22 long value, escaped', values[5]].sort();
  t.same(written, expected, 'each line its own value, escaped as nginx escapes it');
});

t.test('the peers a proxied request tried: $upstream_addr, $upstream_status and their times', async (t) => {
  const r = await get('/up');
  t.equal(r.body, 'up\n');
  await get('/up');
  const [first, second] = (await linesOf('up.log', 2)).map((l) => l.split('|'));
  const [addr, status, response, connect, header, sent, none, code, bytes] = first;
  t.equal(addr, `127.0.0.1:${deadPort}, 127.0.0.1:${backendPort}`, 'every peer tried, in order');
  t.equal(status, '502, 200', 'the failed attempt is 502');
  t.match(response, /^\d+\.\d{3}, \d+\.\d{3}$/, '$upstream_response_time: one per attempt');
  t.match(connect, /^(-|\d+\.\d{3}), \d+\.\d{3}$/, '$upstream_connect_time');
  t.match(header, /^-, \d+\.\d{3}$/, '$upstream_header_time: - for the attempt that got no head');
  t.equal(sent, 'from backend', '$sent_http_x_sent: the header the client got');
  t.equal(none, '-');
  t.equal(code, '200');
  t.match(bytes, /^0, [1-9]\d*$/, '$upstream_bytes_received: nothing from the failed peer');
  t.equal(second[0], `127.0.0.1:${backendPort}`, 'the failed peer is skipped after its failure');
  t.equal(second[1], '200');
  const plain = await linesOf('access.log', 1);
  t.ok(plain.every((l) => !l.includes('/up')), "a location's own access_log replaces the inherited one");
});

t.test('$upstream_connect_time is the connection\'s own time, apart from the head\'s', async (t) => {
  t.equal((await get('/slow')).body, 'up\n');
  const [line] = await linesOf('slow.log', 1);
  const [, , response, connect, header] = line.split('|');
  t.ok(Number(header) >= 0.6 && Number(response) >= 0.6, `the head came after 0.6 s: ${line}`);
  t.ok(Number(connect) < 0.3, `connecting took far less: ${connect}`);
});

t.test('two workers append whole lines to one file', async (t) => {
  const before = lines('access.log').length;
  const n = 200;
  await Promise.all(Array.from({ length: n }, (_, i) => get(`/many/${i}`, { 'User-Agent': 'x'.repeat(200) })));
  const all = await linesOf('access.log', before + n);
  const many = all.filter((l) => l.includes('/many/'));
  t.equal(many.length, n, 'a line per request');
  t.ok(many.every((l) => /^127\.0\.0\.1 - - \[[^\]]+\] "GET \/many\/\d+ HTTP\/1\.1" 200 6 "-" "x{200}"$/.test(l)), 'every line whole');
});

t.test('error_log: nginx\'s line format, filtered by each log\'s level, a location\'s own', async (t) => {
  t.equal((await get('/limited')).status, 200);
  t.equal((await get('/limited')).status, 503);
  const [line] = await linesOf('loc.log', 1);
  t.match(line, /^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d \[error\] \d+#0: \*\d+ limiting requests by zone "one", client: 127\.0\.0\.1, request: "GET \/limited HTTP\/1\.1", host: "127\.0\.0\.1:\d+"$/);
  const main = lines('error.log');
  t.ok(main.some((l) => /^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d \[notice\] \d+#0: started 2 workers from /.test(l)), 'the primary\'s notice in the main log at info');
  t.notOk(main.some((l) => l.includes('limiting')), "a location's error_log replaces the main one for its requests");
  t.same(lines('crit.log'), [], 'nothing at crit or above');
  t.notOk(/\[alert\]/.test(zonal.log + main.join('\n')), 'no [alert] in normal operation');
});

t.test('USR1 reopens the log files: logrotate moves them, new lines go to new files', async (t) => {
  await get('/before-rotation');
  await linesOf('access.log', 1);
  await eventually(async () => lines('access.log').some((l) => l.includes('/before-rotation')), 5000);
  renameSync(file('access.log'), file('access.log.1'));
  renameSync(file('error.log'), file('error.log.1'));
  const from = zonal.log.length;
  zonal.child.kill('SIGUSR1');
  await zonal.waitLog(/\[notice\] \d+#0: signal 10 \(SIGUSR1\) received, reopening logs/, 5000, from);
  // The workers reopen on the primary's message: a request may still reach the old file
  // until they have; each try is a new marker.
  let marker = '';
  const fresh = await eventually(async () => {
    marker = `/after-rotation-${Date.now()}`;
    await get(marker);
    return lines('access.log').some((l) => l.includes(marker)) || (await eventually(async () => lines('access.log').some((l) => l.includes(marker)), 500));
  }, 10_000);
  t.ok(fresh, 'a new access.log has the new lines');
  t.ok(lines('access.log.1').some((l) => l.includes('/before-rotation')), 'the rotated file kept the old ones');
  t.notOk(lines('access.log.1').some((l) => l.includes(marker)), 'and not the new');
  // The primary's error log is written through its own buffer: the line may land a moment
  // after the signal's notice reached stderr.
  t.ok(await eventually(async () => lines('error.log').some((l) => l.includes('reopening logs')), 5000), 'a new error.log too');
  t.notOk(lines('error.log.1').some((l) => l.includes('reopening logs')));
});
