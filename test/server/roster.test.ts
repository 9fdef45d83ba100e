// The roster of responses in flight and open connections: what a drain reaches.
import t from 'tap';
import { Roster } from '../../src/server/roster.js';

const all = <T>(r: Roster<T>): T[] => {
  const out: T[] = [];
  r.forEach((v) => out.push(v));
  return out;
};

t.test('things added are reached until removed, in any order, each once', async (t) => {
  const r = new Roster<{ n: number }>();
  const things = [1, 2, 3, 4].map((n) => ({ n }));
  const entries = things.map((x) => r.add(x));
  t.equal(r.size, 4);
  t.same(all(r).map((x) => x.n).sort(), [1, 2, 3, 4]);
  r.delete(entries[1]); // middle
  r.delete(entries[3]); // head (the latest added)
  r.delete(entries[3]); // twice: nothing more
  t.equal(r.size, 2);
  t.same(all(r).map((x) => x.n).sort(), [1, 3]);
  r.delete(entries[0]); // tail
  r.delete(entries[2]);
  t.equal(r.size, 0);
  t.same(all(r), []);
  const again = r.add(things[0]);
  t.same(all(r), [things[0]], 'usable again once empty');
  r.delete(again);
});

t.test('a removed entry points at nothing, so that it keeps nothing alive', async (t) => {
  const r = new Roster<object>();
  const a = r.add({});
  const b = r.add({});
  const c = r.add({});
  r.delete(b);
  t.same([b.value, b.prev, b.next], [undefined, undefined, undefined]);
  t.equal(a.prev, c, 'its neighbours are linked to each other');
  t.equal(c.next, a);
});

t.test('forEach reaches what was there when called, whatever the callback removes', async (t) => {
  const r = new Roster<number[]>();
  const xs = [[1], [2], [3]];
  const entries = xs.map((x) => r.add(x));
  const seen: number[] = [];
  r.forEach((x) => {
    seen.push(x[0]);
    for (const e of entries) r.delete(e);
  });
  t.same(seen.sort(), [1, 2, 3]);
  t.equal(r.size, 0);
});
