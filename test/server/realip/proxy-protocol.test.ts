// `listen ... proxy_protocol` in http with realip's `real_ip_header proxy_protocol`, through
// bin/zonal with two workers: the header's source is $proxy_protocol_addr and
// $proxy_protocol_port, and, from a trusted address, the request's $remote_addr and
// $remote_port for access rules too; a broken header closes the connection.
import t from 'tap';
import { connect } from 'node:net';
import { checkConfig, freePorts, Zonal } from '../zonal.js';

const [port] = await freePorts(1);
const conf = `worker_processes 2;
http {
  server {
    listen 127.0.0.1:${port} proxy_protocol;
    set_real_ip_from 127.0.0.1;
    location / { return 200 "$proxy_protocol_addr|$proxy_protocol_port|$remote_addr|$remote_port\\n"; }
    location /real {
      real_ip_header proxy_protocol;
      return 200 "$proxy_protocol_addr|$proxy_protocol_port|$remote_addr|$remote_port|$realip_remote_addr\\n";
    }
    location /denied { real_ip_header proxy_protocol; deny 192.0.2.1; return 200 "let in\\n"; }
  }
}
`;
const z = await Zonal.start({ 'zonal.conf': conf });
t.teardown(() => z.stop());

/** What the server answers to `head` then a GET of `path`, to the connection's end. */
function send(head: string | Buffer, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (out += d));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error('timed out')));
    socket.write(Buffer.concat([Buffer.from(head), Buffer.from(`GET ${path} HTTP/1.0\r\nHost: localhost\r\n\r\n`)]));
  });
}
const body = (answer: string) => answer.slice(answer.indexOf('\r\n\r\n') + 4).trim();

t.test('the header source, and realip from it', async (t) => {
  const tcp4 = 'PROXY TCP4 192.0.2.1 192.0.2.2 1234 5678\r\n';
  const plain = body(await send(tcp4, '/'));
  t.match(plain, /^192\.0\.2\.1\|1234\|127\.0\.0\.1\|\d+$/, 'without real_ip_header proxy_protocol, the connection');
  t.equal(body(await send(tcp4, '/real')), '192.0.2.1|1234|192.0.2.1|1234|127.0.0.1', 'the address and port');
  t.equal(body(await send('PROXY TCP6 2001:Db8::1 2001:Db8::2 1234 5678\r\n', '/real')), '2001:db8::1|1234|2001:db8::1|1234|127.0.0.1', 'IPv6');
  t.match(body(await send('PROXY UNKNOWN\r\n', '/real')), /^\|\|127\.0\.0\.1\|\d+\|127\.0\.0\.1$/, 'UNKNOWN: no source, nothing changes');
  // Version 2: signature, PROXY over TCP4, 12 address bytes.
  const v2 = Buffer.concat([Buffer.from('0d0a0d0a000d0a515549540a', 'hex'), Buffer.from([0x21, 0x11, 0, 12]), Buffer.from([198, 51, 100, 7, 127, 0, 0, 1]), Buffer.from([0x1f, 0x90, 0, 80])]);
  t.equal(body(await send(v2, '/real')), '198.51.100.7|8080|198.51.100.7|8080|127.0.0.1', 'version 2');
});

t.test('access rules see the header address', async (t) => {
  t.match(await send('PROXY TCP4 192.0.2.1 192.0.2.2 1234 5678\r\n', '/denied'), /^HTTP\/1\.1 403 /);
  t.match(await send('PROXY TCP4 192.0.2.9 192.0.2.2 1234 5678\r\n', '/denied'), /^HTTP\/1\.1 200 /);
});

t.test('a broken header closes the connection unanswered', async (t) => {
  t.equal(await send('PROXY TCP4 nonsense\r\n', '/'), '');
  t.equal(await send('', '/'), '', 'and so does a request without one');
});

t.test('-t: proxy_protocol goes with plain HTTP only', async (t) => {
  const r = await checkConfig(`http { server { listen 127.0.0.1:${port} ssl proxy_protocol; } }\n`);
  t.not(r.code, 0);
  t.match(r.err, /the "proxy_protocol" parameter goes with a plain HTTP listen only, not "ssl"/);
});
