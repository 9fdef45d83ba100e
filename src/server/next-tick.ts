// Keeps process.nextTick on its fast path for the life of a long-running process.
//
// Node 20's nextTick builds each tick as `{ [async_id_symbol]: …, [trigger_async_id_symbol]:
// …, callback, args }`. V8 defines those four properties one by one, and the feedback of
// the last three holds, weakly, the hidden class the object has before each step: maps
// that no finished tick object uses. V8 keeps such maps through two full GCs after their
// last use, but not in the memory reducer's GCs (a few seconds after a busy process goes
// idle): one that finds no tick object alive frees them, the next tick finds its feedback
// cleared, V8 marks those three steps megamorphic for good, and from then on every
// nextTick (node:http calls it several times per request) goes through the runtime. Measured on `return 200`: a worker's CPU per request rises by
// a quarter (10.4 → 13.2 µs), for a bare node:http server as much as for zonal's.
//
// One tick object kept alive keeps its map, and through the maps' back pointers every
// map before it, so the feedback never loses them.
import { createHook } from 'node:async_hooks';

let kept: object[] | undefined;

/** Holds tick objects: call once, before the process serves anything. Every tick object
 * made while the hook is on is kept, one of them made with arguments: ticks with and
 * without `args` (node:http makes both) then both find their maps held. */
export function keepNextTickFast(): void {
  if (kept) return;
  const held: object[] = [];
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject') held.push(resource);
    },
  });
  hook.enable();
  process.nextTick(() => {});
  process.nextTick((_a: unknown) => {}, 0);
  process.nextTick(() => {});
  hook.disable();
  kept = held;
}
