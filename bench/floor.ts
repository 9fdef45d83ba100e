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
// the API's routing.
//
// The same floor behind zonal's API (`--floor-api`): serveApi, as the admin listener
// serves, and createApi's routing, Host check, writer and headers, all zonal's own code,
// with only the status root's write replaced by the floor's. What a renderer costing no
// more than the floor would measure on the admin listener: the target of `full_tree` is
// measured against it. Not a benchmark: scripts/bench.mjs lists it among its HELPERS.
import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';
import { createApi, type ApiHandler, type ApiRequest } from '../src/api/index.js';
import { AtomicCells, CounterBlock, inReadPass, INSTANCE_ENV, Zone } from '../src/engine/index.js';
import { putUint, type JsonWriter } from '../src/metrics/json.js';
import type { RenderContext } from '../src/metrics/shape.js';
import { Status } from '../src/metrics/status.js';
import { ObjectNode } from '../src/metrics/tree.js';
import { toWire } from '../src/transport/common.js';
import { serveApi } from '../src/transport/uws.js';
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

/** Writes the runs and numbers at `p` of `out` (`view` its DataView), which has `size`
 * bytes of room from there; returns the position after them. */
interface RunsWriter {
  readonly size: number;
  write(out: Buffer, view: DataView, p: number): number;
}

function runsWriter(runs: Buffer[], numbers: number[]): RunsWriter {
  const all = Buffer.concat(runs);
  const allView = new DataView(all.buffer, all.byteOffset, all.length);
  const at = new Uint32Array(runs.length + 1);
  for (let i = 0; i < runs.length; i++) at[i + 1] = at[i] + runs[i].length;
  const values = Float64Array.from(numbers);
  return {
    size: all.length + 32 * numbers.length,
    write(out, view, p) {
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
      return p;
    },
  };
}

/** What the floor replays and writes: the reads and bytes of one render of GET /status/
 * through `api`, the document without the newline that ends it (the API writes that). */
interface Floor {
  readonly reads: number;
  readonly numbers: number;
  readonly runs: number;
  /** The recorded render, newline included. */
  readonly body: Buffer;
  replay(): void;
  readonly writer: RunsWriter;
}

function floorOf(api: ApiHandler, request: ApiRequest): Floor {
  const render = () => {
    const wire = toWire('GET', api(request) as Parameters<typeof toWire>[1]);
    const body = Buffer.from(wire.body);
    wire.release?.();
    return body;
  };
  // Warmed up first: the first renders make the nodes and writers a catalog keeps.
  render();
  const { reads, body } = recordReads(render);
  const document = body.subarray(0, body.length - 1);
  const { runs, numbers } = template(document);
  const writer = runsWriter(runs, numbers);
  const out = Buffer.alloc(writer.size);
  if (!out.subarray(0, writer.write(out, new DataView(out.buffer, out.byteOffset, out.length), 0)).equals(document)) {
    console.error('the floor writer does not give back the recorded render');
    process.exit(1);
  }
  const replay = () => {
    for (let i = 0; i < reads.length; i++) reads[i]();
  };
  return { reads: reads.length, numbers: numbers.length, runs: runs.length, body, replay, writer };
}

/** The API of the zonal server whose primary is `primaryPid`, serving the whole tree as its
 * admin listener on `adminPort` does (its `address`, its configuration files shown). */
function attached(primaryPid: number, adminPort: number): { api: ApiHandler; request: ApiRequest } {
  // The primary's instance: the one it inherited (this process has the same environment),
  // or, with none, the one it named after itself.
  const instance = process.env[INSTANCE_ENV] ?? `p${primaryPid}`;
  const status = Status.attach({ instance, writer: false });
  const api = createApi({ status, mounts: [{ location: '/', api: '/', configFiles: true }] });
  const request = { method: 'GET', path: '/status/', query: '', address: HOST, host: `${HOST}:${adminPort}`, remoteAddress: HOST };
  return { api, request };
}

function told(what: string, port: number, floor: Floor): void {
  console.error(`${what}: ${floor.reads} reads and ${floor.numbers} numbers in ${floor.runs} runs, ${floor.body.length} bytes, on ${HOST}:${port}`);
}

/** `--floor <port> <primaryPid> <adminPort>`: the floor server, on `port`, of the zonal
 * server whose primary is `primaryPid` and whose admin listener is on `adminPort`. */
export function floorServer(port: number, primaryPid: number, adminPort: number): void {
  const { api, request } = attached(primaryPid, adminPort);
  const floor = floorOf(api, request);
  const out = Buffer.allocUnsafe(floor.writer.size + 1);
  const view = new DataView(out.buffer, out.byteOffset, out.length);
  const uWS = createRequire(import.meta.url)('uWebSockets.js') as typeof UWS;
  uWS._cfg('silent');
  uWS
    .App()
    .get('/status/', (res) => {
      inReadPass(floor.replay);
      const end = floor.writer.write(out, view, 0);
      out[end] = 0x0a;
      res.writeHeader('Content-Type', 'application/json').end(out.subarray(0, end + 1));
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
      told('the floor server', port, floor);
    });
  process.on('SIGTERM', () => process.exit(0));
}

/** `--floor-api <port> <primaryPid> <adminPort>`: the floor behind zonal's API on `port`. */
export async function floorApiServer(port: number, primaryPid: number, adminPort: number): Promise<void> {
  const { api, request } = attached(primaryPid, adminPort);
  const floor = floorOf(api, request);
  // The status root is the object the API writes at depth 0 for GET /status/: found at
  // the next answer, then written as the floor writes, inside the API's own read pass.
  const write = ObjectNode.prototype.write;
  let root: ObjectNode | undefined;
  ObjectNode.prototype.write = function (this: ObjectNode, w: JsonWriter, depth: number, ctx: RenderContext): boolean {
    if (root === undefined && depth === 0) root = this;
    if (this !== root) return write.call(this, w, depth, ctx);
    floor.replay();
    w.room(floor.writer.size);
    w.pos = floor.writer.write(w.buf, w.view, w.pos);
    return true;
  };
  const answer = api(request)!;
  if (!Buffer.from(answer.body as Uint8Array).equals(floor.body)) {
    console.error("the floor behind the API does not give back the recorded render");
    process.exit(1);
  }
  answer.release?.();
  try {
    await serveApi({ host: HOST, port, handler: api });
  } catch (e) {
    console.error(`the floor behind the API: ${(e as Error).message}`);
    process.exit(1);
  }
  told('the floor behind the API', port, floor);
  process.on('SIGTERM', () => process.exit(0));
}
