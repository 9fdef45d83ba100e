// The proxy cache at run time, in a worker: each request of a location with proxy_cache
// looks its key up in the shared keys (one call under the zone mutex), is served from
// the key's file, or goes to the peer through the proxy with a tap that writes the file
// and stores the key. $upstream_cache_status and /status/http/caches/<zone> follow what
// happened, as in nginx.
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CacheLookupState as S, type CacheEvicted, type CacheKeys } from '../../engine/index.js';
import { cache as cacheRecorder, type Cache, type CacheStatus } from '../../metrics/caches.js';
import type { StatusStore } from '../../metrics/store.js';
import type { ProxyFailure, ProxyTap, TappedProxy } from '../http/proxy-tap.js';
import { errorPagesOf } from '../http/error-pages.js';
import { NOT_MODIFIED_DROPS, preconditionOf } from '../http/not-modified.js';
import { sendPage } from '../http/pages.js';
import { partialAnswer, rangeOf, unsatisfiedRange, withHeaders } from '../http/range.js';

/** The statuses proxy_cache_use_stale can name. */
const STALE_STATUSES = new Set([403, 404, 429, 500, 502, 503, 504]);
import { compileValue } from '../config/variables.js';
import { requestContext, type HttpContext } from '../http/variables.js';
import type { CacheUse, CacheZone, StaleCondition } from './config.js';
import { encode, fileOf, md5, readCached, TEMP_DIR, type CachedFile, type CachedHead } from './files.js';
import { headerOf, sameVariant, validFor, validUntil, varyOf } from './policy.js';
import { PrebuiltAnswer, reusable, reusableHeaders } from './prebuilt.js';

/** The keys' table in the cache's zone. */
export const KEYS = 'cache/keys';
/** How often a request waiting for proxy_cache_lock looks again. */
const LOCK_POLL_MS = 10;
/** Responses larger than this are passed on, not cached. */
export const MAX_CACHED_BODY = 64 * 1024 * 1024;
/** A worker's copies of recent bodies, so that a hit need not read its file again. */
const MEMO_BYTES = 32 * 1024 * 1024;
/** How long a worker trusts its copy of a file without looking at the file. */
const FILE_CHECK_MS = 1000;
/** Keys whose MD5 a worker remembers, in each of its two generations. */
const HASHED_KEYS = 4096;
/** A hit's prebuilt bytes are kept for bodies up to this size (they are a second copy). */
const PREBUILT_BODY = 1024 * 1024;
/** The client's conditional and range headers: not sent to the peer, whose answer must be
 * whole (nginx's proxy_set_header defaults with proxy_cache); they are zonal's to answer. */
const CONDITIONAL = new Set(['if-modified-since', 'if-none-match', 'if-match', 'if-unmodified-since', 'if-range', 'range']);

/** A cache key's MD5, and the memo's id of it (its bytes as a string, cheaper than hex). */
interface KeyHash {
  readonly md5: Buffer;
  readonly id: string;
}

/** The MD5s of recent keys: node:crypto's createHash cost a hit more than its lookup in
 * the shared keys. Two generations: a key found in the older one moves to the newer;
 * when the newer is full it becomes the older and the older goes. Keys in use stay, the
 * memory is bounded, and a hit reorders nothing. */
class KeyHashes {
  private current = new Map<string, KeyHash>();
  private previous = new Map<string, KeyHash>();

  of(key: string): KeyHash {
    let h = this.current.get(key);
    if (h !== undefined) return h;
    h = this.previous.get(key);
    if (h === undefined) {
      const digest = md5(key);
      h = { md5: digest, id: digest.toString('latin1') };
    }
    if (this.current.size >= HASHED_KEYS) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(key, h);
    return h;
  }
}

/** One cache (keys zone) in this worker: its keys, files, recorder and memo. */
export class CacheRuntime {
  readonly keys: CacheKeys;
  readonly recorder: Cache;
  readonly hashes = new KeyHashes();
  private readonly memo = new Map<string, { version: number; stamp: string; checked: number; file: CachedFile }>();
  private memoBytes = 0;
  private readonly madeDirs = new Set<string>();
  readonly sharded: boolean;

  constructor(
    readonly zone: CacheZone,
    status: StatusStore,
  ) {
    this.keys = status.zoneNamed(zone.name).cacheKeys(KEYS);
    this.recorder = cacheRecorder(status, zone.name);
    this.sharded = zone.paths.length > 1;
  }

  shardOf(key: Buffer): number {
    return this.zone.paths.length === 1 ? 0 : key.readUInt32LE(0) % this.zone.paths.length;
  }

  fileOf(key: Buffer, shard: number): string {
    const p = this.zone.paths[shard] ?? this.zone.paths[0];
    return fileOf(p.path, p.levels, key.toString('hex'));
  }

  /** The size changed by `delta` bytes in `shard`. */
  sized(delta: number, shard: number): void {
    if (delta !== 0) this.recorder.sizeChanged(delta, this.sharded ? this.zone.paths[shard]?.path : undefined);
  }

  /** Entries the keys let go of: their files go too. */
  removed(evicted: readonly CacheEvicted[]): void {
    for (const e of evicted) {
      if (!e.exists) continue;
      this.sized(-e.size, e.shard);
      this.forgetMemo(e.key.toString('latin1'));
      fs.rm(this.fileOf(e.key, e.shard), { force: true }, () => {});
    }
  }

  /** The key's file at `version`, from the memo or the disk; undefined when it is missing
   * or broken (then its key is forgotten). */
  read(key: Buffer, id: string, cacheKey: string, version: number, shard: number): CachedFile | undefined {
    const m = this.memo.get(id);
    const now = Date.now();
    // The version moves at every store by any worker; the file itself is looked at again
    // at most every FILE_CHECK_MS (nginx's open_file_cache_valid), a stat costing as much
    // as the rest of a hit: a copy serves only while the file is the one it was read from.
    if (m && m.version === version && m.file.head.key === cacheKey && now - m.checked < FILE_CHECK_MS) return m.file;
    const path = this.fileOf(key, shard);
    const stamp = stampOf(path);
    if (m && m.version === version && m.stamp === stamp && m.file.head.key === cacheKey) {
      m.checked = now;
      return m.file;
    }
    const file = stamp === undefined ? undefined : readCached(path, cacheKey);
    if (!file) {
      this.forgetMemo(id);
      this.sized(this.keys.forget(key), shard);
      return undefined;
    }
    this.remember(id, version, stamp!, file);
    return file;
  }

  /** Writes the response's file and stores its key; false when it could not be written. */
  write(key: Buffer, head: CachedHead, body: readonly Buffer[]): { version: number; size: number } | undefined {
    const shard = this.shardOf(key);
    const p = this.zone.paths[shard];
    const file = this.fileOf(key, shard);
    const chunks = encode(head, body);
    const temp = path.join(p.path, TEMP_DIR, `${path.basename(file)}.${process.pid}.${++temps}`);
    let size = 0;
    for (const c of chunks) size += c.length;
    try {
      this.dir(path.dirname(temp));
      this.dir(path.dirname(file));
      // Synchronous, as nginx writes without aio: the file is in place before the
      // response ends, so the client's next request finds it.
      const fd = fs.openSync(temp, 'w');
      try {
        fs.writevSync(fd, chunks);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(temp, file);
    } catch {
      fs.rmSync(temp, { force: true });
      this.keys.release(key);
      return undefined;
    }
    const stored = this.keys.store(key, Date.now(), head.validUntil, size, shard);
    if (stored.version === 0) {
      // No room for the key even after evicting: the file would be nobody's.
      fs.rmSync(file, { force: true });
      return undefined;
    }
    this.sized(stored.delta, shard);
    this.removed(stored.evicted);
    const stamp = stampOf(file);
    if (stamp !== undefined) this.remember(key.toString('latin1'), stored.version, stamp, { head, body: Buffer.concat(body), size });
    this.enforce();
    return { version: stored.version, size };
  }

  /** Above max_size after a store: the least recently used entries go at once, not only
   * at the manager's next pass. */
  private enforce(): void {
    const { size, shards } = this.keys.sizes();
    const max = this.maxSize();
    const over = (max > 0 && size > max) || this.zone.paths.some((p, i) => p.maxSize > 0 && shards[i] > p.maxSize);
    if (over) this.removed(this.keys.expire(Date.now(), Number.MAX_SAFE_INTEGER, max, this.shardMax(), 1000));
  }

  maxSize(): number {
    return this.sharded ? 0 : this.zone.paths[0].maxSize;
  }

  shardMax(): Float64Array {
    return this.sharded ? Float64Array.from(this.zone.paths.map((p) => p.maxSize)) : new Float64Array(0);
  }

  private dir(d: string): void {
    if (this.madeDirs.has(d)) return;
    fs.mkdirSync(d, { recursive: true });
    this.madeDirs.add(d);
  }

  private remember(id: string, version: number, stamp: string, file: CachedFile): void {
    if (file.size > MEMO_BYTES / 8) return;
    this.forgetMemo(id);
    this.memo.set(id, { version, stamp, checked: Date.now(), file });
    this.memoBytes += file.size;
    for (const [k, v] of this.memo) {
      if (this.memoBytes <= MEMO_BYTES) break;
      this.memo.delete(k);
      this.memoBytes -= v.file.size;
    }
  }

  private forgetMemo(id: string): void {
    const m = this.memo.get(id);
    if (!m) return;
    this.memo.delete(id);
    this.memoBytes -= m.file.size;
  }
}

let temps = 0;

/** A file's identity and last change: inode, size, mtime; undefined when it is gone. */
function stampOf(file: string): string | undefined {
  const st = fs.statSync(file, { throwIfNoEntry: false });
  return st ? `${st.ino}:${st.size}:${st.mtimeMs}` : undefined;
}

/** The caches of this worker, one per keys zone. */
const runtimes = new WeakMap<StatusStore, Map<string, CacheRuntime>>();

export function cacheRuntime(status: StatusStore, zone: CacheZone): CacheRuntime {
  let m = runtimes.get(status);
  if (!m) runtimes.set(status, (m = new Map()));
  let r = m.get(zone.name);
  if (!r) m.set(zone.name, (r = new CacheRuntime(zone, status)));
  return r;
}

/** What a response stands for in $upstream_cache_status. */
const STATUS_TEXT: Record<CacheStatus, string> = {
  hit: 'HIT',
  miss: 'MISS',
  expired: 'EXPIRED',
  stale: 'STALE',
  updating: 'UPDATING',
  revalidated: 'REVALIDATED',
  bypass: 'BYPASS',
};

/** A response nobody reads: a background update's. */
function sink(): ServerResponse {
  const nothing = () => {};
  return Object.assign(new EventEmitter(), {
    destroyed: false,
    headersSent: false,
    writeHead: nothing,
    setHeader: nothing,
    write: () => true,
    end: nothing,
    destroy: nothing,
  }) as unknown as ServerResponse;
}

/** proxy_cache in a location. */
export class LocationCache {
  private readonly key: (c: HttpContext) => string;
  private readonly bypass: Array<(c: HttpContext) => string>;
  private readonly noCache: Array<(c: HttpContext) => string>;
  private readonly methods: ReadonlySet<string>;
  private readonly stale: ReadonlySet<StaleCondition>;
  readonly runtime: CacheRuntime;
  /** Hits' bytes by the file (the worker's copy) they answer from, with this location's
   * add_header. */
  readonly prebuilt = new WeakMap<CachedFile, PrebuiltAnswer>();

  constructor(
    readonly use: CacheUse,
    status: StatusStore,
    private readonly proxy: TappedProxy,
  ) {
    this.key = compileValue(use.key);
    this.bypass = use.bypass.map(compileValue);
    this.noCache = use.noCache.map(compileValue);
    this.methods = new Set(use.methods);
    this.stale = new Set(use.useStale);
    this.runtime = cacheRuntime(status, use.zone);
  }

  staleOn(c: StaleCondition): boolean {
    return this.stale.has(c);
  }

  handle(req: IncomingMessage, res: ServerResponse, uri: string, captures: readonly string[] | undefined): void {
    if (!this.methods.has(req.method ?? 'GET')) return this.proxy.pass(req, res, uri, captures);
    new CachedRequest(this, req, res, uri, captures).start();
  }

  /** Whether any of `values` is set: not empty and not "0" (proxy_cache_bypass, proxy_no_cache). */
  static any(values: ReadonlyArray<(c: HttpContext) => string>, c: HttpContext): boolean {
    return values.some((v) => {
      const s = v(c);
      return s !== '' && s !== '0';
    });
  }

  keyOf(c: HttpContext): string {
    return this.key(c);
  }

  bypassed(c: HttpContext): boolean {
    return LocationCache.any(this.bypass, c);
  }

  notCached(c: HttpContext): boolean {
    return LocationCache.any(this.noCache, c);
  }

  get proxyTo(): TappedProxy {
    return this.proxy;
  }
}

/** One request of a cached location. */
class CachedRequest implements ProxyTap {
  /** What the cache key, its conditions and add_header read. */
  readonly context: HttpContext;
  cacheStatus = '';
  private status: CacheStatus = 'miss';
  private cacheKey = '';
  private md5!: Buffer;
  /** The memo's id of the key. */
  private id = '';
  /** The entry as found (expired or updating): what a stale or revalidated answer sends. */
  private found: CachedFile | undefined;
  private foundVersion = 0;
  /** This request may write the response (min_uses reached; not proxy_no_cache). */
  private store = false;
  /** This request holds the key's updating flag. */
  private holds = false;
  private background = false;
  // The peer's response, while it is read.
  private peerStatus = 0;
  private peerStatusText = '';
  private peerHeaders: string[] | undefined;
  private body: Buffer[] | undefined;
  /** The body's bytes read from the peer, kept or not: the status's `bytes`. */
  private bodyLength = 0;
  private cacheable = false;
  private validUntil = 0;
  /** The peer's response was kept from the client: answered at complete(). */
  private keptAs: 'revalidated' | 'stale' | 'background' | undefined;
  /** proxy_intercept_errors took the peer's answer; `written` when it was remembered. */
  private intercepted: { written: boolean } | undefined;
  private done = false;
  /** GET for a HEAD (proxy_cache_convert_head): the answer stored is a whole one. */
  readonly method: string | undefined;

  constructor(
    private readonly location: LocationCache,
    readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    readonly uri: string,
    /** `$1`..`$9` of an `if` condition, for the key and the peer's URI. */
    readonly captures: readonly string[] | undefined,
  ) {
    this.context = requestContext(req, res, uri, captures, {
      proxyHost: { get: () => location.proxyTo.upstream?.proxyHost },
      upstreamCacheStatus: { get: () => this.cacheStatus },
    });
    this.method = req.method === 'HEAD' && location.use.convertHead ? 'GET' : undefined;
  }

  private get runtime(): CacheRuntime {
    return this.location.runtime;
  }

  start(): void {
    const use = this.location.use;
    this.cacheKey = this.location.keyOf(this.context);
    const hash = this.runtime.hashes.of(this.cacheKey);
    this.md5 = hash.md5;
    this.id = hash.id;
    this.store = !this.location.notCached(this.context);
    if (this.location.bypassed(this.context)) {
      this.as('bypass');
      return this.fetch();
    }
    this.look(use.lock ? use.lockAge : 0, Date.now() + use.lockTimeout);
  }

  private as(status: CacheStatus): void {
    this.status = status;
    this.cacheStatus = STATUS_TEXT[status];
  }

  /** Looks the key up; waits while another request fetches it (proxy_cache_lock) until
   * `lockDeadline`, then fetches without writing. */
  private look(lockMs: number, lockDeadline: number): void {
    if (this.done) return;
    // A client that left while its request waited for the lock is owed nothing.
    if (this.req.socket?.destroyed) {
      this.done = true;
      return;
    }
    const use = this.location.use;
    const rt = this.runtime;
    const now = Date.now();
    const shard = rt.shardOf(this.md5);
    // An expired entry is flagged while one request updates it whatever proxy_cache_lock
    // says (use_stale updating and background updates need to know); a new key only
    // with proxy_cache_lock.
    const l = rt.keys.lookup(this.md5, now, use.minUses, lockMs > 0 ? lockMs : use.lockAge, lockMs > 0);
    rt.removed(l.evicted);
    this.holds = l.store && (l.state === S.Expired || (l.state === S.Miss && lockMs > 0));
    switch (l.state) {
      case S.Hit: {
        const file = rt.read(this.md5, this.id, this.cacheKey, l.version, shard);
        if (file && this.variantOf(file)) {
          this.as('hit');
          return this.serve(file);
        }
        // Missing, broken or another variant: fetched and written again (its uses
        // reached min_uses already).
        this.as('miss');
        return this.fetch();
      }
      case S.MissLocked:
        if (now < lockDeadline) {
          setTimeout(() => this.look(lockMs, lockDeadline), LOCK_POLL_MS);
          return;
        }
        // nginx: past proxy_cache_lock_timeout the request goes to the peer, and its
        // response is not cached.
        this.as('miss');
        this.store = false;
        return this.fetch();
      case S.Expired:
      case S.Updating: {
        const file = rt.read(this.md5, this.id, this.cacheKey, l.version, shard);
        if (file && this.variantOf(file)) {
          this.found = file;
          this.foundVersion = l.version;
        }
        if (l.state === S.Updating) {
          if (this.found && this.location.staleOn('updating')) {
            this.as('updating');
            return this.serve(this.found);
          }
          this.as('expired');
          this.store = false;
          return this.fetch();
        }
        this.as('expired');
        this.store &&= l.store;
        if (this.found && use.backgroundUpdate && this.location.staleOn('updating')) {
          // nginx: the stale response now, and a subrequest updates the entry.
          const update = new CachedRequest(this.location, this.req, sink(), this.uri, this.captures);
          update.background = true;
          update.cacheKey = this.cacheKey;
          update.md5 = this.md5;
          update.id = this.id;
          update.store = this.store;
          update.holds = this.holds;
          update.found = this.found;
          update.foundVersion = this.foundVersion;
          update.as('expired');
          this.holds = false;
          this.as('stale');
          this.serve(this.found);
          update.fetch();
          return;
        }
        return this.fetch();
      }
      case S.Exhausted:
        this.as('miss');
        this.store = false;
        return this.fetch();
      default:
        this.as('miss');
        this.store &&= l.store;
        return this.fetch();
    }
  }

  /** Whether the request asks for the variant the file holds (req.headers, which node:http
   * builds when first read, only when the file has a Vary). */
  private variantOf(file: CachedFile): boolean {
    return file.head.vary === undefined || sameVariant(file.head.vary, this.req.headers);
  }

  private fetch(): void {
    this.location.proxyTo.pass(this.req, this.res, this.uri, this.captures, this);
  }

  /** A response from the cache: its head with add_header's, then its body; or what a
   * request's conditions and ranges make of a 200 (nginx's not_modified and range
   * filters); or, for an error proxy_intercept_errors took, its error page again. */
  private serve(file: CachedFile): void {
    this.done = true;
    const res = this.res;
    const bytes = file.body.length;
    this.runtime.recorder.served(this.status, bytes);
    if (res.destroyed || res.headersSent) return;
    if (file.head.error) return this.answerStatus(file.head.status);
    const head = this.req.method === 'HEAD';
    // Most requests ask for neither conditions nor ranges: only theirs may reuse bytes.
    const filtered = file.head.status === 200 && asksAny(this.req.rawHeaders);
    if (filtered && this.filtered(file, head)) return;
    const add = this.location.proxyTo.addHeaders;
    // A hit is answered with the bytes of an earlier one (prebuilt.ts) when nothing but
    // the second can have changed them.
    const reuse = !filtered && this.status === 'hit' && (add === undefined || add.constant) && reusable(res);
    const now = reuse ? Date.now() : 0;
    if (reuse) {
      const prebuilt = this.location.prebuilt.get(file);
      if (prebuilt !== undefined && prebuilt.fits(res, now)) return prebuilt.send(res, head);
    }
    const headers = add ? [...file.head.headers] : (file.head.headers as string[]);
    add?.addTo(headers, file.head.status, this.context);
    res.writeHead(file.head.status, file.head.statusText, headers);
    if (reuse && bytes <= PREBUILT_BODY && reusableHeaders(headers)) {
      const prebuilt = PrebuiltAnswer.capture(res, file.body, now);
      if (prebuilt) this.location.prebuilt.set(file, prebuilt);
    }
    res.end(head ? undefined : file.body);
  }

  /** A 200 to a request with conditions or ranges: 412, 304, 416 or 206, as nginx answers
   * them from the entry's Last-Modified and ETag; false: the whole answer, as any. Ranges
   * only when the peer said Accept-Ranges (nginx's r->allow_ranges for a cached answer). */
  private filtered(file: CachedFile, head: boolean): boolean {
    const res = this.res;
    const add = this.location.proxyTo.addHeaders;
    const validators = { lastModified: file.head.lastModified, etag: file.head.etag };
    const precondition = preconditionOf(this.req, validators);
    if (precondition === 412) {
      this.answerStatus(412);
      return true;
    }
    if (precondition === 304) {
      const headers = withHeaders(file.head.headers, [], NOT_MODIFIED_DROPS);
      add?.addTo(headers, 304, this.context);
      res.writeHead(304, headers);
      res.end();
      return true;
    }
    const length = file.body.length;
    if (headerOf(file.head.headers, 'accept-ranges') === undefined) return false;
    const range = rangeOf(this.req, length, validators);
    if (range.kind === 'whole') return false;
    if (range.kind === 'unsatisfiable') {
      res.setHeader('Content-Range', unsatisfiedRange(length));
      this.answerStatus(416);
      return true;
    }
    const headers = [...file.head.headers];
    // add_header sees the 200 (its filter is before the range filter in nginx).
    add?.addTo(headers, 200, this.context);
    const partial = partialAnswer(range.ranges, length, headerOf(headers, 'content-type'));
    res.writeHead(206, withHeaders(headers, partial.headers, ['accept-ranges']));
    res.end(head ? undefined : Buffer.concat(partial.pieces.map((p) => (Buffer.isBuffer(p) ? p : file.body.subarray(p.start, p.end)))));
    return true;
  }

  /** zonal's own answer with `status`: the location's error_page for it (nginx's special
   * response), else nginx's page. */
  private answerStatus(status: number): void {
    const pages = errorPagesOf(this.res);
    if (pages) pages.answer(status);
    else sendPage(this.res, status, this.req.method === 'HEAD');
  }

  // ProxyTap

  requestHeaders(head: string[]): string[] {
    // The peer's answer must be a whole response: the client's conditions are zonal's
    // to answer, not the peer's; a revalidation sends the cached entry's own.
    const found = this.found;
    const revalidate = found !== undefined && this.location.use.revalidate && this.status === 'expired';
    if (!asksAny(head) && !revalidate) return head;
    const out: string[] = [];
    for (let i = 0; i < head.length; i += 2) if (!CONDITIONAL.has(head[i].toLowerCase())) out.push(head[i], head[i + 1]);
    if (found && revalidate) {
      if (found.head.lastModified) out.push('If-Modified-Since', found.head.lastModified);
      if (found.head.etag) out.push('If-None-Match', found.head.etag);
    }
    return out;
  }

  response(status: number, statusText: string, headers: string[], intercepted: boolean): boolean {
    const now = Date.now();
    if (status === 304 && this.found && this.location.use.revalidate && this.status === 'expired') {
      // Revalidated: valid again for what the 304 says, or proxy_cache_valid of the entry's status.
      const until = validUntil(this.found.head.status, headers, now, this.location.use.valid, this.location.proxyTo.ignoreHeaders) || now + validFor(this.location.use.valid, this.found.head.status);
      if (until > now) this.runtime.keys.refresh(this.md5, until);
      else this.release();
      this.holds = false;
      this.keptAs = this.background ? 'background' : 'revalidated';
      return false;
    }
    if (this.found && this.staleFor(status)) {
      this.keptAs = this.background ? 'background' : 'stale';
      this.release();
      return false;
    }
    this.validUntil = this.store ? validUntil(status, headers, now, this.location.use.valid, this.location.proxyTo.ignoreHeaders) : 0;
    // A HEAD's answer has no body to store, unless it went to the peer as a GET.
    this.cacheable = this.validUntil > now && (this.req.method !== 'HEAD' || this.method === 'GET');
    if (intercepted) {
      // nginx remembers an intercepted error for as long as it may be cached (the
      // cache node's `error`): its status only, which the error page answers again.
      this.intercepted = { written: this.cacheable && this.writeEntry(status, statusText, [], true) };
      this.cacheable = false;
      this.release();
      if (this.background) this.keptAs = 'background';
      return !this.background;
    }
    if (this.cacheable) {
      this.peerStatus = status;
      this.peerStatusText = statusText;
      this.peerHeaders = storedHeaders(headers);
    }
    if (!this.cacheable) this.release();
    if (this.background) {
      this.keptAs = 'background';
      return false;
    }
    return true;
  }

  private staleFor(status: number): boolean {
    return STALE_STATUSES.has(status) && this.location.staleOn(`http_${status}` as StaleCondition);
  }

  data(chunk: Buffer): void {
    // Every byte read from the peer counts in the status's `bytes`, stored or not (a
    // response that is not cacheable, or grew past MAX_CACHED_BODY); only a cacheable
    // one keeps its chunks, and `bytes_written` is what complete() wrote.
    this.bodyLength += chunk.length;
    if (!this.cacheable) return;
    if (this.bodyLength > MAX_CACHED_BODY) {
      this.cacheable = false;
      this.body = undefined;
      this.release();
      return;
    }
    (this.body ??= []).push(chunk);
  }

  complete(): void {
    const kept = this.keptAs;
    if (kept === 'revalidated' || kept === 'stale') {
      this.as(kept);
      this.serve(this.found!);
      return;
    }
    this.done = true;
    let written: number | undefined;
    if (this.intercepted?.written) written = 0;
    if (this.cacheable) {
      const headers = this.peerHeaders!;
      // A chunked response is stored whole: its answers from the cache carry its length.
      if (headerOf(headers, 'content-length') === undefined) headers.push('Content-Length', String(this.bodyLength));
      if (this.writeEntry(this.peerStatus, this.peerStatusText, headers, false)) written = this.bodyLength;
    }
    this.body = undefined;
    // A background update is no response of its own.
    if (!this.background) this.runtime.recorder.served(this.status, this.bodyLength, written);
  }

  /** Writes the peer's answer (or, `error`, only its status) as the key's entry. */
  private writeEntry(status: number, statusText: string, headers: string[], error: boolean): boolean {
    // Only a 200 or 206 is revalidated and conditional: nginx keeps no validators of others.
    const validated = status === 200 || status === 206;
    const vary = varyOf(headers, this.req.headers, this.location.proxyTo.ignoreHeaders);
    const head: CachedHead = {
      key: this.cacheKey,
      status,
      statusText,
      headers,
      validUntil: this.validUntil,
      date: Date.now(),
      ...optional('lastModified', validated ? headerOf(headers, 'last-modified') : undefined),
      ...optional('etag', validated ? headerOf(headers, 'etag') : undefined),
      ...(vary ? { vary } : {}),
      ...(error ? { error } : {}),
      bodyLength: error ? 0 : this.bodyLength,
    };
    const stored = this.runtime.write(this.md5, head, error ? [] : (this.body ?? [])) !== undefined;
    this.holds = false;
    return stored;
  }

  failed(status: number, failure: ProxyFailure | 'client' | 'status'): boolean {
    this.release();
    this.body = undefined;
    if (failure === 'client') return false;
    if (this.background) return true;
    const stale = this.found && (failure === 'status' ? this.staleFor(status) : this.location.staleOn(failure));
    if (stale && !this.res.headersSent) {
      this.as('stale');
      this.serve(this.found!);
      return true;
    }
    if (!this.done) {
      this.done = true;
      // What was read before the peer failed (mid-body): read from it, never written.
      this.runtime.recorder.served(this.status, this.bodyLength);
    }
    return false;
  }

  private release(): void {
    if (!this.holds) return;
    this.holds = false;
    this.runtime.keys.release(this.md5);
  }
}

/** Whether a header list (name, value, ...) has one of CONDITIONAL (lengths first: most
 * names are not). */
function asksAny(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i];
    if (name.length >= 5 && name.length <= 19 && CONDITIONAL.has(name.toLowerCase())) return true;
  }
  return false;
}

/** The headers a cached response keeps: not the peer's Date, which each answer from the
 * cache gets afresh (node:http adds it, as nginx sends its own). */
function storedHeaders(headers: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) if (headers[i].length !== 4 || headers[i].toLowerCase() !== 'date') out.push(headers[i], headers[i + 1]);
  return out;
}

function optional<K extends string>(name: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: string };
}
