// allow/deny against ngx_http_access_module: the documentation's example, the split by
// family, IPv4-mapped clients, prefix boundaries, and the address parser against node's
// own (BlockList) on random addresses.
import t, { type Test } from 'tap';
import { BlockList } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { AccessRule } from '../../src/server/config/model.js';
import { accessChecker } from '../../src/server/access/runtime.js';

const origin = { file: 'test.conf', line: 1 };
const allow = (address: string): AccessRule => ({ allow: true, address, origin });
const deny = (address: string): AccessRule => ({ allow: false, address, origin });

function table(t: Test, rules: AccessRule[], rows: [address: string | undefined, allowed: boolean][]) {
  const allowed = accessChecker(rules);
  for (const [address, expected] of rows) t.equal(allowed(address), expected, `${address} ${expected ? 'allowed' : 'denied'}`);
}

t.test("nginx documentation's example", async (t) => {
  table(t, [deny('192.168.1.1'), allow('192.168.1.0/24'), allow('10.1.1.0/16'), allow('2001:0db8::/32'), deny('all')], [
    ['192.168.1.1', false],
    ['192.168.1.2', true],
    ['192.168.2.1', false],
    ['10.1.200.3', true],
    ['10.2.0.1', false],
    ['2001:db8::1', true],
    ['2001:DB8:ffff::1', true],
    ['2001:db9::1', false],
    ['::ffff:192.168.1.2', true],
    ['::ffff:192.168.1.1', false],
    ['::1', false],
    ['127.0.0.1', false],
    ['fe80::1%eth0', false],
    [undefined, false],
  ]);
});

t.test('no rule, and no matching rule, allow', async (t) => {
  table(t, [], [['127.0.0.1', true], ['::1', true], [undefined, true]]);
  table(t, [deny('10.0.0.0/8')], [['127.0.0.1', true], ['10.1.2.3', false], ['::1', true], [undefined, true]]);
});

t.test('each family has its own rules; all belongs to every family', async (t) => {
  table(t, [deny('::1')], [['127.0.0.1', true], ['::1', false]]);
  table(t, [deny('127.0.0.1')], [['::1', true], ['127.0.0.1', false], ['::ffff:127.0.0.1', false]]);
  table(t, [deny('0.0.0.0/0')], [['8.8.8.8', false], ['2001:db8::1', true]]);
  table(t, [deny('::/0')], [['8.8.8.8', true], ['2001:db8::1', false]]);
  table(t, [allow('127.0.0.1'), deny('all')], [['127.0.0.1', true], ['127.0.0.2', false], ['::1', false], [undefined, false]]);
  table(t, [allow('unix:'), deny('all')], [[undefined, true], ['127.0.0.1', false], ['::1', false]]);
});

t.test('IPv4-mapped clients: IPv4 rules when there are any, else IPv6 rules', async (t) => {
  table(t, [deny('::ffff:0:0/96')], [['::ffff:1.2.3.4', false], ['1.2.3.4', true]]);
  table(t, [allow('1.2.3.4'), deny('::ffff:0:0/96')], [
    ['::ffff:1.2.3.4', true],
    ['::ffff:5.6.7.8', true],
    ['::FFFF:1.2.3.4', true],
    ['::ffff:102:304', true],
  ]);
  table(t, [deny('1.2.3.4')], [['::ffff:102:304', false], ['0:0:0:0:0:ffff:1.2.3.4', false], ['::1.2.3.4', true]]);
});

t.test('prefix boundaries', async (t) => {
  table(t, [allow('10.0.0.0/31'), deny('all')], [['10.0.0.0', true], ['10.0.0.1', true], ['10.0.0.2', false]]);
  table(t, [allow('10.0.0.7/32'), deny('all')], [['10.0.0.7', true], ['10.0.0.6', false]]);
  table(t, [allow('2001:db8::/33'), deny('all')], [['2001:db8:7fff::', true], ['2001:db8:8000::', false]]);
  table(t, [allow('2001:db8::1/127'), deny('all')], [['2001:db8::', true], ['2001:db8::1', true], ['2001:db8::2', false]]);
  table(t, [allow('2001:db8::1/128'), deny('all')], [['2001:db8::1', true], ['2001:db8::', false], ['2001:db8:0:0:0:0:0:1', true]]);
  table(t, [allow('1:2:3:4:5:6:7:8'), deny('all')], [['1:2:3:4:5:6:7:8', true], ['1:2:3:4:5:6:7:9', false], ['1:2:3:4:5:6::8', false]]);
  table(t, [deny('::')], [['::', false], ['::0', false], ['0::0', false], ['::1', true]]);
});

t.test('first match wins, and the answer does not stick to the last address', async (t) => {
  const allowed = accessChecker([allow('10.0.0.1'), deny('10.0.0.0/8'), allow('all')]);
  const answers = ['10.0.0.1', '10.0.0.1', '10.0.0.2', '10.0.0.2', '10.0.0.1', '11.0.0.1'].map(allowed);
  t.same(answers, [true, true, false, false, true, true]);
});

t.test('unparsable client addresses are only matched by all', async (t) => {
  const rows = ['', 'abc', '1.2.3', '1.2.3.256', '1.2.3.4.5', ':::1', '1:2:3:4:5:6:7:8:9', '1::2::3', '12345::', '1:', ':1', '::1.2.3', '1.2.3.04x'];
  table(t, [deny('0.0.0.0/0'), deny('::/0')], rows.map((a) => [a, true]));
  table(t, [deny('all')], rows.map((a) => [a, false]));
});

t.test('invalid rules throw with their origin', async (t) => {
  for (const address of ['10.0.0.0/33', 'foo', '::1/129', '1.2.3.4/', '1.2.3.4/x', '256.0.0.0', '::1%eth0', 'unix:/tmp/x', '']) {
    t.throws(() => accessChecker([deny(address)]), { message: `invalid parameter "${address}" in test.conf:1` }, JSON.stringify(address));
  }
});

t.test('random addresses and prefixes agree with node:net BlockList', async (t) => {
  let disagreements = 0;
  for (let i = 0; i < 2000; i++) {
    const v6 = i % 2 === 1;
    const bytes = randomBytes(v6 ? 16 : 4);
    // Runs of zero groups, so that the compressed form has a `::` to parse.
    if (v6 && i % 3 === 0) bytes.fill(0, 4, 10);
    const near = Buffer.from(bytes);
    // Half the clients share the network's first bytes, so both answers come up.
    if (i % 4 < 2) near[near.length - 1]! ^= 1 << (i % 8);
    else near.set(randomBytes(near.length));
    const bits = (i * 7) % (v6 ? 129 : 33);
    const network = v6 ? format6(bytes, i % 4 === 1) : [...bytes].join('.');
    const client = v6 ? format6(near, i % 4 === 3) : [...near].join('.');
    const list = new BlockList();
    list.addSubnet(network, bits, v6 ? 'ipv6' : 'ipv4');
    const expected = !list.check(client, v6 ? 'ipv6' : 'ipv4');
    const actual = accessChecker([deny(`${network}/${bits}`)])(client);
    if (actual !== expected) {
      disagreements++;
      t.fail(`${client} against ${network}/${bits}: ${actual}, BlockList says ${expected}`);
    }
  }
  t.equal(disagreements, 0);
});

/** The full form, or the compressed one as node's URL parser writes it. */
function format6(bytes: Buffer, compressed: boolean): string {
  const full = [0, 2, 4, 6, 8, 10, 12, 14].map((k) => bytes.readUInt16BE(k).toString(16)).join(':');
  return compressed ? new URL(`http://[${full}]/`).hostname.slice(1, -1) : full;
}
