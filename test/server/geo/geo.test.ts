// `geo` (ngx_http_geo_module) through bin/zonal with two workers: networks by longest
// prefix (IPv4 and IPv6, an IPv4 client of a dual-stack socket as IPv4), default,
// include, delete, ranges, a value's address (255.255.255.255 for what is none), realip's
// address, and `proxy`/`proxy_recursive` reading X-Forwarded-For. `-t` refuses what
// nginx refuses.
import t from 'tap';
import { request } from 'node:http';
import { checkConfig, freePorts, Zonal } from '../zonal.js';

const [port] = await freePorts(1);

const conf = `worker_processes 2;
http {
  geo $by_client {
    default none;
    127.0.0.0/8 loopback;
    127.0.0.1 one;
    ::1 six;
    include more.geo;
    10.0.0.0/8 ten;
    delete 10.0.0.0/8;
  }
  geo $arg_ip $by_value {
    default none;
    192.0.2.0/24 doc;
    192.0.2.128/25 upper;
    2001:db8::/32 doc6;
    255.255.255.255 no-address;
    10.0.0.0/8 ten;
  }
  geo $arg_ip $by_range {
    ranges;
    default none;
    192.0.2.0-192.0.2.255 wide;
    192.0.2.10-192.0.2.20 narrow;
  }
  geo $by_proxy {
    proxy 127.0.0.1;
    default none;
    127.0.0.1 direct;
    192.0.2.0/24 forwarded;
    10.0.0.0/8 proxy-ten;
  }
  geo $by_chain {
    proxy 127.0.0.1;
    proxy 10.0.0.0/8;
    proxy_recursive;
    default none;
    192.0.2.0/24 forwarded;
    10.0.0.0/8 proxy-ten;
  }
  server {
    listen 127.0.0.1:${port};
    listen [::1]:${port};
    location / { return 200 "$by_client|$by_value|$by_range|$by_proxy|$by_chain\\n"; }
    location /real { set_real_ip_from 127.0.0.1; return 200 "$by_client\\n"; }
  }
}
`;
const z = await Zonal.start({ 'zonal.conf': conf, 'more.geo': '127.0.0.2 two;\n' });
t.teardown(() => z.stop());

function at(path: string, headers: Record<string, string> = {}, host = '127.0.0.1'): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, headers, agent: false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve(text.trim().split('|')));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.end();
  });
}

t.test("the client's address: the longest prefix, IPv4 and IPv6", async (t) => {
  t.equal((await at('/'))[0], 'one', '127.0.0.1/32 over 127.0.0.0/8');
  t.equal((await at('/', {}, '::1'))[0], 'six');
});

t.test("a value's address", async (t) => {
  const value = async (ip: string) => (await at(`/?ip=${ip}`))[1];
  t.equal(await value('192.0.2.1'), 'doc');
  t.equal(await value('192.0.2.200'), 'upper', 'the longer prefix');
  t.equal(await value('2001:db8::1'), 'doc6');
  t.equal(await value('::ffff:192.0.2.1'), 'doc', 'an IPv4-mapped address is IPv4');
  t.equal(await value('198.51.100.1'), 'none', 'the default');
  t.equal(await value('junk'), 'no-address', 'what is no address is 255.255.255.255');
  t.equal(await value(''), 'no-address');
});

t.test('ranges: a later range over an earlier one', async (t) => {
  const range = async (ip: string) => (await at(`/?ip=${ip}`))[2];
  t.equal(await range('192.0.2.15'), 'narrow');
  t.equal(await range('192.0.2.21'), 'wide');
  t.equal(await range('192.0.3.1'), 'none');
  t.equal(await range('2001:db8::1'), 'none', 'IPv6 is in no range');
});

t.test('include and delete', async (t) => {
  const r = await new Promise<string>((resolve) => {
    // 127.0.0.2 is a loopback address a client can come from.
    const req = request({ host: '127.0.0.1', port, path: '/', localAddress: '127.0.0.2', agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve(text));
    });
    req.on('error', () => resolve('unreachable'));
    req.end();
  });
  t.equal(r.split('|')[0], 'two', 'a network of an included file');
  t.equal((await at('/?ip=10.1.1.1'))[1], 'ten', 'delete takes out only its own block\'s network');
});

t.test("realip's address", async (t) => {
  t.same(await at('/real', { 'x-real-ip': '127.0.0.2' }), ['two']);
});

t.test('proxy: X-Forwarded-For from a trusted address', async (t) => {
  t.equal((await at('/'))[3], 'direct', 'no header: the client');
  t.equal((await at('/', { 'x-forwarded-for': '192.0.2.5' }))[3], 'forwarded');
  t.equal((await at('/', { 'x-forwarded-for': '192.0.2.5, 10.1.1.1' }))[3], 'proxy-ten', 'not recursive: the last address');
  t.equal((await at('/', { 'x-forwarded-for': '192.0.2.5, 10.1.1.1' }))[4], 'forwarded', 'recursive: past the trusted ones');
  t.equal((await at('/', { 'x-forwarded-for': '192.0.2.5' }, '::1'))[3], 'none', 'an untrusted client: its own address');
});

t.test('-t refuses what nginx refuses', async (t) => {
  const wrap = (block: string) => `http {\n${block}\nserver { listen 127.0.0.1:${port}; }\n}\n`;
  const cases: Array<[string, RegExp]> = [
    ['geo $g { 10.0.0.0/33 x; }', /invalid network "10\.0\.0\.0\/33"/],
    ['geo $g { nonsense x; }', /invalid network "nonsense"/],
    ['geo $g { ranges; 10.0.0.9-10.0.0.1 x; }', /invalid range "10\.0\.0\.9-10\.0\.0\.1"/],
    ['geo $g { a b c; }', /invalid number of the geo parameters/],
    ['geo $g { proxy nowhere; }', /invalid network or address "nowhere"/],
    ['geo $nope $g { }', /unknown "nope" variable/],
    ['geo $remote_addr $host { }', /the duplicate "host" variable/],
    ['geo g { }', /invalid variable name "g"/],
  ];
  for (const [block, error] of cases) {
    const r = await checkConfig(wrap(block));
    t.not(r.code, 0, block);
    t.match(r.err, error, block);
  }
});
