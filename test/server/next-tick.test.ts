// keepNextTickFast(): after a GC that frees maps nothing holds, nextTick's object literal
// keeps its monomorphic feedback (node 20 otherwise turns it megamorphic for good, and
// every tick goes through the runtime).
import { once } from 'node:events';
import t from 'tap';
import { start } from '../helpers.js';

/** The states of nextTick's DefineKeyedOwnPropertyInLiteral feedback slots after the GC. */
async function literalFeedback(mode: 'plain' | 'keep'): Promise<string[]> {
  const child = start('next-tick.ts', [mode]);
  // V8 prints through its own buffered stdout, flushed at exit: read to the pipe's end.
  const closed = once(child.proc, 'close', { signal: AbortSignal.timeout(60_000) });
  if ((await child.exit()) !== 0) throw new Error(`next-tick.ts ${mode} failed: ${child.stderr()}`);
  await closed;
  return [...child.stdout().matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]);
}

t.test('the kept tick object keeps the feedback monomorphic', async (t) => {
  const plain = await literalFeedback('plain');
  if (plain.length === 0 || !plain.includes('MEGAMORPHIC')) {
    t.pass('nothing to keep', { skip: `this node does not lose nextTick's feedback (${plain.join(' ') || 'no feedback printed'})` });
    return;
  }
  const kept = await literalFeedback('keep');
  t.same(kept, plain.map(() => 'MONOMORPHIC'));
});
