// The client a PROXY protocol header names: what $remote_addr, the access rules and the
// limit keys of a proxy_protocol listen see.
import t, { type Test } from 'tap';
import { proxyHeaderLength, proxyHeaderSource } from '../../../src/server/stream/proxy-protocol.js';

const SIGNATURE = Buffer.from('\r\n\r\n\0\r\nQUIT\n', 'latin1');
const sourceOf = (t: Test, header: Buffer | string) => {
  const buf = typeof header === 'string' ? Buffer.from(header, 'latin1') : header;
  const length = proxyHeaderLength(buf);
  t.ok(length > 0, 'a valid header');
  return proxyHeaderSource(buf, length);
};

t.test('version 1', async (t) => {
  t.same(sourceOf(t, 'PROXY TCP4 192.0.2.1 192.0.2.2 4000 5000\r\nrest'), { address: '192.0.2.1', port: 4000 });
  t.same(sourceOf(t, 'PROXY TCP6 2001:DB8:0:0:0:0:0:1 ::1 4000 5000\r\n'), { address: '2001:db8::1', port: 4000 }, 'IPv6 written as node writes it');
  t.same(sourceOf(t, 'PROXY TCP6 ::ffff:192.0.2.1 ::1 4000 5000\r\n'), { address: '::ffff:192.0.2.1', port: 4000 }, 'an embedded IPv4 kept dotted');
  t.equal(sourceOf(t, 'PROXY UNKNOWN\r\n'), undefined, 'UNKNOWN: the connection is the client');
});

t.test('version 2', async (t) => {
  const inet = Buffer.from([192, 0, 2, 7, 192, 0, 2, 2, 0x0f, 0xa0, 0x13, 0x88]);
  t.same(sourceOf(t, Buffer.concat([SIGNATURE, Buffer.from([0x21, 0x11, 0, 12]), inet])), { address: '192.0.2.7', port: 4000 });
  const inet6 = Buffer.alloc(36);
  inet6.writeUInt16BE(0x2001, 0);
  inet6.writeUInt16BE(0x0db8, 2);
  inet6.writeUInt16BE(0x0009, 14);
  inet6.writeUInt16BE(4001, 32);
  t.same(sourceOf(t, Buffer.concat([SIGNATURE, Buffer.from([0x21, 0x21, 0, 36]), inet6])), { address: '2001:db8::9', port: 4001 });
  t.equal(sourceOf(t, Buffer.concat([SIGNATURE, Buffer.from([0x20, 0x00, 0, 0])])), undefined, 'LOCAL: the connection is the client');
  t.equal(sourceOf(t, Buffer.concat([SIGNATURE, Buffer.from([0x21, 0x21, 0, 12]), inet])), undefined, 'an address block too short for IPv6 names no one');
});
