// The floor of `full_tree` (bench/side.ts): what answering the whole tree would cost a
// renderer that did only what any renderer of it must. A bare uWebSockets.js server,
// attached to the running zonal server's zones, answers GET /status/ by
// - making every read of shared memory that one real render of the tree makes, in the
//   same order and into the same arrays (counter blocks' sums, the largest and the
//   weighted mean of a counter's shards, the slab statistics, the cells), recorded once at
//   start by wrapping the engine's read methods for that render;
// - then writing that render's bytes as what they are: constant runs (keys, indents, the
//   configuration files, the histograms' bounds), copied four bytes at a time or, from 24
//   bytes on, by one TypedArray.set, and its numbers, digit by digit.
// The numbers written are those of the recorded render: the floor measures the cost of an
// answer, and the tree of an idle server does not change. What it leaves out is what
// zonal's renderer adds to that: walking the declarations, deciding what is present, and
// the API's routing. Not a benchmark: scripts/bench.mjs lists it among its HELPERS.
import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';
import { createApi } from '../src/api/index.js';
import { AtomicCells, CounterBlock, inReadPass, INSTANCE_ENV, Zone } from '../src/engine/index.js';
import { putUint } from '../src/metrics/json.js';
import { Status } from '../src/metrics/status.js';
import { toWire } from '../src/transport/common.js';
import { HOST } from './processes.js';

/** One read of the recorded render, replayed as it was made. */
type Read = () => unknown;

/** The reads one call of `render` makes through the engine's read methods. */
function recordReads(render: () => Buffer): { reads: Read[]; body: Buffer } {
  const reads: Read[] = [];
  type Method = (this: unknown, ...args: never[]) => unknown;
  const wrap = (proto: object, name: string): (() => void) => {
    const own = proto as Record<string, Method>;
    const original = own[name];
    own[name] = function (this: unknown, ...args: never[]) {
      // Into the same array as the render: a fresh one each time would be an allocation
      // the render does not make.
      const target = this;
      reads.push(() => original.apply(target, args));
      return original.apply(this, args);
    };
    return () => (own[name] = original);
  };
  const undo = [
    wrap(CounterBlock.prototype, 'values'),
    wrap(CounterBlock.prototype, 'max'),
    wrap(CounterBlock.prototype, 'weightedMean'),
    wrap(CounterBlock.prototype, 'touch'),
    wrap(Zone.prototype, 'slabStatsPacked'),
    wrap(AtomicCells.prototype, 'load'),
    wrap(AtomicCells.prototype, 'touch'),
  ];
  try {
    return { body: render(), reads };
  } finally {
    for (const u of undo) u();
  }
}

// JSON numbers that are values (after `:`, `[` or `,` and any space, before `,`, `]`, `}`
// or a line's end), never digits inside a string or a key.
const VALUE = /(?<=[:[,]\s*)-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?=\s*[,\]}\n])/g;

/** The body's constant runs and its numbers: run 0, number 0, run 1, ..., the last run. */
function template(body: Buffer): { runs: Buffer[]; numbers: number[] } {
  const text = body.toString('latin1');
  const runs: Buffer[] = [];
  const numbers: number[] = [];
  let last = 0;
  for (const m of text.matchAll(VALUE)) {
    runs.push(Buffer.from(text.slice(last, m.index), 'latin1'));
    numbers.push(Number(m[0]));
    last = m.index! + m[0].length;
  }
  runs.push(Buffer.from(text.slice(last), 'latin1'));
  return { runs, numbers };
}

/** A writer of the runs and numbers, into one buffer kept from answer to answer. */
function minimalWriter(runs: Buffer[], numbers: number[]): () => Uint8Array {
  const all = Buffer.concat(runs);
  const allView = new DataView(all.buffer, all.byteOffset, all.length);
  const at = new Uint32Array(runs.length + 1);
  for (let i = 0; i < runs.length; i++) at[i + 1] = at[i] + runs[i].length;
  const values = Float64Array.from(numbers);
  const out = Buffer.allocUnsafe(all.length + 32 * numbers.length);
  const view = new DataView(out.buffer, out.byteOffset, out.length);
  return () => {
    let p = 0;
    for (let i = 0; i < runs.length; i++) {
      let j = at[i];
      const end = at[i + 1];
      if (end - j >= 24) {
        out.set(runs[i], p);
        p += end - j;
      } else {
        for (; j + 4 <= end; j += 4, p += 4) view.setUint32(p, allView.getUint32(j, true), true);
        for (; j < end; j++) out[p++] = all[j];
      }
      if (i === values.length) break;
      const v = values[i];
      if (v >= 0 && v < 0x8000_0000 && v === Math.floor(v)) p = putUint(out, p, v);
      else p += out.write(String(v), p, 'latin1');
    }
    return out.subarray(0, p);
  };
}

/** `--floor <port> <primaryPid> <adminPort>`: the floor server, on `port`, of the zonal
 * server whose primary is `primaryPid` and whose admin listener (the tree's `address`,
 * its configuration files shown) is on `adminPort`. */
export function floorServer(port: number, primaryPid: number, adminPort: number): void {
  // The primary's instance: the one it inherited (this process has the same environment),
  // or, with none, the one it named after itself.
  const instance = process.env[INSTANCE_ENV] ?? `p${primaryPid}`;
  const status = Status.attach({ instance, writer: false });
  const api = createApi({ status, mounts: [{ location: '/', api: '/', configFiles: true }] });
  const request = { method: 'GET', path: '/status/', query: '', address: HOST, host: `${HOST}:${adminPort}`, remoteAddress: HOST };
  const render = () => {
    const wire = toWire('GET', api(request) as Parameters<typeof toWire>[1]);
    const body = Buffer.from(wire.body);
    wire.release?.();
    return body;
  };
  // Warmed up first: the first renders make the nodes and writers a catalog keeps.
  render();
  const { reads, body } = recordReads(render);
  const { runs, numbers } = template(body);
  const write = minimalWriter(runs, numbers);
  if (!Buffer.from(write()).equals(body)) {
    console.error('the floor writer does not give back the recorded render');
    process.exit(1);
  }
  const replay = () => {
    for (let i = 0; i < reads.length; i++) reads[i]();
  };
  const uWS = createRequire(import.meta.url)('uWebSockets.js') as typeof UWS;
  uWS._cfg('silent');
  uWS
    .App()
    .get('/status/', (res) => {
      inReadPass(replay);
      res.writeHeader('Content-Type', 'application/json').end(write());
    })
    // What the bench's readiness probe asks for.
    .any('/*', (res) => {
      res.writeStatus('404 Not Found').end();
    })
    .listen(HOST, port, (socket) => {
      if (!socket) {
        console.error(`the floor server: cannot listen on ${HOST}:${port}`);
        process.exit(1);
      }
      console.error(`the floor server: ${reads.length} reads and ${numbers.length} numbers in ${runs.length} runs, ${body.length} bytes`);
    });
  process.on('SIGTERM', () => process.exit(0));
}
