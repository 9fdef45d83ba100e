// relay(): one direction of a stream session, on real loopback sockets set up as the
// stream plane sets them up (the source accepted by a server and paused, the destination
// connected). Each case runs on the fast path (plain sockets: a read buffer shared by
// the worker and direct writes) and on node's general path, and both must deliver the
// same bytes intact, in order, report the same sizes, and pass the end on: a fast
// writer against a reader that stops now and then (what the destination's socket does
// not take is queued and the source pauses), and bytes node had read into the paused
// source before the relay began, its end included.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { relay } from '../../../src/server/stream/relay.js';
import { eventually, freePorts } from '../zonal.js';

/** The stream plane's queue before a side pauses. */
const QUEUED = 256 * 1024;
/** What the writer repeats: a prime length, so no read lines up with it. */
const PATTERN = randomBytes(65_521);

interface Received {
  bytes: number;
  /** The offset of the first byte that differed from the pattern, or -1. */
  firstWrong: number;
  ended: boolean;
}

/** A server whose one connection is read slowly: after every `stallEvery` bytes it stops
 * reading for `stallMs`. Every byte is checked against the pattern. */
function slowReader(port: number, stallEvery: number, stallMs: number): { server: Server; done: Promise<Received> } {
  let resolve!: (r: Received) => void;
  const done = new Promise<Received>((r) => (resolve = r));
  const server = createServer({ allowHalfOpen: true }, (s) => {
    const got: Received = { bytes: 0, firstWrong: -1, ended: false };
    s.on('data', (d: Buffer) => {
      for (let i = 0; i < d.length && got.firstWrong < 0; i++) if (d[i] !== PATTERN[(got.bytes + i) % PATTERN.length]) got.firstWrong = got.bytes + i;
      const before = got.bytes;
      got.bytes += d.length;
      if (Math.floor(got.bytes / stallEvery) !== Math.floor(before / stallEvery)) {
        s.pause();
        setTimeout(() => s.resume(), stallMs);
      }
    });
    s.on('end', () => {
      got.ended = true;
      s.end();
    });
    s.on('close', () => resolve(got));
  });
  server.listen(port, '127.0.0.1');
  return { server, done };
}

/** Writes `total` bytes of the pattern as fast as `s` takes them, then ends it. */
async function writeAll(s: Socket, total: number): Promise<void> {
  const piece = Buffer.concat([PATTERN, PATTERN, PATTERN, PATTERN]);
  let sent = 0;
  while (sent < total) {
    const n = Math.min(piece.length - (sent % PATTERN.length), total - sent);
    const ok = s.write(piece.subarray(sent % PATTERN.length, (sent % PATTERN.length) + n));
    sent += n;
    if (!ok) await new Promise((r) => s.once('drain', r));
  }
  s.end();
}

interface Run {
  fast: boolean;
  /** The source held the whole transfer before the relay began. */
  preread: boolean;
  moved: number;
  reads: number;
  /** The most the destination had queued when a read came: above 0, the reader held it back. */
  mostQueued: number;
  received: Received;
}

/** Sets up a source (accepted, paused) and a destination (connected to a slow reader),
 * lets `before` act on the source, relays, and writes `total` bytes through. */
async function run(general: boolean, total: number, options: { stallEvery: number; stallMs: number; endFirst?: boolean }): Promise<Run> {
  const [inPort, outPort] = await freePorts(2);
  const reader = slowReader(outPort, options.stallEvery, options.stallMs);
  let accepted!: (s: Socket) => void;
  const source = new Promise<Socket>((r) => (accepted = r));
  const front = createServer({ allowHalfOpen: true, highWaterMark: QUEUED }, (s) => {
    s.pause();
    accepted(s);
  });
  await new Promise<void>((r) => front.listen(inPort, '127.0.0.1', () => r()));
  try {
    const writer = connect({ port: inPort, host: '127.0.0.1', allowHalfOpen: true });
    writer.on('error', () => {});
    const src = await source;
    // The whole transfer and its end already read by node into the paused source.
    let preread = false;
    if (options.endFirst) {
      await writeAll(writer, total);
      preread = await eventually(async () => src.readableLength === total);
    }
    // As the plane connects to a peer (highWaterMark is a stream option connect's types leave out).
    const peer = { port: outPort, host: '127.0.0.1', allowHalfOpen: true, noDelay: true, highWaterMark: QUEUED };
    const dst = connect(peer);
    await new Promise((r) => dst.once('connect', r));
    const result: Omit<Run, 'received'> = { fast: false, preread, moved: 0, reads: 0, mostQueued: 0 };
    result.fast = relay(
      src,
      dst,
      (n) => {
        result.moved += n;
        result.reads++;
        result.mostQueued = Math.max(result.mostQueued, dst.writableLength);
      },
      { general },
    );
    src.on('end', () => dst.end());
    const writing = options.endFirst ? Promise.resolve() : writeAll(writer, total);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('not over in 60 s')), 60_000)));
    const received = await Promise.race([reader.done, timeout]);
    clearTimeout(timer);
    await writing;
    writer.destroy();
    src.destroy();
    return { ...result, received };
  } finally {
    front.close();
    reader.server.close();
  }
}

t.test('a fast writer, a reader that stops now and then: every byte intact, on both paths', async (t) => {
  const total = 48 * 1024 * 1024;
  const runs: Run[] = [];
  for (const general of [false, true]) {
    const r = await run(general, total, { stallEvery: 4 * 1024 * 1024, stallMs: 60 });
    const path = general ? 'general path' : 'fast path';
    t.equal(r.fast, !general, `${path}: relay() says which path it took`);
    t.equal(r.received.bytes, total, `${path}: every byte arrived`);
    t.equal(r.received.firstWrong, -1, `${path}: intact and in order`);
    t.ok(r.received.ended, `${path}: the end was passed on`);
    t.equal(r.moved, total, `${path}: the sizes reported add up to what was sent`);
    t.ok(r.mostQueued > 0, `${path}: the reader held the bytes back (${r.mostQueued} bytes queued at most)`);
    t.ok(r.mostQueued <= QUEUED + 256 * 1024, `${path}: the queue stays bounded (${r.mostQueued} bytes)`);
    runs.push(r);
  }
  t.same(runs[0].received, runs[1].received, 'both paths tell the same');
});

t.test('what node read into the paused source before the relay, its end included, goes first', async (t) => {
  const total = 200_000;
  for (const general of [false, true]) {
    const r = await run(general, total, { stallEvery: 64 * 1024, stallMs: 5, endFirst: true });
    const path = general ? 'general path' : 'fast path';
    t.equal(r.fast, !general, `${path}: relay() says which path it took`);
    t.ok(r.preread, `${path}: node had read all ${total} bytes into the source before`);
    t.equal(r.received.bytes, total, `${path}: every byte arrived`);
    t.equal(r.received.firstWrong, -1, `${path}: intact and in order`);
    t.ok(r.received.ended, `${path}: the end came after them`);
    t.equal(r.moved, total, `${path}: and their sizes were reported`);
  }
});
