// keepNextTickFast(): after a GC that frees maps nothing holds, nextTick's object literal
// keeps its monomorphic feedback (node 20 otherwise turns it megamorphic for good, and
// every tick goes through the runtime).
import { once } from 'node:events';
import t from 'tap';
import { start } from '../helpers.js';

type Feedback = { before: string[]; after: string[] };

/** The states of nextTick's DefineKeyedOwnPropertyInLiteral feedback slots before
 * keepNextTickFast() would run and after the GC. */
async function literalFeedback(mode: 'plain' | 'keep'): Promise<Feedback> {
  const child = start('next-tick.mjs', [mode]);
  // V8 prints through its own buffered stdout, flushed at exit: read to the pipe's end.
  const closed = once(child.proc, 'close', { signal: AbortSignal.timeout(60_000) });
  if ((await child.exit()) !== 0) throw new Error(`next-tick.mjs ${mode} failed: ${child.stderr()}`);
  await closed;
  const [, before = '', after = ''] = child.stdout().split(/^FEEDBACK \w+$/m);
  const states = (text: string) => [...text.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]);
  return { before: states(before), after: states(after) };
}

t.test('the kept tick object keeps the feedback monomorphic', async (t) => {
  const plain = await literalFeedback('plain');
  if (plain.after.length === 0 || !plain.after.includes('MEGAMORPHIC')) {
    t.pass('nothing to keep', { skip: `this node does not lose nextTick's feedback (${plain.after.join(' ') || 'no feedback printed'})` });
    return;
  }
  // A run whose feedback was lost before the fixture's first line (a GC of a slow start)
  // tests nothing: it is run again, a few times at most.
  let kept = await literalFeedback('keep');
  for (let tries = 1; tries < 4 && kept.before.includes('MEGAMORPHIC'); tries++) kept = await literalFeedback('keep');
  t.notOk(kept.before.includes('MEGAMORPHIC'), 'the feedback is whole when keepNextTickFast() runs', { before: kept.before });
  t.same(kept.after, plain.after.map(() => 'MONOMORPHIC'));
});
