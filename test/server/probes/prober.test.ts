// The prober without a protocol: checks are functions the test answers, so each rule is
// seen alone: fails/passes in a row, essential peers checking until a pass, modes
// onfail and idle, the balancers' own states left alone, essential on reload with and
// without persistent.
import t, { type Test } from 'tap';
import type { UpstreamConfig } from '../../../src/metrics/catalog.js';
import { Status } from '../../../src/metrics/status.js';
import { peer as peerRecorder, PeerCell, PeerState, peerHandles } from '../../../src/metrics/upstreams.js';
import { peerSet } from '../../../src/metrics/peers.js';
import { Prober, streamCheck, type ProbeSpec } from '../../../src/server/probes/prober.js';
import { selfSigned, uniqueName } from '../../helpers.js';
import { apiOf } from '../../metrics/api.js';

const quiet = () => {};

/** Waits, bounded, until `ok()`; each turn lets the prober's timers and promises run. */
async function until(ok: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  for (let i = 0; i < 10_000 && Date.now() < end; i++) {
    if (ok()) return true;
    await new Promise((r) => setTimeout(r, 5));
  }
  return ok();
}

function setup(t: Test, u: Partial<UpstreamConfig> = {}) {
  const upstream: UpstreamConfig = { name: 'u', peers: [{ server: '127.0.0.1:1' }, { server: '127.0.0.1:2' }], probes: true, ...u };
  const status = Status.create({ http: { upstreams: [upstream] } }, { workers: 2, writer: true, instance: uniqueName('prober') });
  t.teardown(() => status.remove());
  const entry = () => status.catalog().http!.upstreams![0];
  const state = (port: number) => {
    const p = peerSet(status, entry()).peers.find((x) => x.server === `127.0.0.1:${port}`)!;
    return peerHandles(status, entry(), p.id, 'http').cells.load(PeerCell.state);
  };
  const setState = (port: number, s: number) => {
    const p = peerSet(status, entry()).peers.find((x) => x.server === `127.0.0.1:${port}`)!;
    peerHandles(status, entry(), p.id, 'http').cells.store(PeerCell.state, s);
  };
  /** What each port's check answers, and how many times it was asked. */
  const answers = new Map<number, boolean>([[1, true], [2, true]]);
  const asked = new Map<number, number>([[1, 0], [2, 0]]);
  const spec = (over: Partial<ProbeSpec> = {}): ProbeSpec => ({
    name: 'p',
    interval: 10,
    essential: false,
    persistent: false,
    fails: 1,
    passes: 1,
    mode: 'always',
    check: async (_host, port) => {
      asked.set(port, (asked.get(port) ?? 0) + 1);
      return answers.get(port) ?? false;
    },
    ...over,
  });
  const probes = (over: Partial<ProbeSpec> = {}, reload = false) => {
    const p = new Prober(status, [{ protocol: 'http', name: 'u', probes: [spec(over)] }], quiet, reload);
    t.teardown(() => p.stop());
    return p;
  };
  return { status, state, setState, answers, asked, probes, entry };
}

t.test('fails and passes in a row, counted in health.probes', async (t) => {
  const s = setup(t);
  s.answers.set(2, false);
  s.probes({ fails: 3, passes: 2 });
  t.ok(await until(() => (s.asked.get(2) ?? 0) >= 1), 'probed');
  t.ok(await until(() => s.state(2) === PeerState.unhealthy), 'unhealthy after 3 failures');
  t.ok((s.asked.get(2) ?? 0) >= 3, 'not before the third');
  t.equal(s.state(1), PeerState.up, 'the passing peer stays up');
  s.answers.set(2, true);
  const before = s.asked.get(2)!;
  t.ok(await until(() => s.state(2) === PeerState.up), 'up again');
  t.ok(s.asked.get(2)! - before >= 2, 'after two passes');
  const probes = apiOf(s.status).get('/status/http/upstreams/u/peers/127.0.0.1:2').body.health.probes;
  t.equal(probes.count, s.asked.get(2), 'every probe counted');
  t.ok(probes.fails >= 3 && probes.fails < probes.count, `the failed ones too (${probes.fails} of ${probes.count})`);
  t.ok(Date.parse(probes.last) > Date.now() - 5000, 'and when the last was');
});

t.test('essential: checking until a pass; a failure is unhealthy', async (t) => {
  const s = setup(t, { essential: true });
  t.equal(s.state(1), PeerState.checking, 'peers start checking, before any probe');
  t.equal(s.state(2), PeerState.checking);
  s.answers.set(2, false);
  s.probes({ essential: true });
  t.ok(await until(() => s.state(1) === PeerState.up), 'a pass: up');
  t.ok(await until(() => s.state(2) === PeerState.unhealthy), 'a failure: unhealthy');
});

t.test('the balancers\' states are theirs: a pass does not end `unavailable`', async (t) => {
  const s = setup(t);
  s.setState(1, PeerState.unavailable);
  s.probes();
  const before = s.asked.get(1)!;
  t.ok(await until(() => s.asked.get(1)! >= before + 3), 'probed three times');
  t.equal(s.state(1), PeerState.unavailable, 'still unavailable: fail_timeout decides');
  s.answers.set(1, false);
  t.ok(await until(() => s.state(1) === PeerState.unhealthy), 'a failed probe makes it unhealthy all the same');
});

t.test('mode=onfail probes only peers that are not up; mode=idle skips peers just used', async (t) => {
  const s = setup(t);
  s.setState(2, PeerState.unhealthy);
  s.probes({ mode: 'onfail', name: 'onfail' });
  t.ok(await until(() => s.state(2) === PeerState.up), 'the unhealthy peer was probed and passed');
  const one = s.asked.get(1)!;
  t.equal(one, 0, 'the up peer was never probed');

  const idle = setup(t);
  const used = peerRecorder(idle.status, 'http', 'u', '127.0.0.1:1');
  // Peer 1 takes a request every few ms: never idle for an interval.
  used.selected();
  const busy = setInterval(() => used.selected(), 5);
  t.teardown(() => clearInterval(busy));
  const p = idle.probes({ mode: 'idle', interval: 100 });
  t.ok(await until(() => idle.asked.get(2)! >= 3), 'the idle peer is probed');
  t.equal(idle.asked.get(1), 0, 'the busy one is not');
  p.stop();
});

t.test('reload: essential peers are checked again, unless persistent and up', async (t) => {
  const s = setup(t, { essential: true });
  s.probes({ essential: true });
  t.ok(await until(() => s.state(1) === PeerState.up && s.state(2) === PeerState.up), 'both up');
  s.setState(2, PeerState.unhealthy);
  s.answers.set(1, false);
  s.answers.set(2, false);
  // A reload with persistent: the up peer stays up, the other is checked again.
  s.probes({ essential: true, persistent: true, interval: 60_000, name: 'again' }, true);
  t.equal(s.state(2), PeerState.checking, 'a peer that was not up starts checking');
  t.equal(s.state(1), PeerState.up, 'persistent: an up peer stays up');
  s.probes({ essential: true, interval: 60_000, name: 'third' }, true);
  t.equal(s.state(1), PeerState.checking, 'without persistent every peer is checked again');
});

t.test('stream checks: TCP connect, send and answer; UDP answer', async (t) => {
  const { createServer } = await import('node:net');
  const dgram = await import('node:dgram');
  const { freePorts } = await import('../zonal.js');
  const [closed] = await freePorts(1);
  const echo = createServer((c) => c.on('data', (d) => c.write(d)).on('error', () => {}));
  const silent = createServer((c) => c.on('error', () => {}).end());
  await Promise.all([echo, silent].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
  // Not waited for: a server closes once its last connection has.
  t.teardown(() => void [echo, silent].forEach((s) => s.close()));
  const port = (s: typeof echo) => (s.address() as { port: number }).port;
  const udpEcho = dgram.createSocket('udp4');
  udpEcho.on('message', (m, r) => udpEcho.send(m, r.port, r.address));
  await new Promise<void>((r) => udpEcho.bind(0, '127.0.0.1', r));
  const udpMute = dgram.createSocket('udp4');
  await new Promise<void>((r) => udpMute.bind(0, '127.0.0.1', r));
  t.teardown(() => void [udpEcho, udpMute].forEach((s) => s.close()));

  const connect = streamCheck({ maxResponse: 256, timeout: 1000 });
  t.equal(await connect('127.0.0.1', port(echo)), true, 'connected: passes');
  t.equal(await connect('127.0.0.1', closed), false, 'refused: fails');
  const ping = streamCheck({ send: Buffer.from('ping\r\n'), maxResponse: 256, timeout: 500 });
  t.equal(await ping('127.0.0.1', port(echo)), true, 'an answer to send=: passes');
  t.equal(await ping('127.0.0.1', port(silent)), false, 'closed without an answer: fails');
  const small = streamCheck({ send: Buffer.alloc(100, 1), maxResponse: 10, timeout: 500 });
  t.equal(await small('127.0.0.1', port(echo)), false, 'more answer than max_response: fails');
  const udp = streamCheck({ udp: true, send: Buffer.from('q'), maxResponse: 256, timeout: 300 });
  t.equal(await udp('127.0.0.1', udpEcho.address().port), true, 'UDP answered: passes');
  t.equal(await udp('127.0.0.1', udpMute.address().port), false, 'UDP unanswered within the time-out: fails');
});

t.test('test=: conditions on the response, through the variable evaluator', async (t) => {
  const { compileTest } = await import('../../../src/server/probes/test.js');
  const ok = (text: string, status: number, headers: Record<string, string> = {}) => {
    const c = compileTest(text);
    if (c.error !== undefined) throw new Error(c.error);
    return c.value({ status, headers });
  };
  t.equal(ok('$upstream_status = 200', 200), true);
  t.equal(ok('$upstream_status = 200', 503), false);
  t.equal(ok('$upstream_status != 200', 503), true);
  t.equal(ok('$upstream_status ~ ^2', 204), true);
  t.equal(ok('$upstream_status !~ ^5', 502), false);
  t.equal(ok('$upstream_http_x_ready', 200, { 'x-ready': '1' }), true, 'a bare text: passes unless empty or "0"');
  t.equal(ok('$upstream_http_x_ready', 200, { 'x-ready': '0' }), false);
  t.equal(ok('$upstream_http_x_ready', 200), false, 'an absent header is empty');
  t.equal(ok('${upstream_status}-ok = 200-ok', 200), true, 'text around variables');
  t.match(compileTest('$remote_addr = 1'), { error: /unknown "remote_addr" variable/ }, 'no client in a probe');
  t.match(compileTest('$upstream_status ~ ('), { error: /invalid regular expression/ });
});

t.test('stream checks with test=: the answer as $upstream_probe_response, judged as it comes; TLS', async (t) => {
  const { createServer } = await import('node:net');
  const tls = await import('node:tls');
  const { compileTest } = await import('../../../src/server/probes/test.js');
  const test = (text: string) => {
    const c = compileTest(text, 'stream');
    if (c.error !== undefined) throw new Error(c.error);
    return c.value;
  };
  // PONG in two pieces, the connection left open: a redis that keeps its client.
  const split = createServer((c) => {
    c.on('error', () => {});
    c.once('data', () => {
      c.write('+PO');
      setTimeout(() => c.write('NG\r\n'), 50);
    });
  });
  const err = createServer((c) => c.on('error', () => {}).once('data', () => c.end('-ERR unknown\r\n')));
  const banner = createServer((c) => c.on('error', () => {}).write('220 ready\r\n'));
  const secure = tls.createServer(selfSigned('probe.test'), (c) => c.on('error', () => {}).on('data', (d) => c.write(d)));
  const servers = [split, err, banner, secure];
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
  t.teardown(() => void servers.forEach((s) => s.close()));
  const port = (s: (typeof servers)[number]) => (s.address() as { port: number }).port;

  const ping = streamCheck({ send: Buffer.from('PING\r\n'), maxResponse: 256, timeout: 2000, test: test('$upstream_probe_response ~ ^\\+PONG') });
  const started = Date.now();
  t.equal(await ping('127.0.0.1', port(split)), true, 'passes once the answer so far passes, the connection still open');
  t.ok(Date.now() - started < 1500, 'without waiting for the time-out');
  const failedAt = Date.now();
  t.equal(await ping('127.0.0.1', port(err)), false, 'an answer that fails the test, then the end: fails');
  t.ok(Date.now() - failedAt < 1500, 'at the end, not at the time-out');
  const greeting = streamCheck({ maxResponse: 256, timeout: 2000, test: test('$upstream_probe_response ~ ^220') });
  t.equal(await greeting('127.0.0.1', port(banner)), true, 'without send=, a test reads what the peer says first');
  const wrong = streamCheck({ maxResponse: 256, timeout: 300, test: test('$upstream_probe_response ~ ^554') });
  t.equal(await wrong('127.0.0.1', port(banner)), false, 'a greeting that never passes: fails at the time-out');
  const tiny = streamCheck({ send: Buffer.from('PING\r\n'), maxResponse: 4, timeout: 2000, test: test('$upstream_probe_response ~ PONG') });
  t.equal(await tiny('127.0.0.1', port(split)), false, 'more answer than max_response without a pass: fails');

  const overTls = streamCheck({ tls: true, send: Buffer.from('hello'), maxResponse: 256, timeout: 2000, test: test('$upstream_probe_response = hello') });
  t.equal(await overTls('127.0.0.1', port(secure)), true, 'tls: the probe talks TLS to the peer (proxy_ssl on)');
  const plain = streamCheck({ send: Buffer.from('hello'), maxResponse: 256, timeout: 500, test: test('$upstream_probe_response = hello') });
  t.equal(await plain('127.0.0.1', port(secure)), false, 'plain bytes to a TLS peer: fails');
});
