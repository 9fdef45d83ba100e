// Seqlocked records: a variable-size value that one process writes under the zone mutex
// and every other process reads without a lock. A reader gets the old or the new value,
// never a mix, and learns whether anything changed with one atomic load.
import type { NativeZone } from './native.js';
import type { ZoneViews } from './views.js';

export class SeqRecord {
  readonly key: string;
  readonly offset: number;
  private readonly native: NativeZone;
  private readonly u32: Uint32Array;
  private readonly seqIndex: number;
  private cachedSeq = -1;
  private cachedValue: unknown = undefined;

  constructor(native: NativeZone, views: ZoneViews, key: string, offset: number) {
    this.native = native;
    this.u32 = views.u32;
    this.key = key;
    this.offset = offset;
    this.seqIndex = offset / 4;
  }

  /** Number of writes published so far. Cheap enough to check on every request. */
  get generation(): number {
    return Atomics.load(this.u32, this.seqIndex) >>> 1;
  }

  changedSince(generation: number): boolean {
    return this.generation !== generation;
  }

  /** Publishes new content; false when the zone has no room (the old content stays). */
  write(content: Uint8Array): boolean {
    return this.native.writeRecord(this.offset, content) === 1;
  }

  /** Publishes new content only if the record is still at `generation` (no other write
   * came in between): 'written', 'no-room' (the old content stays) or 'conflict'. */
  writeIf(content: Uint8Array, generation: number): 'written' | 'no-room' | 'conflict' {
    const r = this.native.writeRecord(this.offset, content, generation);
    return r === 1 ? 'written' : r === 0 ? 'no-room' : 'conflict';
  }

  read(): Buffer {
    return this.native.readRecord(this.offset);
  }

  writeJSON(value: unknown): boolean {
    return this.write(Buffer.from(JSON.stringify(value)));
  }

  /** The record's content parsed as JSON (undefined while empty), decoded again only
   * when the record's sequence has moved since the last call. */
  readJSON<T>(): T | undefined {
    const seq = Atomics.load(this.u32, this.seqIndex);
    if (seq !== this.cachedSeq) {
      const content = this.read();
      this.cachedValue = content.length ? JSON.parse(content.toString('utf8')) : undefined;
      this.cachedSeq = seq;
    }
    return this.cachedValue as T | undefined;
  }
}
