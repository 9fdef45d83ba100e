// The embedding API of the limits: status.limitReq(zone).take(key) and
// status.limitConn(zone).acquire(key) (or hold(key) and release(key)), nginx's semantics,
// counted in the limit families.
import t, { type Test } from 'tap';
import { HOLD_NONE, HOLD_REFUSED, HOLD_TAKEN, limitRequest, repairLimitSlot } from '../../src/metrics/limits.js';
import { Status } from '../../src/metrics/status.js';
import { uniqueName } from '../helpers.js';
import { apiOf } from './api.js';

function instance(t: Test) {
  const status = Status.create(
    {
      http: {
        limitReqs: [{ name: 'perip', rate: 10 }, { name: 'slow', rate: 1 / 60 }, { name: 'norate' }],
        limitConns: [{ name: 'conns', zoneSize: 64 * 1024 }],
      },
      stream: { limitConns: [{ name: 'conns' }] },
    },
    { workers: 2, writer: true, instance: uniqueName('limiters') },
  );
  t.teardown(() => status.remove());
  return { status, api: apiOf(status) };
}

t.test('limitReq: passed, rejected, burst with delays, nodelay, delay=, dry run, skipped', async (t) => {
  const { status, api } = instance(t);
  const plain = status.limitReq('perip');
  t.equal(plain.rate, 10_000, '10 r/s in milli-requests');
  t.equal(status.limitReq('slow').rate, 16, '1r/m is 16 milli-requests per second, as nginx rounds it');
  t.same(plain.take('a'), { result: 'passed', delay: 0 });
  t.same(plain.take('a'), { result: 'rejected', delay: 0 }, 'no burst: the next one at once is over');

  const burst = status.limitReq('perip', { burst: 3 });
  t.same(burst.take('b'), { result: 'passed', delay: 0 });
  const delays = [1, 2, 3].map(() => burst.take('b'));
  t.same(delays.map((d) => d.result), ['delayed', 'delayed', 'delayed']);
  // 1000, 2000, 3000 milli-requests over: 100, 200, 300 ms, less what leaked meanwhile.
  t.ok(delays.every((d, i) => d.delay <= (i + 1) * 100 && d.delay > (i + 1) * 100 - 20), `delays ${delays.map((d) => d.delay)}`);
  t.equal(burst.take('b').result, 'rejected', 'past the burst');

  const nodelay = status.limitReq('perip', { burst: 2, nodelay: true });
  t.same([1, 2, 3, 4].map(() => nodelay.take('c').result), ['passed', 'passed', 'passed', 'rejected'], 'nodelay passes the burst at once');

  const partly = status.limitReq('perip', { burst: 3, delay: 1 });
  t.same([1, 2, 3, 4, 5].map(() => partly.take('d').result), ['passed', 'passed', 'delayed', 'delayed', 'rejected'], 'delay=1: one of the burst at once');

  const dry = status.limitReq('perip', { dryRun: true });
  t.same([1, 2].map(() => dry.take('e')), [{ result: 'passed', delay: 0 }, { result: 'passed', delay: 0 }], 'dry run passes');

  t.equal(plain.take('').result, 'skipped', 'an empty key');
  t.equal(plain.take('x'.repeat(65536)).result, 'skipped', 'a key over 65535 bytes');
  t.equal(plain.take(Buffer.from([10, 0, 0, 1])).result, 'passed', 'a binary key');

  t.same(api.get('/status/http/limit_reqs/perip').body, {
    passed: 1 + 1 + 3 + 2 + 1 + 1, // a, b, nodelay c, partly d, dry e (first), binary
    skipped: 2,
    delayed: 3 + 2,
    rejected: 1 + 1 + 1 + 1 + 1, // a, b, c, d, dry e (counted, passed)
    exhausted: 0,
  });
  t.throws(() => status.limitReq('norate'), /has no rate/);
  t.throws(() => status.limitReq('nope'), /no request limit zone "nope"/);
  t.throws(() => status.limitReq('perip', { burst: -1 }), /burst must be/);
});

t.test('several limits on one request: nginx order, the longest delay, the first refusal', async (t) => {
  const { status, api } = instance(t);
  const a = status.limitReq('perip', { burst: 5 });
  const b = status.limitReq('slow', { burst: 1, nodelay: true });
  const decide = (k: string) => limitRequest([{ limiter: a, key: k }, { limiter: b, key: k }]);
  t.same(decide('k'), { result: 'passed', delay: 0 });
  const second = decide('k');
  t.equal(second.result, 'delayed', 'perip delays the second (slow passes it at once with nodelay)');
  t.ok(second.delay > 80 && second.delay <= 100);
  const charged = a.table.peek('k');
  t.ok(charged > 900 && charged <= 1000, `perip holds the second request, less what leaked since: ${charged}`);
  t.same(decide('k'), { result: 'rejected', delay: 0 }, 'slow has no more room: rejected, perip not charged');
  t.equal(a.table.peek('k'), charged, 'the refused request charged nothing in perip');
  t.same(api.get('/status/http/limit_reqs/slow').body, { passed: 2, skipped: 0, delayed: 0, rejected: 1, exhausted: 0 });
  t.same(api.get('/status/http/limit_reqs/perip').body, { passed: 2, skipped: 0, delayed: 1, rejected: 0, exhausted: 0 });
  t.equal(limitRequest([{ limiter: a, key: '' }, { limiter: b, key: 'z' }]).result, 'passed', 'a skipped key does not stop the others');
});

t.test('limitConn: acquire and release, rejected at the limit, skipped, dry run, slot repair', async (t) => {
  const { status, api } = instance(t);
  const c = status.limitConn('conns', { limit: 2 });
  const r1 = c.acquire('k');
  const r2 = c.acquire('k');
  t.type(r1, 'function');
  t.equal(c.acquire('k'), null, 'a third while two are held');
  r1!();
  r1!();
  t.equal(c.table.peek('k'), 1, 'a release function gives back once however often it is called');
  const r3 = c.acquire('k');
  t.type(r3, 'function');
  t.type(c.acquire(''), 'function', 'an empty key passes');
  t.type(c.acquire('x'.repeat(256)), 'function', 'a key over 255 bytes passes');
  const dry = status.limitConn('conns', { limit: 1, dryRun: true });
  t.type(dry.acquire('k'), 'function', 'dry run: over the limit, but passed');
  t.same(api.get('/status/http/limit_conns/conns').body, { passed: 3, skipped: 2, rejected: 2, exhausted: 0 });

  const s = status.limitConn('conns', { limit: 1, stream: true });
  t.type(s.acquire('k'), 'function', 'a stream limit of the same name has its own keys');
  t.same(api.get('/status/stream/limit_conns/conns').body, { passed: 1, skipped: 0, rejected: 0, exhausted: 0 });

  // This process dies without releasing r2 and r3: its slot is repaired.
  t.equal(repairLimitSlot(status, status.zoneNamed('conns').workerSlot()), 2, 'the HTTP key and the stream key');
  t.equal(c.table.peek('k'), 0, 'nothing held any more');
  r2!();
  t.equal(c.table.peek('k'), 0, 'a release after the repair changes nothing');
  t.throws(() => status.limitConn('conns', { limit: 0 }), /from 1 to 65535/);

  // Exhausted: a small zone with every key held.
  let exhausted = 0;
  const many = status.limitConn('conns', { limit: 1 });
  for (let i = 0; i < 5000 && !exhausted; i++) if (many.acquire(`key-${i}`) === null) exhausted++;
  t.equal(exhausted, 1);
  t.equal(api.get('/status/http/limit_conns/conns/exhausted').body, 1);
  t.ok(api.get('/status/slabs/conns').body.pages.free <= 1, 'the zone is full, as /status/slabs shows');
});

t.test('limitConn: hold() and release(key), acquire() without its function, decide and count alike', async (t) => {
  const { status, api } = instance(t);
  const c = status.limitConn('conns', { limit: 2 });
  const key = Buffer.from([127, 0, 0, 1]);
  t.equal(c.hold(key), HOLD_TAKEN);
  t.equal(c.hold('\x7f\x00\x00\x01'), HOLD_TAKEN, 'a string key of the same bytes is the same key');
  t.equal(c.hold(key), HOLD_REFUSED, 'a third while two are held');
  t.equal(c.table.peek(key), 2);
  c.release(key);
  t.equal(c.table.peek(key), 1, 'release(key) gives back one');
  t.equal(c.hold(key), HOLD_TAKEN, 'and the key may take it again');
  t.equal(c.hold(''), HOLD_NONE, 'an empty key passes holding nothing');
  t.equal(c.hold('x'.repeat(256)), HOLD_NONE, 'so does a key over 255 bytes');
  const dry = status.limitConn('conns', { limit: 1, dryRun: true });
  t.equal(dry.hold(key), HOLD_NONE, 'dry run: over the limit, passed holding nothing');
  t.equal(c.table.peek(key), 2, 'a dry run refusal takes nothing');
  c.release(key);
  c.release(key);
  t.equal(c.table.peek(key), 0, 'both given back');
  // Each call counted as acquire() counts it: 3 passed, 2 skipped, 2 rejected (one dry).
  t.same(api.get('/status/http/limit_conns/conns').body, { passed: 3, skipped: 2, rejected: 2, exhausted: 0 });
});
