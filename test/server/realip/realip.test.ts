// realip (ngx_http_realip_module) through bin/zonal with two workers: a trusted peer's
// X-Real-IP, X-Forwarded-For (recursive or not) or another field becomes the request's
// $remote_addr and $remote_port, which access rules, limit keys, ip_hash and the log
// see, while $realip_remote_addr keeps the connection's; an untrusted peer changes
// nothing. `-t` refuses what nginx refuses.
import t from 'tap';
import { request } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkConfig, eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { CountingBackend } from '../upstream/backends.js';

const [port, admin, b1, b2, b3, port2] = await freePorts(6);
const backends = [new CountingBackend(b1), new CountingBackend(b2), new CountingBackend(b3)];
await Promise.all(backends.map((b) => b.start()));
t.teardown(() => Promise.all(backends.map((b) => b.stop())));

const conf = `worker_processes 2;
http {
  log_format real '$remote_addr $realip_remote_addr $uri';
  limit_req_zone $binary_remote_addr zone=per_client:64k rate=1r/m;
  upstream hashed { ip_hash; server 127.0.0.1:${b1}; server 127.0.0.1:${b2}; server 127.0.0.1:${b3}; }
  server {
    listen 127.0.0.1:${port};
    set_real_ip_from 127.0.0.1;
    access_log real.log real;
    location / { return 200 "$remote_addr|$remote_port|$realip_remote_addr|$realip_remote_port\\n"; }
    location /xff { real_ip_header X-Forwarded-For; return 200 "$remote_addr\\n"; }
    location /recursive {
      real_ip_header X-Forwarded-For;
      real_ip_recursive on;
      set_real_ip_from 127.0.0.1;
      set_real_ip_from 10.0.0.0/8;
      return 200 "$remote_addr\\n";
    }
    location /denied { deny 192.0.2.1; allow all; return 200 "let in\\n"; }
    location /limited { limit_req zone=per_client; proxy_pass http://127.0.0.1:${b1}; }
    location /hashed { proxy_pass http://hashed; }
  }
  # Only locations trust: the server's settings apply before any location is found.
  server {
    listen 127.0.0.1:${port2};
    location /field { set_real_ip_from 127.0.0.0/8; real_ip_header X-Client; return 200 "$remote_addr\\n"; }
    location /untrusted { set_real_ip_from 192.0.2.0/24; return 200 "$remote_addr\\n"; }
    location / { return 200 "$remote_addr\\n"; }
  }
  server { listen 127.0.0.1:${admin} admin; location /status/ { api /status/; } }
}
`;
const z = await Zonal.start({ 'zonal.conf': conf });
t.teardown(() => z.stop());

function at(path: string, headers: Record<string, string> = {}, to = port): Promise<{ status: number; text: string; localPort: number }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: to, path, headers, agent: false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, localPort }));
    });
    let localPort = 0;
    req.on('socket', (s) => s.on('connect', () => (localPort = s.localPort ?? 0)));
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.end();
  });
}

t.test('X-Real-IP (the default field) from a trusted address', async (t) => {
  const plain = await at('/');
  t.equal(plain.text, `127.0.0.1|${plain.localPort}|127.0.0.1|${plain.localPort}\n`, 'without the field, the connection');
  const real = await at('/', { 'x-real-ip': '192.0.2.7' });
  t.equal(real.text, `192.0.2.7||127.0.0.1|${real.localPort}\n`, 'the address; no port given, none');
  const withPort = await at('/', { 'x-real-ip': '[2001:db8::7]:8000' });
  t.equal(withPort.text, `2001:db8::7|8000|127.0.0.1|${withPort.localPort}\n`, 'an IPv6 address with its port');
  t.equal((await at('/', { 'x-real-ip': 'not-an-address' })).text.split('|')[0], '127.0.0.1', 'what is no address changes nothing');
  t.equal((await at('/untrusted', { 'x-real-ip': '192.0.2.7' }, port2)).text, '127.0.0.1\n', 'a peer not among set_real_ip_from changes nothing');
  t.equal((await at('/', { 'x-real-ip': '192.0.2.7' }, port2)).text, '127.0.0.1\n', 'nor does a server without it');
});

t.test('X-Forwarded-For: the last address, or with real_ip_recursive the last untrusted one', async (t) => {
  const xff = { 'x-forwarded-for': '203.0.113.5, 10.1.2.3' };
  t.equal((await at('/xff', xff)).text, '10.1.2.3\n');
  t.equal((await at('/recursive', xff)).text, '203.0.113.5\n', 'the trusted 10.1.2.3 gives way to the address before it');
  t.equal((await at('/recursive', { 'x-forwarded-for': '10.0.0.1, 10.1.2.3' })).text, '10.0.0.1\n', 'all trusted: the first');
  t.equal((await at('/recursive', { 'x-forwarded-for': 'junk, 10.1.2.3' })).text, '10.1.2.3\n', 'what is no address ends the walk');
});

t.test('another field', async (t) => {
  t.equal((await at('/field', { 'x-client': '198.51.100.9' }, port2)).text, '198.51.100.9\n');
  t.equal((await at('/field', { 'x-real-ip': '198.51.100.9' }, port2)).text, '127.0.0.1\n', 'X-Real-IP is not read there');
});

t.test('access rules see the real address', async (t) => {
  t.equal((await at('/denied', { 'x-real-ip': '192.0.2.1' })).status, 403);
  t.equal((await at('/denied', { 'x-real-ip': '192.0.2.2' })).status, 200);
});

t.test('limit keys see the real address, across two workers', async (t) => {
  const first = await Promise.all(['192.0.2.10', '192.0.2.11', '192.0.2.12'].map((ip) => at('/limited', { 'x-real-ip': ip })));
  t.same(first.map((r) => r.status), [200, 200, 200], 'each client its own bucket');
  const again = await Promise.all(['192.0.2.10', '192.0.2.11'].map((ip) => at('/limited', { 'x-real-ip': ip })));
  t.same(again.map((r) => r.status), [503, 503], 'a client again within the minute is refused, whichever worker');
  const { body } = await getJson(`http://127.0.0.1:${admin}/status/http/limit_reqs/per_client`);
  t.equal(body.passed, 3);
  t.equal(body.rejected, 2);
});

t.test('ip_hash sees the real address (nginx: the first three octets)', async (t) => {
  for (const b of backends) b.requests = 0;
  // As nginx's upstream_ip_hash.t: 30 clients 127.0.<i>.2 over three peers, 10 each.
  for (let i = 1; i <= 30; i++) await at('/hashed', { 'x-real-ip': `127.0.${i}.2` });
  t.same(backends.map((b) => b.requests), [10, 10, 10]);
  for (const b of backends) b.requests = 0;
  for (let i = 1; i <= 10; i++) await at('/hashed', { 'x-real-ip': `192.0.2.${i}` });
  t.equal(backends.filter((b) => b.requests === 10).length, 1, 'one /24: one peer');
});

t.test('the log sees the real address and the original', async (t) => {
  await at('/logged', { 'x-real-ip': '198.51.100.1' });
  const log = join(z.dir, 'real.log');
  const read = () => (existsSync(log) ? readFileSync(log, 'utf8') : '');
  t.ok(await eventually(async () => read().includes('/logged')));
  t.match(read(), /^198\.51\.100\.1 127\.0\.0\.1 \/logged$/m);
});

t.test('-t refuses what nginx refuses', async (t) => {
  const wrap = (line: string) => `http { server { listen 127.0.0.1:${port}; ${line} } }\n`;
  const cases: Array<[string, RegExp]> = [
    ['set_real_ip_from 10.0.0.0/33;', /invalid parameter "10\.0\.0\.0\/33"/],
    ['set_real_ip_from nowhere.invalid;', /host not found in set_real_ip_from "nowhere\.invalid"/],
    ['real_ip_recursive maybe;', /invalid value "maybe" in "real_ip_recursive" directive/],
    ['real_ip_header;', /invalid number of arguments in "real_ip_header" directive/],
  ];
  for (const [line, error] of cases) {
    const r = await checkConfig(wrap(line));
    t.not(r.code, 0, line);
    t.match(r.err, error, line);
  }
  const ok = await checkConfig(wrap('set_real_ip_from unix:; set_real_ip_from localhost; set_real_ip_from ::1; real_ip_header proxy_protocol;'));
  t.equal(ok.code, 0, ok.err);
});
