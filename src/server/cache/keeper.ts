// The cache loader and the cache manager, run by one worker for the whole server (the
// primary names it; see README): the loader indexes the files already on disk at start,
// `cold` until it has finished, while the workers serve; the manager removes entries
// unused for `inactive`, and the least recently used ones while a cache (or a shard) is
// above its max_size.
import fs from 'node:fs';
import { md5 } from './files.js';
import { cacheFiles, readHead } from './files.js';
import type { CacheZone } from './config.js';
import { cacheRuntime, type CacheRuntime } from './runtime.js';
import type { StatusStore } from '../../metrics/store.js';

/** The manager's pass: how often, and how many entries at most each time. */
const MANAGER_MS = 1000;
const MANAGER_FILES = 1000;

export class CacheKeeper {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly runtimes: CacheRuntime[];

  constructor(
    zones: readonly CacheZone[],
    status: StatusStore,
  ) {
    this.runtimes = zones.map((z) => cacheRuntime(status, z));
  }

  /** Marks every cache cold, then loads them one after the other; resolves when all are. */
  start(): Promise<void> {
    for (const rt of this.runtimes) {
      rt.recorder.setCold(true);
      if (rt.sharded) for (const p of rt.zone.paths) rt.recorder.setCold(true, p.path);
    }
    this.timer = setInterval(() => this.manage(), MANAGER_MS);
    this.timer.unref();
    return (async () => {
      for (const rt of this.runtimes) await this.load(rt);
    })();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  private async load(rt: CacheRuntime): Promise<void> {
    for (const [shard, p] of rt.zone.paths.entries()) {
      let inBatch = 0;
      for await (const { file, hex } of cacheFiles(p.path, p.levels)) {
        if (this.stopped) return;
        const found = readHead(file, hex);
        if (!found) {
          // Not a whole cache file of its own name: nginx's loader removes it too.
          fs.rmSync(file, { force: true });
          continue;
        }
        const key = md5(found.head.key);
        const loaded = rt.keys.load(key, Date.now(), found.head.validUntil, found.size, shard);
        rt.sized(loaded.delta, shard);
        rt.removed(loaded.evicted);
        // loader_files and loader_sleep: the worker serves between batches.
        if (++inBatch >= p.loaderFiles) {
          inBatch = 0;
          await new Promise((r) => setTimeout(r, p.loaderSleep));
        }
      }
      if (rt.sharded) rt.recorder.setCold(false, p.path);
    }
    rt.recorder.setCold(false);
  }

  private manage(): void {
    const now = Date.now();
    for (const rt of this.runtimes) {
      try {
        rt.removed(rt.keys.expire(now, rt.zone.inactive, rt.maxSize(), rt.shardMax(), MANAGER_FILES));
      } catch {
        // A zone gone in a reload: the next configuration's keeper takes over.
      }
    }
  }
}
