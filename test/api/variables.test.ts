// The one variable evaluator of the server, the `api` mappings and limit keys.
import t from 'tap';
import { binaryAddress, compileKey, compileValue, hostOf } from '../../src/api/variables.js';

const req = (headers: Record<string, string>, url = '/a/b?x=1&y=2', remoteAddress = '127.0.0.1') => ({
  url,
  headers,
  socket: { remoteAddress, localAddress: '127.0.0.2', localPort: 8080 },
});

t.test('values: host, uri, args, headers, captures, server_name', async (t) => {
  const c = { req: req({ host: 'Example.COM:8080', 'x-user': 'u1' }), uri: '/a/b', captures: ['one', 'two'], serverName: 'site' };
  t.equal(compileValue('$host|$uri|$arg_y|$http_x_user|$1$2|${server_name}|$remote_addr|$server_port')(c), 'example.com|/a/b|2|u1|onetwo|site|127.0.0.1|8080');
  t.equal(compileValue('$12')(c), 'one2', 'a capture is one digit, as nginx reads it');
  t.equal(compileValue('no variables')(c), 'no variables');
  t.equal(hostOf({ headers: { host: '[::1]:8080' } }), '[::1]', 'an IPv6 Host loses its port only');
  t.equal(hostOf({ headers: {}, socket: { localAddress: '10.0.0.1' } }), '10.0.0.1', 'no Host: the local address');
  t.equal(compileValue('$arg_x')({ ...c, args: new URLSearchParams('x=parsed') }), 'parsed', 'a parsed query is used as it is');
});

t.test('$binary_remote_addr: 4 or 16 bytes, as they are in a key', async (t) => {
  t.same([...binaryAddress('10.1.2.3')], [10, 1, 2, 3]);
  t.equal(binaryAddress('::1').toString('hex'), '00000000000000000000000000000001');
  t.equal(binaryAddress('2001:db8::8:800:200c:417a').toString('hex'), '20010db80000000000080800200c417a');
  t.equal(binaryAddress('::ffff:1.2.3.4').toString('hex'), '00000000000000000000ffff01020304');
  t.equal(binaryAddress('nonsense').length, 0);
  const key = compileKey('$binary_remote_addr')({ req: req({}, '/', '::ffff:192.168.0.200'), uri: '/' });
  t.same([...(key as Buffer)], [192, 168, 0, 200], 'an IPv4 client of a dual-stack socket is 4 bytes');
  const mixed = compileKey('$binary_remote_addr:$uri')({ req: req({}, '/', '10.0.0.255'), uri: '/é' }) as Buffer;
  t.same(mixed, Buffer.concat([Buffer.from([10, 0, 0, 255]), Buffer.from(':/é')]), 'bytes, then the text in UTF-8');
  t.equal(compileKey('$remote_addr')({ req: req({}), uri: '/' }), '127.0.0.1', 'a text key stays text');
});
