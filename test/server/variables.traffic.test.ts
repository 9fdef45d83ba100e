// Variables of each module where nginx takes them (add_header, return, proxy_set_header,
// index, auth_basic_user_file, proxy_pass), through bin/zonal with real traffic: their
// values checked, as nginx's documentation and nginx-tests (proxy.t, ssl.t,
// proxy_variables.t) give them; an unknown one refused at -t in nginx's words.
import t from 'tap';
import { createServer, request } from 'node:http';
import { request as tlsRequest } from 'node:https';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import { selfSigned } from '../helpers.js';
import { checkConfig, eventually, freePorts, getJson, Zonal } from './zonal.js';

const [port, tlsPort, backendPort, otherPort] = await freePorts(4);
const dir = mkdtempSync(join(tmpdir(), 'zonal-variables-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const { cert, key } = selfSigned('site.test');
writeFileSync(join(dir, 'site.pem'), cert);
writeFileSync(join(dir, 'site.key'), key);
mkdirSync(join(dir, 'docs', 'idx'), { recursive: true });
writeFileSync(join(dir, 'docs', 'idx', 'one.html'), 'one\n');
writeFileSync(join(dir, 'docs', 'idx', 'two.html'), 'two\n');
writeFileSync(join(dir, 'docs', 'idx', 'index.html'), 'default\n');
writeFileSync(join(dir, 'ann.htpasswd'), 'ann:{PLAIN}pw\n');
writeFileSync(join(dir, 'bob.htpasswd'), 'bob:{PLAIN}pw\n');

// Peers that say who they are and what they were sent.
const peer = (name: string) =>
  createServer((req, res) => {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ peer: name, url: req.url, sent: req.headers['x-sent'] ?? null, host: req.headers.host }));
  });
const backends = [peer('backend').listen(backendPort, '127.0.0.1'), peer('other').listen(otherPort, '127.0.0.1')];
t.teardown(() => backends.forEach((b) => b.close()));

const conf = `
worker_processes 1;
http {
    upstream u { zone u 64k; server 127.0.0.1:${backendPort}; }
    server {
        listen 127.0.0.1:${port};
        server_name site.test;
        location /core {
            add_header X-Msec $msec;
            add_header X-Request-Time $request_time;
            add_header X-Status $status;
            add_header X-Remote-User $remote_user;
            return 200 "$request_method $uri $arg_a $http_x_a $host $server_name $scheme [$https] $connection_requests $cookie_c $is_args$args\\n";
        }
        location /ctime { return 200 "$connection_time $connection_requests\\n"; }
        location /proxied {
            proxy_pass http://u;
            proxy_set_header X-Sent "$remote_addr $request_time $ssl_protocol|$proxy_host";
            add_header X-Connect $upstream_connect_time;
            add_header X-Up-Status $upstream_status;
            add_header X-Up-Addr $upstream_addr;
            add_header X-Proxy-Host $proxy_host;
            add_header X-Proxy-Port $proxy_port;
            add_header X-Status $status;
        }
        location /var { proxy_pass http://$arg_b; error_log ${dir}/error.log; }
        location /uri { proxy_pass http://127.0.0.1:${otherPort}$request_uri; }
        location /scheme { proxy_pass $scheme://$arg_b; }
        location /idx/ { root ${dir}/docs; index $arg_i.html index.html; }
        location /auth { auth_basic "zone of $arg_f"; auth_basic_user_file ${dir}/$arg_f.htpasswd; return 200 "in as $remote_user\\n"; }
        location /authv { auth_basic on; auth_basic_user_file $arg_f; return 200 "in as $remote_user\\n"; }
        location /status/ { api /status/; }
    }
    server {
        listen 127.0.0.1:${port};
        server_name .dot.test;
        location / { return 200 "$server_name\n"; }
    }
    server {
        listen 127.0.0.1:${tlsPort} ssl;
        server_name site.test;
        ssl_certificate site.pem;
        ssl_certificate_key site.key;
        location / {
            add_header X-Protocol $ssl_protocol;
            return 200 "$ssl_protocol|$ssl_cipher|$ssl_server_name|$ssl_session_reused|$https|$scheme|$ssl_session_id|$ssl_client_verify\\n";
        }
    }
}
`;
writeFileSync(join(dir, 'zonal.conf'), conf);
const z = await Zonal.start({ 'zonal.conf': conf, 'site.pem': cert, 'site.key': key, 'carl.htpasswd': 'carl:ca2g1/1lL/uQ6\n' });
t.teardown(() => z.stop());

type Answer = { status: number; headers: IncomingHttpHeaders; body: string };
function get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('http core variables in return and add_header', async (t) => {
  const basic = `Basic ${Buffer.from('ann:x').toString('base64')}`;
  const before = Date.now() / 1000;
  const r = await get('/core/p?a=1&b=2', { 'X-A': 'xa', Host: 'Example.TEST:81', Cookie: 'c=cv', Authorization: basic });
  t.equal(r.status, 200);
  t.equal(r.body, 'GET /core/p 1 xa example.test site.test http [] 1 cv ?a=1&b=2\n');
  const msec = Number(r.headers['x-msec']);
  t.ok(msec >= before - 0.002 && msec <= Date.now() / 1000 + 0.002, `$msec ${msec} is the time of the answer`);
  const time = Number(r.headers['x-request-time']);
  t.ok(/^\d+\.\d{3}$/.test(String(r.headers['x-request-time'])) && time >= 0 && time < 5, `$request_time ${time} is the time so far`);
  t.equal(r.headers['x-status'], '200', "$status in add_header is the response's");
  t.equal(r.headers['x-remote-user'], 'ann', '$remote_user of auth_basic');
  for (const host of ['www.dot.test', 'dot.test']) {
    const dot = await get('/', { Host: host });
    t.equal(dot.body, 'dot.test\n', `$server_name of "server_name .dot.test" for ${host}: without its dot`);
  }
});

t.test('$connection_time: the seconds since the connection was accepted, as its requests see it', async (t) => {
  const socket = connect(port, '127.0.0.1');
  t.teardown(() => socket.destroy());
  let got = '';
  socket.setEncoding('utf8').on('data', (d: string) => (got += d));
  const answer = async () => {
    const from = got.length;
    const body = () => /\r\n\r\n(\S+ \d+)\n/.exec(got.slice(from))?.[1];
    for (let i = 0; i < 300 && body() === undefined; i++) await new Promise((r) => setTimeout(r, 10));
    return body()?.split(' ') ?? [];
  };
  socket.write('GET /ctime HTTP/1.1\r\nHost: a\r\n\r\n');
  const [first, n1] = await answer();
  await new Promise((r) => setTimeout(r, 400));
  socket.write('GET /ctime HTTP/1.1\r\nHost: a\r\n\r\n');
  const [second, n2] = await answer();
  t.same([n1, n2], ['1', '2'], 'one connection');
  t.match(first, /^\d+\.\d{3}$/);
  t.ok(Number(first) < 0.4, `the first request comes at once: ${first}`);
  t.ok(Number(second) >= 0.4 && Number(second) - Number(first) >= 0.39, `the second 0.4 s later: ${second}`);
});

t.test('upstream and proxy variables in add_header and proxy_set_header', async (t) => {
  const r = await get('/proxied/x');
  t.equal(r.status, 200);
  const body = JSON.parse(r.body);
  t.match(body.sent, /^127\.0\.0\.1 \d+\.\d{3} \|u$/, 'proxy_set_header: $remote_addr, $request_time, an empty $ssl_protocol, $proxy_host');
  t.match(r.headers['x-connect'], /^\d+\.\d{3}$/, '$upstream_connect_time');
  t.ok(Number(r.headers['x-connect']) < 1);
  t.equal(r.headers['x-up-status'], '200');
  t.equal(r.headers['x-up-addr'], `127.0.0.1:${backendPort}`);
  t.equal(r.headers['x-proxy-host'], 'u');
  t.equal(r.headers['x-proxy-port'], '80', "an upstream's $proxy_port is the scheme's");
  t.equal(r.headers['x-status'], '200');
});

t.test('proxy_pass with variables: an address, an upstream, a URI', async (t) => {
  const byAddress = await get(`/var/a?b=127.0.0.1:${otherPort}/there`);
  t.equal(byAddress.status, 200);
  t.same(JSON.parse(byAddress.body), { peer: 'other', url: '/there', sent: null, host: `127.0.0.1:${otherPort}` }, 'the URI part replaces the request URI; Host is $proxy_host');
  const noUri = await get(`/var/a?b=127.0.0.1:${otherPort}`);
  t.equal(JSON.parse(noUri.body).url, `/var/a?b=127.0.0.1:${otherPort}`, 'without a URI part the request URI goes as it came');
  const before = (await getJson(`http://127.0.0.1:${port}/status/http/upstreams/u/peers/127.0.0.1:${backendPort}/selected/total`)).body as number;
  const byName = await get('/var/a?b=U/named');
  t.equal(byName.status, 200);
  t.same(JSON.parse(byName.body), { peer: 'backend', url: '/named', sent: null, host: 'U' }, 'an upstream by its name, caseless');
  t.ok(
    await eventually(async () => (await getJson(`http://127.0.0.1:${port}/status/http/upstreams/u/peers/127.0.0.1:${backendPort}/selected/total`)).body === before + 1),
    "the upstream reached counts the request in its peer's metrics",
  );
  const uri = await get('/uri/a%20b?q=1');
  t.equal(JSON.parse(uri.body).url, '/uri/a%20b?q=1', 'a URI of variables replaces the request URI');
  const scheme = await get(`/scheme/s?b=127.0.0.1:${otherPort}/s2`);
  t.equal(JSON.parse(scheme.body).url, '/s2', '$scheme://$host form');
});

t.test('proxy_pass with a name no upstream has and no resolver: 502, logged as nginx logs it', async (t) => {
  const r = await get('/var/a?b=nowhere.test/x');
  t.equal(r.status, 502);
  t.ok(await eventually(async () => readFileSync(join(dir, 'error.log'), 'utf8').includes('no resolver defined to resolve nowhere.test')), 'the error log says why');
  const bad = await get('/var/a?b=');
  t.equal(bad.status, 500, 'a URL with no host');
});

t.test('index and auth_basic_user_file with variables', async (t) => {
  t.equal((await get('/idx/?i=one')).body, 'one\n');
  t.equal((await get('/idx/?i=two')).body, 'two\n');
  t.equal((await get('/idx/?i=none')).body, 'default\n', 'a name that is not there: the next index');
  t.equal((await get('/idx/?i=../../ann')).body, 'default\n', 'a name cannot climb out of the directory');
  const as = (user: string) => ({ Authorization: `Basic ${Buffer.from(`${user}:pw`).toString('base64')}` });
  t.equal((await get('/auth?f=ann', as('ann'))).body, 'in as ann\n', "ann's file");
  t.equal((await get('/auth?f=bob', as('ann'))).status, 401, "ann is not in bob's file");
  t.equal((await get('/auth?f=bob', as('bob'))).body, 'in as bob\n');
  const refused = await get('/auth?f=bob', as('ann'));
  t.equal(refused.status, 401);
  t.equal(refused.headers['www-authenticate'], 'Basic realm="zone of $arg_f"', 'the realm as written');
  // As nginx answers: a file that does not exist is 403, one that cannot be read 500.
  t.equal((await get('/auth?f=nofile', as('ann'))).status, 403, 'no such file');
  // nginx's documentation: the file name may contain variables; its value, when
  // relative, is against the main configuration file's directory (nginx's conf prefix).
  // carl's hash is crypt(3)'s DES one, which nginx leaves to the system's crypt.
  t.equal((await get('/authv?f=carl.htpasswd', as('carl'))).body, 'in as carl\n', "a relative value: the file beside zonal.conf");
  t.equal((await get(`/authv?f=${join(dir, 'ann.htpasswd')}`, as('ann'))).body, 'in as ann\n', 'an absolute value as it is');
  t.equal((await get('/authv?f=ann.htpasswd', as('ann'))).status, 403, "ann's file is not beside zonal.conf: no such file");
  t.equal((await get('/authv', as('carl'))).status, 500, "an empty value: the configuration's directory, which cannot be read");
  t.equal((await get('/authv')).status, 401, 'without credentials, the challenge');
});

t.test('ssl variables over a real TLS connection', async (t) => {
  const r = await new Promise<Answer>((resolve, reject) => {
    const req = tlsRequest({ host: '127.0.0.1', port: tlsPort, path: '/', servername: 'site.test', rejectUnauthorized: false, agent: false }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
  t.equal(r.status, 200);
  const [protocol, cipher, name, reused, https, scheme, id, verify] = r.body.trim().split('|');
  t.match(protocol, /^TLSv1\.[23]$/);
  t.equal(r.headers['x-protocol'], protocol);
  t.match(cipher, /^[A-Z0-9_-]+$/, `$ssl_cipher ${cipher}`);
  t.equal(name, 'site.test', '$ssl_server_name: the SNI the client sent');
  t.equal(reused, '.', 'a new session');
  t.equal(https, 'on');
  t.equal(scheme, 'https');
  t.match(id, protocol === 'TLSv1.3' ? /^[0-9a-f]{64}$/ : /^(?:[0-9a-f]{64})?$/, `$ssl_session_id ${id}: OpenSSL's id of the session, in hex`);
  t.equal(verify, 'NONE', 'no client certificate is asked for');
});

t.test('-t: an unknown variable is refused in nginx\'s words, known ones anywhere', async (t) => {
  const unknown = await checkConfig(`http { server { listen 127.0.0.1:${port}; location / { add_header X $nonesuch; } } }\n`);
  t.not(unknown.code, 0);
  t.match(unknown.err, /unknown "nonesuch" variable/);
  const proxyT = await checkConfig(
    `http { server { listen 127.0.0.1:${port}; add_header X-Connect $upstream_connect_time; location / { proxy_pass http://127.0.0.1:${backendPort}; } location /v { return 200 "$ssl_session_reused $ssl_protocol $connection_requests $msec"; } } }\n`,
  );
  t.equal(proxyT.code, 0, proxyT.err);
});
