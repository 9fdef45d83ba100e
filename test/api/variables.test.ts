// The variable tables and their one compiler, and the `api` mapping's own variables.
import t from 'tap';
import { binaryAddress, hostOfHeader, namesIn, Variables } from '../../src/api/variables.js';
import { apiVariables } from '../../src/api/mapping.js';

t.test('a table: names, prefixes (the longest first), captures of one digit', async (t) => {
  const table = new Variables<Record<string, string>>([
    { names: { a: (c) => c.a, 1: (c) => c.one }, prefixes: [['http_', (n) => (c) => `h:${n}`]] },
    { prefixes: [['sent_http_', (n) => (c) => `s:${n}`]] },
  ]);
  t.equal(table.compile('$a|${a}|$http_x|$sent_http_y|$12')({ a: 'A', one: 'I' }), 'A|A|h:x|s:y|I2', 'a capture is one digit, as nginx reads it');
  t.equal(table.compile('no variables')({}), 'no variables');
  t.equal(table.compile('$a')({}), '', 'a variable not found is empty');
  t.ok(table.known('http_anything'));
  t.notOk(table.known('http_'), 'a prefix alone names nothing');
  t.notOk(table.known('nonesuch'));
  t.same(namesIn('$a ${b}c $12'), ['a', 'b', '1']);
});

t.test('$host of a Host header; $binary_remote_addr: 4 or 16 bytes', async (t) => {
  t.equal(hostOfHeader('Example.COM:8080'), 'example.com');
  t.equal(hostOfHeader('[::1]:8080'), '[::1]', 'an IPv6 Host loses its port only');
  t.same([...binaryAddress('10.1.2.3')], [10, 1, 2, 3]);
  t.equal(binaryAddress('::1').toString('hex'), '00000000000000000000000000000001');
  t.equal(binaryAddress('2001:db8::8:800:200c:417a').toString('hex'), '20010db80000000000080800200c417a');
  t.equal(binaryAddress('::ffff:1.2.3.4').toString('hex'), '00000000000000000000ffff01020304');
  t.equal(binaryAddress('nonsense').length, 0);
});

t.test('an api path knows $uri, $host, $arg_<name> and captures only', async (t) => {
  const value = apiVariables.compile('/status/$host/$arg_z$uri/$1');
  t.equal(value({ vars: { path: '/x', query: new URLSearchParams('z=zz'), host: 'A.b:80' }, uri: '/x', captures: ['c1'] }), '/status/a.b/zz/x/c1');
  t.notOk(apiVariables.known('remote_addr'));
});
