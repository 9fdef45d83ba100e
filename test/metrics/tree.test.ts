// An object's members written by the code made for its list (once the same list comes a
// second time) must be the bytes the generic walk wrote: JSON.stringify's layout of the
// node's value, at any depth, pretty and not, as members come and go between answers
// and when the list itself changes.
import t from 'tap';
import { JsonWriter } from '../../src/metrics/json.js';
import { group, leaf, time, type RenderContext } from '../../src/metrics/shape.js';
import { FieldNode, ObjectNode, ValueNode, type StatusNode } from '../../src/metrics/tree.js';

const ctx: RenderContext = { dateEpoch: false, address: '127.0.0.1', configFiles: false, now: 0 };

/** What the writer should give for `node` at `depth`: JSON.stringify's text, each line
 * after the first indented by `depth` tabs when pretty. */
function expected(node: StatusNode, depth: number, pretty: boolean): string {
  const value = node.json(ctx);
  return pretty ? JSON.stringify(value, null, '\t').replace(/\n/g, '\n' + '\t'.repeat(depth)) : JSON.stringify(value);
}

function written(node: StatusNode, depth: number, pretty: boolean): string {
  const w = new JsonWriter(pretty);
  node.write(w, depth, ctx);
  return w.result().toString('utf8');
}

t.test('members present or absent, answer after answer, at several depths and both layouts', async (t) => {
  // Which of the three optional members are present in each answer.
  const present = { first: true, middle: true, last: true };
  const source = { n: 0 };
  const optional = (name: keyof typeof present) => new FieldNode(leaf<typeof source>(name, name, (s) => (present[name] ? s.n : undefined)), source);
  const inner = new ObjectNode(() => innerList);
  const innerList: Array<[string, StatusNode]> = [
    ['x', new ValueNode('é "quoted"')],
    ['y', new FieldNode(group<typeof source>('y', [leaf('n', 'n', (s) => s.n * 1000003)]), source)],
  ];
  const list: Array<[string, StatusNode]> = [
    ['first', optional('first')],
    ['a value', new ValueNode(true)],
    ['middle', optional('middle')],
    ['inner', inner],
    ['last', optional('last')],
  ];
  const node = new ObjectNode(() => list);
  const states = [
    { first: true, middle: true, last: true },
    { first: false, middle: true, last: true },
    { first: true, middle: false, last: false },
    { first: false, middle: false, last: false },
    { first: true, middle: true, last: true },
  ];
  let checks = 0;
  let wrong = 0;
  for (let answer = 0; answer < 4; answer++)
    for (const state of states)
      for (const depth of [0, 1, 3])
        for (const pretty of [true, false]) {
          Object.assign(present, state);
          source.n = answer * 17 + checks;
          const got = written(node, depth, pretty);
          const want = expected(node, depth, pretty);
          if (got !== want) {
            wrong++;
            if (wrong < 4) t.equal(got, want, `answer ${answer}, ${JSON.stringify(state)}, depth ${depth}, pretty ${pretty}`);
          }
          checks++;
        }
  t.equal(wrong, 0, `${checks} answers, each JSON.stringify's layout of its value`);
});

t.test('a new list is written as given, then its own code once it comes again', async (t) => {
  let list: Array<[string, StatusNode]> = [
    ['a', new ValueNode(1)],
    ['b', new ValueNode(2)],
  ];
  const node = new ObjectNode(() => list);
  for (let i = 0; i < 3; i++) t.equal(written(node, 0, true), '{\n\t"a": 1,\n\t"b": 2\n}', `the first list, answer ${i + 1}`);
  list = [
    ['b', new ValueNode(2)],
    ['c', new ValueNode('three')],
    ['a', new ValueNode(1)],
  ];
  for (let i = 0; i < 3; i++) t.equal(written(node, 0, false), '{"b":2,"c":"three","a":1}', `the second list, answer ${i + 1}`);
  list = [];
  for (let i = 0; i < 3; i++) t.equal(written(node, 2, true), '{}', `an empty list, answer ${i + 1}`);
  // The same array with a member more: its writer is made again.
  list.push(['added', new ValueNode(4)]);
  for (let i = 0; i < 3; i++) t.equal(written(node, 2, true), '{\n\t\t\t"added": 4\n\t\t}', `the list grown in place, answer ${i + 1}`);
});

t.test('a time leaf written alone is toISOString()\'s text, or epoch milliseconds with date=epoch', async (t) => {
  const source = { ms: 0 };
  const node = new FieldNode(time<typeof source>('load_time', 'When.', (s) => s.ms), source);
  const epoch: RenderContext = { ...ctx, dateEpoch: true };
  let wrong = 0;
  let checks = 0;
  for (const ms of [999.5, Date.UTC(2026, 10, 26, 23, 59, 59, 999), Date.UTC(2026, 10, 27, 0, 0, 0, 1) + 0.4, 1.7e12 + 123]) {
    source.ms = ms;
    const w = new JsonWriter(true);
    node.write(w, 2, ctx);
    if (w.result().toString() !== JSON.stringify(new Date(Math.round(ms)).toISOString())) wrong++;
    const e = new JsonWriter(false);
    node.write(e, 0, epoch);
    if (e.result().toString() !== String(Math.round(ms))) wrong++;
    checks += 2;
  }
  t.equal(wrong, 0, `${checks} times, both ways`);
  source.ms = 0;
  t.equal(node.write(new JsonWriter(true), 0, ctx), false, 'absent while 0');
});
