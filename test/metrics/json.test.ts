// JsonWriter's numbers written as digits must read back as JSON.stringify would have
// written them: the status tree's bytes are the JSON of its values.
import t from 'tap';
import { encoded, JsonWriter } from '../../src/metrics/json.js';
import { renderTime } from '../../src/metrics/shape.js';

const written = (write: (w: JsonWriter) => void): string => {
  const w = new JsonWriter(false);
  write(w);
  return w.result().toString('latin1');
};

t.test('thousandths(v) is the text of Math.round(v * 1000) / 1000', async (t) => {
  const edges = [0, 0.0004, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 0.999, 0.9995, 1, 1.005, 1.05, 1.5, 2, 10.1, 48.25, 999.999, 2147483.647, 2147483.648, 1e12 + 0.25, 2 ** 53];
  for (const v of edges) t.equal(written((w) => w.thousandths(v)), JSON.stringify(Math.round(v * 1000) / 1000), String(v));
  // And a spread of the sums and percentiles a histogram gives (ms, as doubles).
  let seed = 7;
  const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
  let wrong = 0;
  for (let i = 0; i < 20000; i++) {
    const v = random() * 10 ** Math.floor(random() * 9);
    if (written((w) => w.thousandths(v)) !== JSON.stringify(Math.round(v * 1000) / 1000)) wrong++;
  }
  t.equal(wrong, 0, 'none of 20,000 values differs');
  t.equal(written((w) => w.thousandths(Number.NaN)), 'null', 'not a number: null, as JSON.stringify');
});

// A separator and the DataView numbers() reads it through.
const separator = (text: string): [Buffer, DataView] => {
  const b = Buffer.from(text);
  return [b, new DataView(b.buffer, b.byteOffset, b.length)];
};

t.test('numbers() writes an array as JSON.stringify does, in both layouts', async (t) => {
  const lists = [[0], [7, 0, 12, 4294967295, 2147483648, 2147483647], [1.5, 3, -2, 1e21, 0.1], [5, 1.25, 9, Number.NaN, 10]];
  for (const values of lists) {
    const compact = written((w) => {
      w.numbers(values, Buffer.from('['), ...separator(','));
      w.text(']');
    });
    t.equal(compact, JSON.stringify(values), `compact ${JSON.stringify(values)}`);
    // Items one level down, and five (a separator longer than four bytes, as a peer's
    // histogram buckets have).
    for (const depth of [1, 5]) {
      const tabs = '\t'.repeat(depth);
      const pretty = written((w) => {
        w.numbers(values, Buffer.from('[\n' + tabs), ...separator(',\n' + tabs));
        w.text('\n' + '\t'.repeat(depth - 1) + ']');
      });
      t.equal(pretty, JSON.stringify(values, null, '\t').replace(/\n/g, '\n' + '\t'.repeat(depth - 1)), `pretty at depth ${depth}: ${JSON.stringify(values)}`);
    }
  }
  // Past the writer's first buffer: the room made for the rest holds after a fallback.
  const long = Array.from({ length: 5000 }, (_, i) => (i % 7 === 0 ? i + 0.5 : i * 1000));
  t.equal(written((w) => (w.numbers(long, Buffer.from('['), ...separator(',')), w.text(']'))), JSON.stringify(long), '5,000 numbers, some fractional');
});

t.test('span() copies any range of its bytes, four at a time or not', async (t) => {
  const source = Buffer.from(',\n\t\t\t"127.0.0.1:8080": ,"a":');
  const view = new DataView(source.buffer, source.byteOffset, source.length);
  let wrong = 0;
  for (let from = 0; from <= source.length; from++)
    for (let to = from; to <= source.length; to++) {
      const w = new JsonWriter(true);
      w.bytes(Buffer.from('x'));
      w.span(source, view, from, to);
      if (w.result().toString('latin1') !== 'x' + source.subarray(from, to).toString('latin1')) wrong++;
    }
  t.equal(wrong, 0, 'every range of a 31-byte source, after one byte already written');
});

t.test('put() and bytes() copy runs short and long, across the buffer growing', async (t) => {
  // Lengths about the points where they hand a run to TypedArray.set, each after the
  // bytes before it, until the writer has grown its first buffer several times; bytes()
  // from the start and from the second byte (a first member's key, without its comma).
  const runs = Array.from({ length: 80 }, (_, n) => encoded(Buffer.from(Array.from({ length: n }, (_, i) => 0x21 + ((n * 7 + i) % 90)))));
  const w = new JsonWriter(true);
  const want: Buffer[] = [];
  for (let round = 0; round < 8; round++)
    for (const run of runs) {
      const from = round % 4 === 3 ? Math.min(1, run.bytes.length) : 0;
      if (round % 2 === 0) w.put(run);
      else w.bytes(run.bytes, from);
      want.push(Buffer.from(run.bytes.subarray(round % 2 === 0 ? 0 : from)));
    }
  const total = Buffer.concat(want);
  t.ok(total.length > 4 * 5120, `${total.length} bytes, more than the first buffer holds`);
  t.ok(w.result().equals(total), 'the same bytes in the same order');
});

t.test('isoTime() and renderTime() write toISOString()\'s text for times that alternate between many seconds', async (t) => {
  // 40 seconds (more than the 16 each keeps), visited back and forth, with every
  // millisecond position and a rounding at the millisecond.
  const base = Date.UTC(2026, 10, 26, 23, 59, 30);
  const times: number[] = [];
  for (let round = 0; round < 3; round++)
    for (let s = 0; s < 40; s++) times.push(base + (s % 2 ? 40 - s : s) * 1000 + ((s * 37 + round * 101) % 1000) + (round === 2 ? 0.4 : 0));
  times.push(0, 999.6, Date.UTC(1999, 11, 31, 23, 59, 59, 999));
  let wrong = 0;
  for (const ms of times) {
    const want = new Date(Math.round(ms)).toISOString();
    if (written((w) => w.isoTime(ms)) !== JSON.stringify(want)) wrong++;
    if (renderTime(ms, { dateEpoch: false, address: '', configFiles: false, now: 0 }) !== want) wrong++;
  }
  t.equal(wrong, 0, `${times.length} times, each written both ways`);
});
