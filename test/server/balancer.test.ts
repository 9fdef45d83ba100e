// The upstream balancer: each method's choice, max_conns, backup and down, passive
// health and slow start with an injected clock, live set changes made through /config,
// and the repair of a killed worker's connections. Two Balancer instances over one
// status stand for two workers: they share every cell, and keep their own round robin.
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { bodyText, createApi } from '../../src/api/index.js';
import { INSTANCE_ENV, WORKER_SLOT_ENV } from '../../src/engine/index.js';
import type { PeerConfig, UpstreamConfig } from '../../src/metrics/catalog.js';
import { peerSet, RETIRE_MS } from '../../src/metrics/peers.js';
import { Status } from '../../src/metrics/status.js';
import { changePeers, PeerCell, peerHandles, PeerState } from '../../src/metrics/upstreams.js';
import type { BalancingMethod } from '../../src/server/config/model.js';
import { Balancer, repairSlot, type Chosen, type NoPeer } from '../../src/server/upstream/balancer.js';
import { crc32, ipHashBytes } from '../../src/server/upstream/hash.js';
import { forkNode, uniqueName } from '../helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const RR: BalancingMethod = { kind: 'round_robin' };
const CHILD = 'ZONAL_BALANCER_TEST_CHILD';

/** Deterministic numbers in [0, 1) (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const peers = (...ports: number[]): PeerConfig[] => ports.map((p) => ({ server: `127.0.0.1:${p}` }));

function setup(t: Test, upstreams: UpstreamConfig[]) {
  const status = Status.create({ http: { upstreams } }, { workers: 4, writer: true, instance: uniqueName('balancer') });
  t.teardown(() => status.remove());
  const api = createApi({ status });
  const call = (method: string, path: string, body?: unknown) => {
    const r = api({ method, path, query: '', address: '127.0.0.1', contentType: 'application/json', body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)) })!;
    const text = bodyText(r);
    return { status: r.status, body: text ? (JSON.parse(text) as Any) : undefined };
  };
  const get = (path: string): Any => call('GET', path).body;
  const upstream = (name = upstreams[0].name): UpstreamConfig => status.catalog().http!.upstreams!.find((u) => u.name === name)!;
  let clock = 1_700_000_000_000;
  const time = {
    now: () => clock,
    advance: (ms: number) => void (clock += ms),
  };
  const balancer = (method: BalancingMethod = RR, name?: string, random?: () => number) => new Balancer(status, upstream(name), method, { now: time.now, random });
  /** The shared cells of the peer at `address`. */
  const cells = (address: string, name?: string) => {
    const u = upstream(name);
    const b = new Balancer(status, u, RR);
    const p = b.peers.find((x) => x.address === address)!;
    return peerHandles(status, u, p.id).cells;
  };
  return { status, call, get, upstream, time, balancer, cells };
}

function chosen(t: Test, r: Chosen | NoPeer, message?: string): Chosen {
  if (typeof r === 'string') {
    t.fail(`${message ?? 'pick'}: got "${r}"`);
    throw new Error(r);
  }
  return r;
}

/** Picks n times (each released at once, successfully) and counts by address. */
function shares(b: Balancer, n: number, key?: (i: number) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const r = b.pick(key?.(i));
    if (typeof r === 'string') throw new Error(`pick ${i}: ${r}`);
    counts.set(r.address, (counts.get(r.address) ?? 0) + 1);
    b.release(r, false);
  }
  return counts;
}

const A = '127.0.0.1:8081';
const B = '127.0.0.1:8082';
const C = '127.0.0.1:8083';
const D = '127.0.0.1:8084';
const E = '127.0.0.1:8085';

async function tests() {
  const t = (await import('tap')).default;

  t.test('round robin: exact smooth weighted shares per worker', async (t) => {
    const { balancer, get } = setup(t, [{ name: 'u', peers: [{ server: A, weight: 5 }, { server: B, weight: 3 }, { server: C, weight: 2 }] }]);
    const one = balancer();
    const sequence: string[] = [];
    for (let i = 0; i < 10_000; i++) {
      const c = chosen(t, one.pick());
      sequence.push(c.address);
      one.release(c, false);
    }
    let exact = true;
    for (let w = 0; w < 10_000; w += 10) {
      const window = sequence.slice(w, w + 10);
      const n = (a: string) => window.filter((x) => x === a).length;
      if (n(A) !== 5 || n(B) !== 3 || n(C) !== 2) exact = false;
    }
    t.ok(exact, 'every period of 10 picks holds exactly 5, 3 and 2');
    t.same(sequence.slice(0, 10), [A, B, C, A, A, B, A, C, B, A], "nginx's smooth order: no peer twice in a row more than its share needs");
    t.equal(get(`/status/http/upstreams/u/peers/${A}/selected/total`), 5000, 'each pick is counted as selected');
    t.equal(get(`/status/http/upstreams/u/peers/${A}/selected/current`), 0, 'and released');

    // Two workers interleaved (one picks twice as often): each keeps its own exact ratio.
    const w1 = balancer();
    const w2 = balancer();
    const combined = new Map<string, number>();
    for (let i = 0; i < 9_000; i++) {
      const b = i % 3 === 0 ? w2 : w1;
      const c = chosen(t, b.pick());
      combined.set(c.address, (combined.get(c.address) ?? 0) + 1);
      b.release(c, false);
    }
    for (const [address, share] of [[A, 0.5], [B, 0.3], [C, 0.2]] as const)
      t.ok(Math.abs(combined.get(address)! / 9000 - share) <= 0.02, `${address}: ${combined.get(address)} of 9000 within 2% of ${share}`);
    t.equal(combined.get(A), 4500, 'and in fact exactly, both having done whole periods');
  });

  t.test('down never; backup only when no primary can be chosen', async (t) => {
    const { balancer, time, get } = setup(t, [
      {
        name: 'u',
        peers: [
          { server: A, down: true },
          { server: B, maxFails: 1, failTimeout: 10 },
          { server: C, maxConns: 1 },
          { server: D, backup: true },
        ],
      },
    ]);
    const b = balancer();
    const seen = shares(b, 100);
    t.same([...seen.keys()].sort(), [B, C], 'the down peer and the backup are never chosen while primaries are');
    t.equal(seen.get(B), 50);
    const c = chosen(t, b.pick(undefined, new Set([b.peers.find((p) => p.address === B)!.id])));
    t.equal(c.address, C, 'tried peers are skipped');
    // C is at max_conns now; B fails and becomes unavailable.
    const onB = chosen(t, b.pick());
    t.equal(onB.address, B, 'C is at max_conns: B');
    b.release(onB, true);
    t.equal(get(`/status/http/upstreams/u/peers/${B}/state`), 'unavailable');
    const backup = chosen(t, b.pick());
    t.equal(backup.address, D, 'B unavailable and C busy: the backup');
    t.equal(chosen(t, b.pick()).address, D, 'again');
    b.release(c, false);
    t.equal(chosen(t, b.pick()).address, C, 'C has room again: back to the primary');
    time.advance(10_000);
    const check = chosen(t, b.pick(undefined, new Set([c.id])));
    t.equal(check.address, B, 'after fail_timeout, B is checked before the backup is used');
    b.release(check, false);
    t.equal(get(`/status/http/upstreams/u/peers/${B}/state`), 'up');
    t.equal(get(`/status/http/upstreams/u/peers/${A}/selected/total`), 0, 'the down peer was never selected');
    t.equal(get(`/status/http/upstreams/u/peers/${A}/state`), 'down');
  });

  t.test('max_conns holds across workers; busy; a release frees a slot', async (t) => {
    const { balancer, cells, get } = setup(t, [{ name: 'u', peers: [{ server: A, maxConns: 2 }, { server: B, maxConns: 1 }, { server: C, backup: true, maxConns: 1 }] }]);
    const w1 = balancer();
    const w2 = balancer();
    let released = 0;
    w1.onRelease(() => released++);
    const held: Array<[Balancer, Chosen]> = [];
    for (const b of [w1, w2, w1]) held.push([b, chosen(t, b.pick())]);
    t.same(held.map(([, c]) => c.address).sort(), [A, A, B], 'two on A, one on B');
    const backup = chosen(t, w2.pick());
    t.equal(backup.address, C, 'every primary at max_conns: the backup');
    t.equal(w1.pick(), 'busy', 'all at max_conns: busy');
    t.equal(w2.pick(), 'busy', 'for the other worker too');
    t.equal(cells(A).load(PeerCell.conns), 2, 'the shared count is at the limit, not past it');
    t.equal(get(`/status/http/upstreams/u/peers/${A}/selected/current`), 2);
    const [b0, c0] = held.shift()!;
    b0.release(c0, false);
    t.equal(released, b0 === w1 ? 1 : 0, 'release listeners hear of it');
    const again = chosen(t, w2.pick());
    t.equal(again.address, c0.address, 'the freed slot is taken by the other worker');
    held.push([w2, again]);

    // Many workers' operations in a random order: no peer ever past its max_conns.
    const random = prng(7);
    const limits = new Map([[A, 2], [B, 1], [C, 1]]);
    let busy = 0;
    let over = 0;
    held.push([w2, backup]);
    for (let i = 0; i < 5000; i++) {
      if (held.length > 0 && random() < 0.45) {
        const [b, c] = held.splice(Math.floor(random() * held.length), 1)[0];
        b.release(c, false);
      } else {
        const b = random() < 0.5 ? w1 : w2;
        const r = b.pick();
        if (r === 'busy') busy++;
        else held.push([b, chosen(t, r)]);
      }
      for (const [address, limit] of limits) if (cells(address).load(PeerCell.conns) > limit) over++;
      const heldNow = held.length;
      if (heldNow > 4) over++;
    }
    t.equal(over, 0, 'never past max_conns in 5000 random operations');
    t.ok(busy > 0, `and some picks found every peer busy (${busy})`);
    for (const [b, c] of held.splice(0)) b.release(c, false);
    for (const address of limits.keys()) t.equal(cells(address).load(PeerCell.conns), 0, `${address}: every slot given back`);
    t.not(w1.pick(), 'busy');
  });

  t.test('least_conn: the fewest connections per weight across workers', async (t) => {
    const { balancer, cells } = setup(t, [{ name: 'u', method: 'least_conn', peers: [{ server: A }, { server: B }, { server: C, weight: 2 }] }]);
    const LC: BalancingMethod = { kind: 'least_conn' };
    const w1 = balancer(LC);
    const w2 = balancer(LC);
    const first = chosen(t, w1.pick());
    t.equal(first.address, C, 'all idle: the tie goes by round robin, the heaviest first');
    const second = chosen(t, w2.pick());
    t.not(second.address, C, "the other worker sees C's connection: 1/2 against 0");
    const third = chosen(t, w1.pick());
    t.not(third.address, C);
    t.not(third.address, second.address, 'and the one the other worker took');
    const weights = new Map([[A, 1], [B, 1], [C, 2]]);
    const random = prng(3);
    const held: Array<[Balancer, Chosen]> = [[w1, first], [w2, second], [w1, third]];
    let wrong = 0;
    for (let i = 0; i < 2000; i++) {
      if (held.length > 0 && random() < 0.4) {
        const [b, c] = held.splice(Math.floor(random() * held.length), 1)[0];
        b.release(c, false);
        continue;
      }
      const load = new Map([...weights].map(([a, w]) => [a, cells(a).load(PeerCell.conns) / w]));
      const least = Math.min(...load.values());
      const b = random() < 0.5 ? w1 : w2;
      const c = chosen(t, b.pick());
      if (load.get(c.address) !== least) wrong++;
      held.push([b, c]);
    }
    t.equal(wrong, 0, 'every pick of 2000, by either worker, took a least loaded peer');
    for (const [b, c] of held) b.release(c, false);
  });

  t.test('random: weighted shares; random two: the less loaded of two', async (t) => {
    const { balancer } = setup(t, [
      { name: 'w', method: 'random', peers: [{ server: A, weight: 5 }, { server: B, weight: 3 }, { server: C, weight: 2 }] },
      { name: 'two', method: 'random', peers: peers(8091, 8092, 8093) },
    ]);
    const counts = shares(balancer({ kind: 'random', two: false }, 'w', prng(11)), 10_000);
    for (const [address, share] of [[A, 0.5], [B, 0.3], [C, 0.2]] as const)
      t.ok(Math.abs(counts.get(address)! / 10_000 - share) < 0.02, `${address}: ${counts.get(address)} of 10000, near ${share}`);

    const own = shares(balancer({ kind: 'random', two: false }, 'w'), 10_000);
    for (const [address, share] of [[A, 0.5], [B, 0.3], [C, 0.2]] as const)
      t.ok(Math.abs(own.get(address)! / 10_000 - share) < 0.03, `its own generator: ${address} ${own.get(address)} of 10000`);

    const X = '127.0.0.1:8091';
    const Y = '127.0.0.1:8092';
    const Z = '127.0.0.1:8093';
    const TWO: BalancingMethod = { kind: 'random', two: true };
    const loader = balancer(TWO, 'two');
    const ids = new Map(loader.peers.map((p) => [p.address, p.id]));
    const onX = [0, 1, 2].map(() => chosen(t, loader.pick(undefined, new Set([ids.get(Y)!, ids.get(Z)!]))));
    t.same(onX.map((c) => c.address), [X, X, X], 'one worker holds three requests on X');
    let script = [0.1, 0.6];
    const scripted = balancer(TWO, 'two', () => script.shift()!);
    const zPick = chosen(t, scripted.pick());
    t.equal(zPick.address, Z, 'X drawn first, Z second: the other worker takes Z, which has no connections');
    script = [0.5, 0.1];
    const yPick = chosen(t, scripted.pick());
    t.equal(yPick.address, Y, 'Y drawn first, X second: Y');
    scripted.release(zPick, false);
    scripted.release(yPick, false);
    const spread = shares(balancer(TWO, 'two', prng(5)), 1000);
    t.equal(spread.get(X) ?? 0, 0, 'X, with three connections, loses every draw it is in');
    t.ok(spread.get(Y)! > 400 && spread.get(Z)! > 400, `Y ${spread.get(Y)} and Z ${spread.get(Z)} share the rest`);
    for (const c of onX) loader.release(c, false);
  });

  t.test('passive health: successes between failures do not end fail_timeout, as nginx counts them', async (t) => {
    const { balancer, time, get } = setup(t, [{ name: 'u', peers: [{ server: A, maxFails: 3, failTimeout: 10 }, { server: B }] }]);
    const w = balancer();
    const notB = new Set([w.peers.find((p) => p.address === B)!.id]);
    const onA = () => chosen(t, w.pick(undefined, notB));
    const path = `/status/http/upstreams/u/peers/${A}`;
    // nginx's upstream.t: every third request to a peer fails; the third failure, within
    // fail_timeout of the first, makes it unavailable, the six successes between them
    // notwithstanding.
    for (let i = 1; i <= 9; i++) {
      t.equal(get(`${path}/state`), 'up', `up before request ${i}`);
      w.release(onA(), i % 3 === 0);
      time.advance(100);
    }
    t.equal(get(`${path}/state`), 'unavailable', 'three failures within fail_timeout, successes between them');
  });

  t.test('passive health: a stream check succeeds once connected, not when its session ends', async (t) => {
    // The balancer is the same for http and stream: the stream plane calls connected().
    const { balancer, time, get } = setup(t, [{ name: 'u', peers: [{ server: A, failTimeout: 1 }, { server: B, backup: true }] }]);
    const w = balancer();
    const path = `/status/http/upstreams/u/peers/${A}`;
    w.release(chosen(t, w.pick()), true);
    t.equal(get(`${path}/state`), 'unavailable', 'one failure (max_fails 1)');
    time.advance(1001);
    const check = chosen(t, w.pick());
    t.equal(check.address, A, 'after fail_timeout, a check goes to it');
    t.equal(chosen(t, w.pick()).address, B, 'one check at a time: the next goes to the backup');
    w.connected(check);
    t.equal(get(`${path}/state`), 'up', 'the check connected: the peer is up');
    const next = chosen(t, w.pick());
    t.equal(next.address, A, 'and takes the sessions that follow while the check goes on');
    w.release(next, false);
    w.release(check, false);
    t.equal(get(`${path}/state`), 'up', 'the check ends later, changing nothing');
  });

  t.test('passive health: max_fails in fail_timeout, one checking request, recovery', async (t) => {
    const { balancer, time, get, cells } = setup(t, [{ name: 'u', peers: [{ server: A, maxFails: 2, failTimeout: 10 }, { server: B }] }]);
    const w1 = balancer();
    const w2 = balancer();
    const ids = new Map(w1.peers.map((p) => [p.address, p.id]));
    const notB = new Set([ids.get(B)!]);
    const onA = (b: Balancer) => b.pick(undefined, notB);
    const path = `/status/http/upstreams/u/peers/${A}`;

    // Failures further apart than fail_timeout never add up.
    const early = chosen(t, onA(w1));
    w1.release(early, true);
    time.advance(10_001);
    w2.release(chosen(t, onA(w2)), true);
    t.equal(get(`${path}/state`), 'up', 'two failures 10.001 s apart: still up');

    // Two failures within fail_timeout, one in each worker, a third in flight.
    const inFlight = chosen(t, onA(w1));
    time.advance(1000);
    w2.release(chosen(t, onA(w2)), true);
    t.equal(cells(A).load(PeerCell.state), PeerState.unavailable, 'max_fails reached: unavailable in the shared cell');
    t.equal(get(`${path}/state`), 'unavailable');
    w1.release(inFlight, true);
    t.equal(get(`${path}/health/unavailable`), 1, 'counted once though both workers saw failures past max_fails');
    t.equal(get(`${path}/health/fails`), 4, 'every failed attempt is counted');
    const downAt = time.now();
    t.equal(onA(w1), 'unavailable', 'no peer but the unavailable one: unavailable');
    t.equal(onA(w2), 'unavailable');
    const toB = chosen(t, w2.pick());
    t.equal(toB.address, B, 'other picks go to B');
    w2.release(toB, false);

    // fail_timeout later, exactly one request checks it, whichever worker asks.
    time.advance(9999);
    t.equal(onA(w1), 'unavailable', 'not before fail_timeout');
    time.advance(1);
    const check = chosen(t, onA(w1));
    t.equal(check.address, A, 'after fail_timeout: one request checks A');
    t.equal(onA(w2), 'unavailable', 'and no other one while it runs, in any worker');
    t.equal(onA(w1), 'unavailable');
    t.equal(get(`${path}/state`), 'unavailable', 'A stays unavailable while checked');
    w1.release(check, true);
    t.equal(get(`${path}/state`), 'unavailable', 'the check failed: unavailable again');
    t.equal(get(`${path}/health/unavailable`), 1, 'still once: it never came back');
    time.advance(5000);
    t.equal(onA(w2), 'unavailable', 'for another fail_timeout');
    time.advance(5000);
    const second = chosen(t, onA(w2));
    t.equal(onA(w1), 'unavailable', 'a second check, again alone');
    time.advance(250);
    w2.release(second, false);
    t.equal(get(`${path}/state`), 'up', 'it succeeded: up');
    t.equal(cells(A).load(PeerCell.checking), 0, 'the checking cell is free');
    t.equal(get(`${path}/health/downtime`), time.now() - downAt, 'downtime: from unavailable to the successful check');
    const both = [chosen(t, onA(w1)), chosen(t, onA(w2))];
    t.same(both.map((c) => c.address), [A, A], 'both workers choose it again');
    both.forEach((c, i) => (i ? w2 : w1).release(c, false));

    // A checking request lost with its worker: after another fail_timeout, another one.
    w1.release(chosen(t, onA(w1)), true);
    w1.release(chosen(t, onA(w1)), true);
    t.equal(get(`${path}/state`), 'unavailable');
    t.equal(get(`${path}/health/unavailable`), 2, 'a second time');
    time.advance(10_000);
    const lost = chosen(t, onA(w1));
    time.advance(9_999);
    t.equal(onA(w2), 'unavailable', 'while a check may still be running');
    time.advance(1);
    const replacement = chosen(t, onA(w2));
    t.equal(replacement.address, A, 'a check running for fail_timeout is taken for lost');
    w2.release(replacement, false);
    t.equal(get(`${path}/state`), 'up');
    w1.release(lost, false);
    t.equal(get(`${path}/state`), 'up', 'the lost one ending later changes nothing');
    t.equal(cells(A).load(PeerCell.conns), 0);
  });

  t.test('slow start: the weight comes back over slow_start, recovering then up', async (t) => {
    const { balancer, time, get } = setup(t, [{ name: 'u', peers: [{ server: A }, { server: B, maxFails: 1, failTimeout: 1, slowStart: 10 }] }]);
    const b = balancer();
    const w2 = balancer();
    const idB = b.peers.find((p) => p.address === B)!.id;
    const idA = b.peers.find((p) => p.address === A)!.id;
    t.equal(shares(b, 100).get(B), 50, 'equal weights: half each');
    b.release(chosen(t, b.pick(undefined, new Set([idA]))), true);
    t.equal(get(`/status/http/upstreams/u/peers/${B}/state`), 'unavailable');
    time.advance(1000);
    const check = chosen(t, b.pick(undefined, new Set([idA])));
    t.equal(check.id, idB);
    b.release(check, false);
    t.equal(get(`/status/http/upstreams/u/peers/${B}/state`), 'recovering', 'back, and recovering');
    const ratio: number[] = [];
    for (const at of [1000, 4000, 4000]) {
      time.advance(at);
      ratio.push((shares(b, 1000).get(B) ?? 0) / 1000);
      t.equal(get(`/status/http/upstreams/u/peers/${B}/state`), 'recovering', `still recovering ${ratio.length}`);
    }
    // Weight 1 against 0.1, 0.5, 0.9: B gets 1/11, 1/3, 9/19.
    t.ok(ratio[0] > 0.05 && ratio[0] < 0.13, `after 1 s: ${ratio[0]}`);
    t.ok(ratio[1] > 0.28 && ratio[1] < 0.38, `after 5 s: ${ratio[1]}`);
    t.ok(ratio[2] > 0.43 && ratio[2] < 0.5, `after 9 s: ${ratio[2]}`);
    t.ok(ratio[0] < ratio[1] && ratio[1] < ratio[2], 'the share grows');
    const other = shares(w2, 1000).get(B)! / 1000;
    t.ok(other > 0.43 && other < 0.5, `the other worker ramps from the same shared time (${other})`);
    time.advance(1000);
    const full = shares(b, 1000).get(B)!;
    t.ok(Math.abs(full - 500) <= 2, `after slow_start: the whole weight (${full} of 1000)`);
    t.equal(get(`/status/http/upstreams/u/peers/${B}/state`), 'up', 'and up');
    t.equal(get(`/status/http/upstreams/u/peers/${B}/health/unavailable`), 1);
  });

  t.test('hash: a key keeps its peer; consistent hashing moves few keys; ip_hash by /24', async (t) => {
    const { balancer, call } = setup(t, [
      { name: 'h', method: 'hash', peers: peers(8081, 8082, 8083, 8084) },
      { name: 'c', method: 'hash', peers: peers(8081, 8082, 8083, 8084) },
      { name: 'ip', method: 'ip_hash', peers: peers(8081, 8082, 8083, 8084) },
    ]);
    const HASH: BalancingMethod = { kind: 'hash', key: '$request_uri', consistent: false };
    const CHASH: BalancingMethod = { kind: 'hash', key: '$request_uri', consistent: true };
    const keys = Array.from({ length: 10_000 }, (_, i) => `/item/${i}?v=${i * 7}`);
    const map = (b: Balancer) =>
      keys.map((k) => {
        const c = chosen(t, b.pick(k));
        b.release(c, false);
        return c.address;
      });
    const h1 = map(balancer(HASH, 'h'));
    t.same(map(balancer(HASH, 'h')), h1, 'another worker maps every key to the same peer');
    const perPeer = (m: string[]) => new Set(m).size;
    t.equal(perPeer(h1), 4, 'keys spread over every peer');
    const c1 = map(balancer(CHASH, 'c'));
    const cw = balancer(CHASH, 'c');
    t.same(map(cw), c1, 'consistent: the same in another worker');
    t.equal(perPeer(c1), 4);
    for (const n of [4, 3, 2, 1]) {
      const share = c1.filter((a) => a === `127.0.0.1:808${n}`).length / 10_000;
      t.ok(share > 0.15 && share < 0.35, `consistent: peer ${n} has ${share} of the keys`);
    }

    // A fifth peer, through /config.
    for (const name of ['h', 'c']) t.equal(call('PUT', `/config/http/upstreams/${name}/servers/${E}`, {}).status, 201);
    const h2 = map(balancer(HASH, 'h'));
    const c2 = map(cw);
    const moved = (a: string[], b: string[]) => a.filter((x, i) => x !== b[i]).length / a.length;
    t.ok(moved(c1, c2) > 0.1 && moved(c1, c2) < 0.3, `consistent: ${moved(c1, c2)} of the keys moved`);
    t.ok(c1.every((a, i) => a === c2[i] || c2[i] === E), 'every key that moved went to the new peer');
    t.ok(moved(h1, h2) > 0.5, `plain hash: ${moved(h1, h2)} moved`);

    // A peer marked down: only its own keys move (consistent), to one other peer each.
    t.equal(call('PATCH', `/config/http/upstreams/c/servers/${B}`, { down: true }).status, 200);
    const c3 = map(cw);
    t.ok(c3.every((a, i) => a !== B && (c2[i] === B || a === c2[i])), 'down: its keys moved, no other key did');
    t.same(map(cw), c3, 'and they stay where they went');
    const hb = balancer(HASH, 'h');
    const idC = hb.peers.find((p) => p.address === C)!.id;
    const retried = keys.slice(0, 1000).map((k, i) => {
      if (h2[i] !== C) return h2[i];
      const r = chosen(t, hb.pick(k, new Set([idC])));
      hb.release(r, false);
      return r.address;
    });
    t.ok(retried.every((a) => a !== C), 'plain hash: a tried peer is rehashed away from');

    // ip_hash: a /24 of IPv4 stays together, IPv4-mapped IPv6 counts as IPv4.
    const ip = balancer({ kind: 'ip_hash' }, 'ip');
    const at = (address: string) => {
      const c = chosen(t, ip.pick(address));
      ip.release(c, false);
      return c.address;
    };
    const subnet = new Set(Array.from({ length: 256 }, (_, i) => at(`10.1.2.${i}`)));
    t.equal(subnet.size, 1, 'all of 10.1.2.0/24 goes to one peer');
    t.equal(at('::ffff:10.1.2.77'), [...subnet][0], 'IPv4-mapped IPv6 too');
    const subnets = new Set(Array.from({ length: 200 }, (_, i) => at(`10.${i}.${(i * 37) % 256}.9`)));
    t.equal(subnets.size, 4, 'different /24s spread over the peers');
    const v6 = new Set(Array.from({ length: 200 }, (_, i) => at(`2001:db8::${i.toString(16)}`)));
    t.ok(v6.size > 1, 'IPv6 clients hash on the whole address');
    t.equal(at('2001:db8::1'), at('2001:0db8:0:0:0:0:0:1'), 'however the address is written');
  });

  t.test('hash helpers: CRC-32 as zlib, ip_hash bytes', async (t) => {
    const zlib = await import('node:zlib');
    for (const s of ['', 'a', '/index.html?x=1', 'naïve ☃ 𝄞', '\ud800x'])
      t.equal(crc32(s), (zlib as Any).crc32(Buffer.from(s)), `crc32(${JSON.stringify(s)})`);
    const out = new Uint8Array(16);
    t.equal(ipHashBytes('192.168.7.9', out), 3);
    t.same([...out.subarray(0, 3)], [192, 168, 7]);
    t.equal(ipHashBytes('::ffff:192.168.7.9', out), 3);
    t.same([...out.subarray(0, 3)], [192, 168, 7]);
    t.equal(ipHashBytes('[2001:db8::ff00:42:8329]', out), 16);
    t.same([...out], [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0xff, 0, 0, 0x42, 0x83, 0x29]);
    t.equal(ipHashBytes('::1', out), 16);
    t.equal(out[15], 1);
    t.equal(ipHashBytes('64:ff9b::10.0.0.1', out), 16);
    t.same([...out.subarray(12)], [10, 0, 0, 1]);
    for (const bad of ['', 'unix:', 'localhost', '1.2.3', '1.2.3.256', '1::2::3', '12345::1', '1:2:3:4:5:6:7:8:9'])
      t.equal(ipHashBytes(bad, out), 0, `not an address: ${JSON.stringify(bad)}`);
  });

  t.test('/config changes are seen on the next pick; a removed peer is never picked again', async (t) => {
    const { balancer, call, upstream, status, cells } = setup(t, [{ name: 'u', peers: peers(8081, 8082) }]);
    const w1 = balancer();
    const w2 = balancer();
    const held = chosen(t, w1.pick());
    t.equal(held.address, A);
    const heldCells = cells(A);
    t.equal(call('PUT', `/config/http/upstreams/u/servers/${C}`, { weight: 2 }).status, 201);
    const next = shares(w2, 4);
    t.same(next.get(C), 2, 'the new peer is picked at once, with its weight');
    t.equal(call('PATCH', `/config/http/upstreams/u/servers/${C}`, { down: true }).status, 200);
    t.equal(shares(w2, 100).get(C), undefined, 'down: never picked');
    t.equal(shares(w1, 100).get(C), undefined, 'in any worker');
    const removed = changePeers(status, upstream(), (ps) => ps.filter((p) => p.server !== A));
    t.ok(removed.ok);
    const after = shares(w1, 100);
    t.same([...after.keys()], [B], 'the removed peer is never picked again');
    t.same([...shares(w2, 100).keys()], [B]);
    t.equal(heldCells.load(PeerCell.conns), 1, 'its request in flight still holds its connection');
    w1.release(held, true);
    t.equal(heldCells.load(PeerCell.conns), 0, 'and releases it');
    t.equal(held.address, A, 'what pick() returned still describes it');
    t.equal(call('PATCH', `/config/http/upstreams/u/servers/${C}`, { down: false }).status, 200);
    t.equal(shares(w1, 30).get(C), 20, 'back from down with weight 2 of 3');
    t.equal(call('PATCH', `/config/http/upstreams/u/servers/${B}`, { max_conns: 1 }).status, 200);
    const onB = chosen(t, w2.pick(undefined, new Set([w2.peers.find((p) => p.address === C)!.id])));
    t.equal(onB.address, B);
    t.equal(w1.pick(undefined, new Set([w1.peers.find((p) => p.address === C)!.id])), 'busy', 'a new max_conns applies at once');
    w2.release(onB, false);
  });

  t.test("a removed peer's memory stays while a connection to it is open, however long", async (t) => {
    const { balancer, upstream, status, cells } = setup(t, [{ name: 'u', peers: peers(8081, 8082) }]);
    const w1 = balancer();
    const held = chosen(t, w1.pick());
    t.equal(held.address, A);
    const heldCells = cells(A);
    t.ok(changePeers(status, upstream(), (ps) => ps.filter((p) => p.server !== A)).ok, 'removed while its connection is open');
    const retired = () => peerSet(status, upstream()).retired.map((r) => r.id);
    t.same(retired(), [held.id], 'retired, not freed');
    const now = Date.now;
    // Past RETIRE_MS: a session outlives any request.
    Date.now = () => now() + RETIRE_MS + 1000;
    try {
      t.ok(changePeers(status, upstream(), (ps) => ps.map(({ id: _id, ...p }) => ({ ...p, weight: 2 }))).ok);
      t.same(retired(), [held.id], 'still kept after RETIRE_MS: its connection is open');
      t.equal(heldCells.load(PeerCell.conns), 1, 'and its cells still hold it');
      w1.release(held, false);
      t.equal(heldCells.load(PeerCell.conns), 0);
      t.ok(changePeers(status, upstream(), (ps) => ps.map(({ id: _id, ...p }) => ({ ...p, weight: 3 }))).ok);
      t.same(retired(), [], 'freed by the next change once the connection ended');
    } finally {
      Date.now = now;
    }
  });

  t.test("repairSlot: a killed worker's connections stop counting", async (t) => {
    const { status, balancer, cells, get } = setup(t, [{ name: 'u', peers: [{ server: A, maxConns: 5 }] }]);
    const mine = balancer();
    const own = chosen(t, mine.pick());
    const slot = 3;
    const child = forkNode(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, [CHILD]: '1', [INSTANCE_ENV]: status.instance, [WORKER_SLOT_ENV]: String(slot) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const message = await new Promise<Any>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the worker did not pick within 60 s')), 60_000);
      child.once('message', (m) => (clearTimeout(timer), resolve(m)));
      child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`the worker exited (${code})`))));
    });
    t.same(message, { picked: 3 }, 'the worker holds three requests');
    t.equal(cells(A).load(PeerCell.conns), 4);
    child.kill('SIGKILL');
    await exited;
    t.equal(cells(A).load(PeerCell.conns), 4, 'killed: its three stay counted');
    const extra = chosen(t, mine.pick());
    t.equal(mine.pick(), 'busy', 'and take room that is free');
    mine.release(extra, false);
    // The primary: a process that does not write.
    const primary = Status.attach({ instance: status.instance, writer: false });
    repairSlot(primary, slot);
    t.equal(cells(A).load(PeerCell.conns), 1, "the dead slot's three are taken off");
    t.equal(get(`/status/http/upstreams/u/peers/${A}/selected/current`), 1, 'and selected.current shows the live one only');
    repairSlot(primary, slot);
    t.equal(cells(A).load(PeerCell.conns), 1, 'a second repair changes nothing');
    const more = [1, 2, 3, 4].map(() => chosen(t, mine.pick()));
    t.equal(mine.pick(), 'busy', 'max_conns counts only live requests again');
    for (const c of [own, ...more]) mine.release(c, false);
    t.equal(cells(A).load(PeerCell.conns), 0);
  });
}

/** The killed worker of the repairSlot test. */
async function child() {
  const status = Status.attach({ writer: true });
  const u = status.catalog().http!.upstreams![0];
  const b = new Balancer(status, u, RR);
  let picked = 0;
  for (let i = 0; i < 3; i++) if (typeof b.pick() !== 'string') picked++;
  process.send!({ picked });
  setInterval(() => {}, 1000);
}

if (process.env[CHILD]) await child();
else await tests();
