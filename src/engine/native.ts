// The only module that loads the addon. Everything else in src/ goes through engine/.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Kinds of directory entries, as native/layout.h numbers them. */
export const EntryKind = { Block: 1, Counters: 2, Cells: 3, Record: 4 } as const;
export type EntryKind = (typeof EntryKind)[keyof typeof EntryKind];

export interface NativeSlotStats {
  used: number;
  free: number;
  reqs: number;
  fails: number;
}

export interface NativeSlabStats {
  pages: { used: number; free: number };
  slots: Record<string, NativeSlotStats>;
}

export interface NativeZoneInfo {
  size: number;
  poolSize: number;
  pageSize: number;
  workerSlots: number;
  creatorPid: number;
  createdMs: number;
  entries: number;
  recoveries: number;
  layoutVersion: number;
}

export interface NativeZone {
  readonly buffer: ArrayBuffer;
  info(): NativeZoneInfo;
  alloc(size: number): number;
  free(offset: number): boolean;
  /** pages used, pages free, then used, free, reqs, fails per slot size from 8 up; into
   * `out` when it is large enough. */
  slabStatsPacked(out?: Float64Array): Float64Array;
  check(): string;
  /** [offset, size, created (1|0)], or null when the zone has no room. */
  ensure(key: string, kind: EntryKind, size: number): [number, number, number] | null;
  /** [offset, size, kind], or null. */
  find(key: string): [number, number, EntryKind] | null;
  drop(key: string): boolean;
  entries(): Array<[string, EntryKind, number, number]>;
  /** 1 written, 0 no room, -1 the generation was not `expected` (nothing written). */
  writeRecord(offset: number, content: Uint8Array, expected?: number): number;
  readRecord(offset: number): Buffer;
  claim(slot?: number): number;
  release(slot: number): void;
  detach(): void;
  stallAfter(writes: number): void;
  /** The proxy cache's keys (native/cache.h); 0 when the zone has no room for the table. */
  cacheTable(key: string): number;
  /** Writes state, store (1|0), version, size and valid-until into `out`; returns the evicted. */
  cacheLookup(table: number, key: Uint8Array, now: number, minUses: number, lockMs: number, lockMisses: boolean, out: Float64Array): Array<[Buffer, number, number, boolean]> | null;
  cacheStore(table: number, key: Uint8Array, now: number, validUntil: number, size: number, shard: number): [number, number, Array<[Buffer, number, number, boolean]> | null];
  cacheRelease(table: number, key: Uint8Array): void;
  cacheRefresh(table: number, key: Uint8Array, validUntil: number): boolean;
  cacheForget(table: number, key: Uint8Array): number;
  cacheLoad(table: number, key: Uint8Array, now: number, validUntil: number, size: number, shard: number): [number, Array<[Buffer, number, number, boolean]> | null];
  cacheExpire(table: number, now: number, inactiveMs: number, maxSize: number, shardMax: Float64Array, max: number): Array<[Buffer, number, number, boolean]>;
  cacheSizes(table: number): number[];
  cacheCheck(table: number): string;
  /** The limit table under `key` (kind 1 request, 2 connection), made on first use: its
   * offset, or null when the zone has no room. */
  limitTable(key: string, kind: number): number | null;
  limitReq(table: number, key: string | Uint8Array, rate: number, burst: number, mode: number, nowMs?: number): number;
  limitConnAcquire(table: number, key: string | Uint8Array, limit: number, slot: number): number;
  limitConnRelease(table: number, key: string | Uint8Array, slot: number): boolean;
  limitConnRepair(table: number, slot: number): number;
  limitPeek(table: number, key: string | Uint8Array): number;
  limitNodes(table: number): number;
  limitCheck(table: number): string;
}

export interface NativeZoneStatic {
  create(instance: string, name: string, size: number, workerSlots: number): NativeZone;
  attach(instance: string, name: string): NativeZone;
  remove(instance: string, name: string): boolean;
  removeStale(instance?: string): number;
}

interface Addon {
  NativeZone: NativeZoneStatic;
  pageSize: number;
  layoutVersion: number;
  maxWorkerSlots: number;
  /** Byte offset in a zone of its bitmap of slots ever claimed for writing (32 per word). */
  writtenSlotsOffset: number;
}

// Counters are written as their low 32-bit halves (see counters.ts): that needs the
// little-endian word order of every platform Node ships for on Linux.
if (endianness() !== 'LE') throw new Error('zonal needs a little-endian machine');

// The package's root holds binding.gyp: two folders up from src/engine (the tests run the
// sources), three from dist/src/engine (everything else). node-gyp-build loads from there
// the addon built in this checkout (build/Release: the source build of a clone, or the
// fallback build of an install on a platform without a prebuild), else the prebuilt one
// that matches this platform (prebuilds/<platform>-<arch>/, shipped in the package).
function load(): Addon {
  const require = createRequire(import.meta.url);
  const root = ['../..', '../../..'].map((up) => fileURLToPath(new URL(`${up}/`, import.meta.url))).find((dir) => existsSync(join(dir, 'binding.gyp')));
  if (root === undefined) throw new Error(`zonal: binding.gyp is missing beside ${fileURLToPath(import.meta.url)}: the package is incomplete`);
  const nodeGypBuild = require('node-gyp-build') as (dir: string) => Addon;
  try {
    return nodeGypBuild(root);
  } catch (e) {
    const message = (e as Error).message;
    if (!message.startsWith('No native build was found')) throw e;
    throw new Error(
      `zonal: no prebuilt addon for ${process.platform}-${process.arch} in ${root}prebuilds, and none built. ` +
        'Build it from source (a C++17 compiler, make and python3 needed): `npm rebuild zonal` in your app runs ' +
        "zonal's install script, node-gyp-build, which builds it when no prebuild loads (an npm that asks to approve " +
        'install scripts first needs `npm install-scripts approve zonal`). ' +
        `node-gyp-build said: ${message.trim()}`,
    );
  }
}

export const addon: Addon = load();
