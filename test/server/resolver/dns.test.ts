// The DNS client against dnsmasq and a fault-injecting responder: every response code
// counted once per query in a resolver zone, retries across servers, TCP after a
// truncated answer, the cache and its TTL.
import t from 'tap';
import { Status } from '../../../src/metrics/status.js';
import { resolver as recorder } from '../../../src/metrics/resolvers.js';
import { DnsError, DnsResolver, reverseName } from '../../../src/server/resolver/dns.js';
import { apiOf } from '../../metrics/api.js';
import { uniqueName } from '../../helpers.js';
import { startDnsmasq, startFaultServer } from './dns-servers.js';

const zero = { success: 0, timedout: 0, format_error: 0, server_failure: 0, not_found: 0, unimplemented: 0, refused: 0, other: 0 };

t.test('lookups against dnsmasq and a faulty server, counted by response code', async (t) => {
  const dnsmasq = await startDnsmasq({ hosts: '127.0.0.5 a.test\n127.0.0.6 a.test\n', srv: ['_http._tcp.svc.test,a.test,8080,0,5'], ttl: 1 });
  t.teardown(() => dnsmasq.stop());
  const faults = await startFaultServer();
  t.teardown(() => faults.stop());
  const status = Status.create({ resolvers: ['dns'] }, { workers: 1, writer: true, instance: uniqueName('dns') });
  t.teardown(() => status.remove());
  const api = apiOf(status);
  const counts = () => api.get('/status/resolvers/dns').body;

  const local = new DnsResolver({ servers: [{ host: '127.0.0.1', port: dnsmasq.port }], timeout: 2000, ipv6: false, recorder: recorder(status, 'dns') });
  t.teardown(() => local.close());
  const a = await local.lookup('a.test');
  t.same([...a.addresses].sort(), ['127.0.0.5', '127.0.0.6'], 'both A records');
  t.ok(a.expires > Date.now() && a.expires <= Date.now() + 1000 + 50, 'kept for the TTL (1 s)');
  t.same(counts(), { queries: { name: 1, srv: 0, addr: 0 }, responses: { ...zero, success: 1 } }, 'one query, one success');

  const again = await local.lookup('A.TEST');
  t.equal(again, a, 'a second lookup within the TTL is the cached answer (names are caseless)');
  t.equal(counts().queries.name, 1, 'and sends no query');

  const srv = await local.resolveSrv('_http._tcp.svc.test');
  t.same(srv.records, [{ target: 'a.test', port: 8080, priority: 0, weight: 5 }], 'SRV record');
  const nx = await local.lookup('nothing.test').catch((e: unknown) => e);
  t.ok(nx instanceof DnsError && nx.rcode === 3 && nx.code === 'ENOTFOUND', 'NXDOMAIN from dnsmasq');
  const refused = await local.lookup('outside.example').catch((e: unknown) => e);
  t.ok(refused instanceof DnsError && refused.rcode === 5 && refused.code === 'EREFUSED', 'REFUSED outside its domain');
  const ptr = await local.reverse('127.0.0.5');
  t.same(ptr.names, ['a.test'], 'PTR of a hosts entry');
  t.same(counts(), { queries: { name: 3, srv: 1, addr: 1 }, responses: { ...zero, success: 3, not_found: 1, refused: 1 } });

  // The TTL ends: the next lookup asks again.
  const expired = await local.lookup('a.test', a.expires + 1);
  t.not(expired, a, 'after the TTL, a new query');
  t.equal(counts().queries.name, 4);

  const faulty = new DnsResolver({ servers: [{ host: '127.0.0.1', port: faults.port }], timeout: 600, ipv6: false, recorder: recorder(status, 'dns') });
  t.teardown(() => faulty.close());
  const before = counts().responses;
  const code = async (name: string) => faulty.lookup(name).then(() => 'ok', (e: DnsError) => e.code);
  t.equal(await code('formerr.x'), 'EFORMERR');
  t.equal(await code('servfail.x'), 'ESERVFAIL');
  t.equal(await code('notimp.x'), 'ENOTIMP');
  t.equal(await code('refused.x'), 'EREFUSED');
  t.equal(await code('rcode9.x'), 'ERCODE9');
  t.equal(await code('silent.x'), 'ETIMEOUT', 'no answer within resolver_timeout');
  t.equal(await code('garbage.x'), 'ETIMEOUT', 'a reply that is no DNS message is no answer');
  t.equal(await code('wrong-question.x'), 'ETIMEOUT', 'nor an answer to another question');
  const after = counts().responses;
  t.same(
    Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - before[k]])),
    { success: 0, timedout: 3, format_error: 1, server_failure: 1, not_found: 0, unimplemented: 1, refused: 1, other: 1 },
    'each ending counted once where RFC 1035 puts it',
  );

  const truncated = await faulty.lookup('truncate.x');
  t.equal(truncated.addresses.length, 40, 'a truncated answer is asked again over TCP, which has it whole');
  t.ok(faults.tcp.includes('truncate.x'), 'over TCP');
  t.equal(counts().responses.success, after.success + 1, 'one query, one success, whatever the transport');
});

t.test('retries across the configured servers', async (t) => {
  const silent = await startFaultServer('127.0.0.9', 'silent');
  t.teardown(() => silent.stop());
  const failing = await startFaultServer('127.0.0.9', 'servfail');
  t.teardown(() => failing.stop());
  const good = await startFaultServer('127.0.0.42', 'ok');
  t.teardown(() => good.stop());
  const status = Status.create({ resolvers: ['r'] }, { workers: 1, writer: true, instance: uniqueName('dnsr') });
  t.teardown(() => status.remove());
  const api = apiOf(status);
  const r = new DnsResolver({
    servers: [silent.port, failing.port, good.port].map((port) => ({ host: '127.0.0.1', port })),
    timeout: 5000,
    ipv6: false,
    recorder: recorder(status, 'r'),
  });
  t.teardown(() => r.close());
  const started = Date.now();
  const found = await r.lookup('name.test');
  t.same(found.addresses, ['127.0.0.42'], 'the third server answered');
  t.ok(Date.now() - started >= 900, 'after the first stayed silent for the resend interval (1 s)');
  t.same([silent.udp.length, failing.udp.length, good.udp.length], [1, 1, 1], 'each asked once, the SERVFAIL passed over');
  t.same(api.get('/status/resolvers/r').body.responses, { ...zero, success: 1 }, 'one query, counted once, by its last answer');
});

t.test('A and AAAA per ipv4/ipv6, reverse names', async (t) => {
  const dnsmasq = await startDnsmasq({ hosts: '127.0.0.7 b.test\n::7 b.test\n' });
  t.teardown(() => dnsmasq.stop());
  const both = new DnsResolver({ servers: [{ host: '127.0.0.1', port: dnsmasq.port }], timeout: 2000 });
  t.teardown(() => both.close());
  t.same([...(await both.lookup('b.test')).addresses].sort(), ['127.0.0.7', '::7']);
  const v6 = new DnsResolver({ servers: [{ host: '127.0.0.1', port: dnsmasq.port }], timeout: 2000, ipv4: false });
  t.teardown(() => v6.close());
  t.same((await v6.lookup('b.test')).addresses, ['::7']);
  t.equal(reverseName('127.0.0.7'), '7.0.0.127.in-addr.arpa');
  t.equal(reverseName('::1'), `1.${'0.'.repeat(31)}ip6.arpa`);
  t.throws(() => new DnsResolver({ servers: [] }), /at least one server/);
});
