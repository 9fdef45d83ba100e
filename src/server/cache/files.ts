// Cache files as nginx lays them out: named by the MD5 of the cache key, in directories
// taken from the end of that name by `levels=` (1:2 gives c/29/b7f5...029c), the
// response's header and body in one file, written to a temporary file and renamed so a
// reader sees a whole file or none. A file that does not parse, whose body is not as long
// as its header says, or that holds another key, is no entry: a miss, never a crash.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const MAGIC = Buffer.from('ZONALC01');
/** Magic, then the header's length (4 bytes, little-endian). */
const PREFIX = MAGIC.length + 4;
/** A header longer than this is a broken file. */
const MAX_HEADER = 1 << 20;
/** Temporary files, beside the cache (one file system: rename, never copy). */
export const TEMP_DIR = '.temp';

export interface CachedHead {
  /** The cache key, as configured and evaluated. */
  readonly key: string;
  readonly status: number;
  readonly statusText: string;
  /** name, value, name, value: as the peer sent them (hop-by-hop ones left out). */
  readonly headers: readonly string[];
  /** ms since the epoch. */
  readonly validUntil: number;
  /** When it was stored (ms since the epoch). */
  readonly date: number;
  readonly lastModified?: string;
  readonly etag?: string;
  /** Vary: the request headers it names, lowercase, and their values when it was stored. */
  readonly vary?: ReadonlyArray<readonly [string, string]>;
  /** An error proxy_intercept_errors took: only its status is kept, no body. */
  readonly error?: boolean;
  readonly bodyLength: number;
}

export interface CachedFile {
  readonly head: CachedHead;
  readonly body: Buffer;
  /** Bytes of the whole file: what the entry counts in the cache's size. */
  readonly size: number;
}

export const md5 = (key: string): Buffer => createHash('md5').update(key).digest();

/** `levels=1:2` of a hex name: its last character, then the two before it. */
export function fileOf(root: string, levels: readonly number[], hex: string): string {
  const dirs: string[] = [];
  let end = hex.length;
  for (const n of levels) {
    dirs.push(hex.slice(end - n, end));
    end -= n;
  }
  return path.join(root, ...dirs, hex);
}

export function encode(head: CachedHead, body: Buffer | readonly Buffer[]): Buffer[] {
  const json = Buffer.from(JSON.stringify(head));
  const prefix = Buffer.alloc(PREFIX);
  MAGIC.copy(prefix);
  prefix.writeUInt32LE(json.length, MAGIC.length);
  return [prefix, json, ...(Buffer.isBuffer(body) ? [body] : body)];
}

/** The head of a file's bytes, or undefined when they are not a cache file. */
function headOf(bytes: Buffer, fileSize: number): { head: CachedHead; offset: number } | undefined {
  if (bytes.length < PREFIX || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const length = bytes.readUInt32LE(MAGIC.length);
  if (length > MAX_HEADER || PREFIX + length > bytes.length) return undefined;
  let head: CachedHead;
  try {
    head = JSON.parse(bytes.subarray(PREFIX, PREFIX + length).toString()) as CachedHead;
  } catch {
    return undefined;
  }
  if (!valid(head) || fileSize !== PREFIX + length + head.bodyLength) return undefined;
  return { head, offset: PREFIX + length };
}

function valid(h: CachedHead): boolean {
  return (
    typeof h === 'object' &&
    h !== null &&
    typeof h.key === 'string' &&
    Number.isInteger(h.status) &&
    h.status >= 100 &&
    h.status <= 999 &&
    typeof h.statusText === 'string' &&
    Array.isArray(h.headers) &&
    h.headers.length % 2 === 0 &&
    h.headers.every((v) => typeof v === 'string') &&
    Number.isFinite(h.validUntil) &&
    Number.isFinite(h.date) &&
    Number.isInteger(h.bodyLength) &&
    h.bodyLength >= 0 &&
    (h.error === undefined || typeof h.error === 'boolean') &&
    (h.vary === undefined || (Array.isArray(h.vary) && h.vary.every((p) => Array.isArray(p) && p.length === 2 && p.every((v) => typeof v === 'string'))))
  );
}

/** The whole file for `key`, or undefined when it is missing, broken or another key's. */
export function readCached(file: string, key: string): CachedFile | undefined {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch {
    return undefined;
  }
  const parsed = headOf(bytes, bytes.length);
  if (!parsed || parsed.head.key !== key) return undefined;
  return { head: parsed.head, body: bytes.subarray(parsed.offset), size: bytes.length };
}

/** The loader's view of a file: its head (read up to the header's end only) and size;
 * undefined when it is no cache file or not the file of its own name. */
export function readHead(file: string, hex: string): { head: CachedHead; size: number } | undefined {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'r');
    const size = fs.fstatSync(fd).size;
    const prefix = Buffer.alloc(PREFIX);
    if (fs.readSync(fd, prefix, 0, PREFIX, 0) !== PREFIX) return undefined;
    const length = prefix.subarray(0, MAGIC.length).equals(MAGIC) ? prefix.readUInt32LE(MAGIC.length) : -1;
    if (length < 0 || length > MAX_HEADER || PREFIX + length > size) return undefined;
    const bytes = Buffer.alloc(PREFIX + length);
    prefix.copy(bytes);
    if (fs.readSync(fd, bytes, PREFIX, length, PREFIX) !== length) return undefined;
    const parsed = headOf(bytes, size);
    if (!parsed || md5(parsed.head.key).toString('hex') !== hex) return undefined;
    return { head: parsed.head, size };
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

let temps = 0;

/** Writes the file through a temporary one renamed into place; resolves to its size. */
export async function writeCached(root: string, file: string, chunks: readonly Buffer[]): Promise<number> {
  const temp = path.join(root, TEMP_DIR, `${path.basename(file)}.${process.pid}.${++temps}`);
  let size = 0;
  for (const c of chunks) size += c.length;
  await fs.promises.mkdir(path.dirname(temp), { recursive: true });
  try {
    await fs.promises.writeFile(temp, chunks);
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    await fs.promises.rename(temp, file);
  } catch (e) {
    await fs.promises.rm(temp, { force: true });
    throw e;
  }
  return size;
}

/** Every file of the cache under `root` named by 32 hex digits, at the depth of `levels`. */
export async function* cacheFiles(root: string, levels: readonly number[]): AsyncGenerator<{ file: string; hex: string }> {
  async function* walk(dir: string, depth: number): AsyncGenerator<{ file: string; hex: string }> {
    let entries: fs.Dirent[];
    try {
      entries = await fs.promises.readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.name === TEMP_DIR) continue;
      const p = path.join(dir, e.name);
      if (depth < levels.length) {
        if (e.isDirectory() && e.name.length === levels[depth] && /^[0-9a-f]+$/.test(e.name)) yield* walk(p, depth + 1);
      } else if (e.isFile() && /^[0-9a-f]{32}$/.test(e.name)) {
        yield { file: p, hex: e.name };
      }
    }
  }
  yield* walk(root, 0);
}
