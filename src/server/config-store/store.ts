// The configuration store (issue 34): the upstreams' peers of a fleet of instances kept
// in etcd. The primary holds the one client and the one watch of the instance: it seeds
// the keys, applies what the watch delivers through the peers' compare-and-swap
// (changePeers) where every worker reads it, and commits the /config writes its workers
// forward to it (api/config.ts computes them; ConfigStore.commit sends them).
//
// One endpoint is used at a time (the one /status/config_store names): a watch that ends,
// a probe or a write that gets no answer in `timeout=` moves to the next, with backoff.
// A probe (a linearizable read, which needs a quorum) runs every second, so that a member
// that stops answering without closing its connections (SIGSTOP) or loses its quorum is
// left even while nothing is written.
//
// Every change is applied with its key's revision (PeerSet.revision) and only when it is
// newer than what the upstream has: a change the write applied and the watch delivers
// again, or one a resumed watch repeats, is not applied twice. What was applied is kept
// in the `cache=` file, so that a start while etcd is unreachable serves it.
import fs from 'node:fs';
import path from 'node:path';
import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import { peersOfStored, storedUpstream, type ConfigStore, type StoreCommit } from '../../api/config.js';
import type { PeerConfig, UpstreamConfig } from '../../metrics/catalog.js';
import { publishConfigStore, type ConfigStoreState } from '../../metrics/config-store.js';
import { peerSet } from '../../metrics/peers.js';
import type { Status } from '../../metrics/status.js';
import { changePeers, type Protocol } from '../../metrics/upstreams.js';
import type { Log } from '../log.js';
import type { ConfigStoreConfig } from './config.js';

/** Between two probes of the endpoint in use. */
const PROBE_MS = 1000;
/** Backoff between endpoints: from the first, doubling, to the most (well under the
 * second in which an instance catches up once etcd is back). */
const BACKOFF_FIRST_MS = 50;
const BACKOFF_MOST_MS = 400;

type Module = typeof import('etcd3');

interface Target {
  readonly protocol: Protocol;
  readonly u: UpstreamConfig;
}

/** The cache file: each key's last applied value and revision. */
interface Cache {
  revision: number;
  keys: Record<string, { revision: number; value: unknown }>;
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e)).split('\n')[0];

export class EtcdStore implements ConfigStore {
  private client?: Etcd3;
  private watcher?: Watcher;
  private index = 0;
  private backoff = BACKOFF_FIRST_MS;
  private targets = new Map<string, Target>();
  private state: { -readonly [K in keyof ConfigStoreState]: ConfigStoreState[K] };
  /** The store's revision the watch has delivered up to: where a new connection resumes. */
  private revision = 0;
  /** The watch was cancelled (etcd compacted past `revision`): the next connection reads all. */
  private compacted = false;
  private cache: Cache = { revision: 0, keys: {} };
  private probe?: NodeJS.Timeout;
  private retry?: NodeJS.Timeout;
  private connecting?: Promise<boolean>;
  private closed = false;
  /** Set once the store answered after being connected: a later answer is a reconnect. */
  private wasConnected = false;
  private password?: string;

  private constructor(
    private readonly etcd: Module,
    private config: ConfigStoreConfig,
    private readonly status: Status,
    private readonly log: Log,
  ) {
    this.state = { endpoint: config.endpoints[0], connected: false, revision: 0, watchEvents: 0, failedWrites: 0, reconnects: 0, lastError: null };
  }

  /** Loads the client (only a configuration with `config_store` does), applies the
   * cache file, and connects: the start waits for the first connection at most `wait`
   * milliseconds, then goes on serving what it has while the store catches up. */
  static async start(config: ConfigStoreConfig, status: Status, log: Log, wait: number): Promise<EtcdStore> {
    const store = new EtcdStore(await import('etcd3'), config, status, log);
    store.targets = targetsOf(status, config.prefix);
    store.loadCache();
    store.publish();
    const first = store.connect();
    await Promise.race([first, new Promise((resolve) => setTimeout(resolve, wait).unref())]);
    return store;
  }

  /** Whether a reload may give this store `config`: the same endpoints and prefix (the
   * revisions applied are that cluster's; another's would not compare with them). */
  takes(config: ConfigStoreConfig): boolean {
    return config.endpoints.join(',') === this.config.endpoints.join(',') && config.prefix === this.config.prefix;
  }

  /** A reload: the upstreams may have changed (new ones are seeded), and the parameters. */
  reconfigure(config: ConfigStoreConfig): void {
    this.config = config;
    this.targets = targetsOf(this.status, config.prefix);
    // A new connection seeds the new upstreams and reads them (resumed from the revision
    // last seen otherwise); the one in use, with its watch, goes. Not a reconnect.
    clearInterval(this.probe);
    this.drop();
    this.state.connected = false;
    this.wasConnected = false;
    // After an attempt in flight with the client just dropped, which then gives up.
    void (this.connecting ?? Promise.resolve()).then(() => this.connect());
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    clearInterval(this.probe);
    this.drop();
  }

  // ---- Keys and values ------------------------------------------------------------

  /**
   * Applies a key's value at `revision` when it is newer than what its upstream has:
   * the one path for the seed, the watch, a write's commit and the cache file.
   */
  private apply(key: string, value: unknown, revision: number, from: string): boolean {
    const target = this.targets.get(key);
    if (!target) return false;
    const { protocol, u } = target;
    let refused: string | undefined;
    const result = changePeers(
      this.status,
      u,
      (peers, set) => {
        if (set.revision !== undefined && set.revision >= revision) return { error: 'stale' as const };
        const made = peersOfStored(protocol, u, value, peers);
        if ('error' in made) {
          refused = made.error;
          return { error: 'refused' as const };
        }
        return made;
      },
      undefined,
      revision,
    );
    if (refused !== undefined) this.failed(`the value of "${key}" at revision ${revision} (${from}) is refused: ${refused}`, 'warn');
    else if (!result.ok && result.error !== 'stale') this.failed(`upstream "${u.name}" could not take revision ${revision} of the store: ${'description' in result ? result.description : result.error}`);
    if (!result.ok) return false;
    this.cache.keys[key] = { revision, value };
    this.cache.revision = Math.max(this.cache.revision, revision);
    this.state.revision = Math.max(this.state.revision, revision);
    this.saveCache();
    return true;
  }

  private loadCache(): void {
    let text: string;
    try {
      text = fs.readFileSync(this.config.cache, 'utf8');
    } catch {
      return;
    }
    try {
      const cache = JSON.parse(text) as Cache;
      this.revision = cache.revision;
      for (const [key, { revision, value }] of Object.entries(cache.keys)) this.apply(key, value, revision, `the cache file ${this.config.cache}`);
      this.cache.revision = Math.max(this.cache.revision, cache.revision);
    } catch (e) {
      this.log('warn', `config_store: the cache file ${this.config.cache} is not valid, ignored: ${errorText(e)}`);
    }
  }

  private saveCache(): void {
    const temp = `${this.config.cache}.${process.pid}.tmp`;
    try {
      fs.mkdirSync(path.dirname(this.config.cache), { recursive: true });
      fs.writeFileSync(temp, JSON.stringify(this.cache));
      fs.renameSync(temp, this.config.cache);
    } catch (e) {
      this.log('warn', `config_store: the cache file ${this.config.cache} cannot be written: ${errorText(e)}`);
    }
  }

  // ---- Status -------------------------------------------------------------------

  private publish(): void {
    publishConfigStore(this.status, { ...this.state });
  }

  private failed(message: string, level: 'warn' | 'error' = 'error'): void {
    this.state.lastError = { message, time: Date.now() };
    this.log(level, `config_store: ${message}`);
    this.publish();
  }

  // ---- Connection ---------------------------------------------------------------

  private clientFor(endpoint: string): Etcd3 {
    const { Etcd3 } = this.etcd;
    const c = this.config;
    const tls = c.ca !== undefined;
    if (c.passwordFile !== undefined) this.password ??= fs.readFileSync(c.passwordFile, 'utf8').replace(/\r?\n$/, '');
    // Async: the client marks a failed endpoint by a call that throws at once, which
    // must become a rejection it catches, not an exception that ends the process.
    const noop = { execute: async <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T) => fn({ signal: new AbortController().signal }) };
    return new Etcd3({
      hosts: `${tls ? 'https' : 'http'}://${endpoint}`,
      dialTimeout: c.timeout,
      ...(tls
        ? {
            credentials: {
              rootCertificate: fs.readFileSync(c.ca!),
              ...(c.key !== undefined ? { privateKey: fs.readFileSync(c.key) } : {}),
              ...(c.cert !== undefined ? { certChain: fs.readFileSync(c.cert) } : {}),
            },
          }
        : {}),
      ...(c.user !== undefined ? { auth: { username: c.user, password: this.password! } } : {}),
      // Failing over is this module's: one endpoint, no retry, no circuit breaker.
      faultHandling: { host: () => noop as never, global: noop as never },
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + c.timeout }),
    });
  }

  private drop(): void {
    const client = this.client;
    this.client = undefined;
    this.watcher = undefined;
    client?.close();
  }

  /** Connects to the endpoint in turn (and when it fails, schedules the next): seeds
   * the keys, reads them, watches from there. True once connected. */
  private connect(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    this.connecting ??= this.connectOnce().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connectOnce(): Promise<boolean> {
    clearTimeout(this.retry);
    const endpoint = this.config.endpoints[this.index % this.config.endpoints.length];
    this.state.endpoint = endpoint;
    if (!this.client) this.client = this.clientFor(endpoint);
    const client = this.client;
    try {
      // Resumed from the revision last seen when every upstream has one (the watch then
      // brings what was missed, in order); a full read otherwise, and when etcd has
      // compacted past it.
      const resume = this.revision > 0 && !this.compacted && [...this.targets.values()].every(({ u }) => peerSet(this.status, u).revision !== undefined);
      // Seeding and reading are linearizable, as the probe is: connected means a quorum.
      await this.seed(client);
      if (resume) await client.get(`${this.config.prefix}/`).exec();
      else {
        const read = await client.getAll().prefix(`${this.config.prefix}/`).exec();
        for (const kv of read.kvs) this.applyKv(kv, 'a read of the store');
        this.revision = Math.max(this.revision, Number(read.header.revision));
        this.compacted = false;
      }
      await this.watch(client, this.revision + 1);
    } catch (e) {
      if (client !== this.client) return false;
      this.lost(`${endpoint}: ${errorText(e)}`);
      return false;
    }
    // Dropped meanwhile (a reload, a failure found by a write): not this attempt's to finish.
    if (client !== this.client) return false;
    if (this.wasConnected && !this.state.connected) this.state.reconnects++;
    this.wasConnected = true;
    this.state.connected = true;
    this.backoff = BACKOFF_FIRST_MS;
    this.publish();
    clearInterval(this.probe);
    this.probe = setInterval(() => void this.check(client), PROBE_MS).unref();
    return true;
  }

  /** Create-if-absent: an empty key takes this instance's peers (the file's, or its
   * state file's); one that holds data wins, and is read next. */
  private async seed(client: Etcd3): Promise<void> {
    for (const [key, { protocol, u }] of this.targets) {
      if (peerSet(this.status, u).revision !== undefined && this.cache.keys[key]) continue;
      const value = JSON.stringify(storedUpstream(peerSet(this.status, u).peers, protocol));
      const txn = await client.if(key, 'Create', '==', 0).then(client.put(key).value(value)).commit();
      if (txn.succeeded) this.log('notice', `config_store: seeded ${key} from the configuration`);
    }
  }

  private applyKv(kv: IKeyValue, from: string): boolean {
    let value: unknown;
    try {
      value = JSON.parse(kv.value.toString('utf8'));
    } catch (e) {
      this.failed(`the value of "${kv.key.toString('utf8')}" at revision ${kv.mod_revision} is not JSON: ${errorText(e)}`, 'warn');
      return false;
    }
    return this.apply(kv.key.toString('utf8'), value, Number(kv.mod_revision), from);
  }

  private async watch(client: Etcd3, from: number): Promise<void> {
    // A stream has no deadline of its own: one that is not created in time is a failure.
    const creating = client.watch().prefix(`${this.config.prefix}/`).startRevision(String(from)).create();
    const watcher = await Promise.race([creating, sleep(this.config.timeout).then(() => undefined)]);
    if (!watcher) {
      void creating.then((w) => w.cancel(), () => undefined).catch(() => undefined);
      throw new Error(`the watch was not created within ${this.config.timeout} ms`);
    }
    if (client !== this.client) {
      void watcher.cancel().catch(() => undefined);
      return;
    }
    this.watcher = watcher;
    watcher.on('put', (kv) => {
      this.state.watchEvents++;
      this.revision = Math.max(this.revision, Number(kv.mod_revision));
      this.applyKv(kv, 'the watch');
      this.publish();
    });
    // A watch that ends (the endpoint went), or is cancelled (etcd compacted past the
    // revision it resumed from): another connection, from a full read.
    watcher.on('disconnected', (e: Error) => {
      if (watcher === this.watcher) this.lost(`${this.state.endpoint}: the watch ended: ${errorText(e)}`);
    });
    watcher.on('error', (e: Error) => {
      if (watcher !== this.watcher) return;
      this.compacted = true;
      this.lost(`${this.state.endpoint}: the watch was cancelled (${errorText(e)}): a full read follows`);
    });
  }

  /** The probe: a linearizable read needs the endpoint and a quorum behind it. */
  private async check(client: Etcd3): Promise<void> {
    if (client !== this.client || this.connecting) return;
    try {
      await client.get(`${this.config.prefix}/`).exec();
    } catch (e) {
      if (client === this.client) this.lost(`${this.state.endpoint}: ${errorText(e)}`);
    }
  }

  /** The endpoint in use failed: the next one, after the backoff. */
  private lost(message: string): void {
    clearInterval(this.probe);
    this.drop();
    if (this.state.connected) {
      this.state.connected = false;
      this.backoff = BACKOFF_FIRST_MS;
    }
    this.failed(message);
    this.index++;
    if (this.closed) return;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.connect(), this.backoff).unref();
    this.backoff = Math.min(this.backoff * 2, BACKOFF_MOST_MS);
  }

  // ---- Writes -------------------------------------------------------------------

  async commit(protocol: Protocol, u: UpstreamConfig, base: number, peers: readonly PeerConfig[]): Promise<StoreCommit> {
    const key = keyOf(this.config.prefix, protocol, u);
    const unavailable = (why: string): StoreCommit => {
      this.state.failedWrites++;
      this.failed(`a write of "${key}" failed: ${why}`);
      return {
        ok: false,
        status: 503,
        error: 'ServiceUnavailable',
        description: `Upstream "${u.name}" was not changed: the configuration store is unavailable (${why}).`,
      };
    };
    const deadline = Date.now() + this.config.timeout;
    // A write in a failover waits for the next endpoint, within the timeout.
    const client = await this.ready(deadline);
    if (!client) return unavailable(`${this.state.endpoint} does not answer`);
    const value = JSON.stringify(storedUpstream(peers, protocol));
    try {
      const txn = await client.if(key, 'Mod', '==', base).then(client.put(key).value(value)).else(client.get(key)).commit();
      if (txn.succeeded) return this.committed(key, value, Number(txn.header.revision));
      // Another instance wrote first: what it wrote is applied, the write computed again.
      const kv = txn.responses[0]?.response_range?.kvs[0];
      if (kv) this.applyKv(kv, 'a write that came second');
      this.publish();
      return { ok: false, conflict: true };
    } catch (e) {
      const why = errorText(e);
      if (client === this.client) this.lost(`${this.state.endpoint}: ${why}`);
      if (NEVER_SENT.test(why)) return unavailable(why);
      // The transaction may have reached the leader, and be committed yet: settled
      // before the answer, so that a write refused is one etcd will never have.
      const settled = await this.settle(key, base, value, protocol, u, Date.now() + SETTLE_TIMEOUTS * this.config.timeout);
      if (typeof settled === 'number') return this.committed(key, value, settled);
      // Fenced by a store that answers again: never applied, and sent again.
      if (settled === 'fenced') return { ok: false, conflict: true };
      return unavailable(settled === 'refused' ? why : `${why}; whether etcd took the write could not be told, and it may yet be applied everywhere`);
    }
  }

  private committed(key: string, value: string, revision: number): StoreCommit {
    this.apply(key, JSON.parse(value), revision, 'a write');
    this.publish();
    return { ok: true, revision };
  }

  /** A connected client, after waiting for a reconnection until `deadline` at most. */
  private async ready(deadline: number): Promise<Etcd3 | undefined> {
    for (let attempt = 0; attempt < 100 && !this.closed; attempt++) {
      if (this.client && this.state.connected) return this.client;
      const left = deadline - Date.now();
      if (left <= 0) break;
      const up = await Promise.race([this.connect(), sleep(left).then(() => false)]);
      if (!up) await sleep(Math.min(this.backoff, Math.max(0, deadline - Date.now())));
    }
    return this.client && this.state.connected ? this.client : undefined;
  }

  /**
   * What became of a transaction whose answer was lost (`base`: the revision it compared
   * with): its revision when etcd committed it, `fenced` or `refused` when etcd never
   * will (`fenced`: by this instance's fence, so the store answers again), or `unknown`. A fence, the same compare with the value the key has at `base`, moves the
   * key on unless something else did: then the transaction can no longer commit. When
   * the key had moved, the first change after `base` (the one transaction whose compare
   * held) is read back from etcd's history, and compared with the value written.
   */
  private async settle(key: string, base: number, value: string, protocol: Protocol, u: UpstreamConfig, deadline: number): Promise<number | 'fenced' | 'refused' | 'unknown'> {
    // Tried on each endpoint in turn until one with a quorum answers (a new leader is
    // being elected, most likely), or until `deadline`.
    for (let attempt = 0; attempt < 100; attempt++) {
      const client = await this.ready(deadline);
      if (!client) return 'unknown';
      try {
        const before = JSON.stringify(storedUpstream(peerSet(this.status, u).peers, protocol));
        const fence = await client.if(key, 'Mod', '==', base).then(client.put(key).value(before)).commit();
        if (fence.succeeded) {
          this.apply(key, JSON.parse(before), Number(fence.header.revision), 'a fence of a write without an answer');
          return 'fenced';
        }
        const first = await firstChange(client, key, base, deadline);
        if (!first) return 'unknown';
        return first.value.toString('utf8') === value ? Number(first.mod_revision) : 'refused';
      } catch (e) {
        if (client === this.client) this.lost(`${this.state.endpoint}: ${errorText(e)}`);
      }
    }
    return 'unknown';
  }
}

/** How many timeouts settling a write whose answer was lost may take: long enough for
 * etcd to elect a new leader. */
const SETTLE_TIMEOUTS = 3;

/** An error of a call that never left this process: it cannot have been committed. */
const NEVER_SENT = /No connection established|ECONNREFUSED|not connected/;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The first change of `key` after revision `base`, from etcd's history (undefined when
 * it cannot be read by `deadline`, or was compacted away). */
function firstChange(client: Etcd3, key: string, base: number, deadline: number): Promise<IKeyValue | undefined> {
  return new Promise((resolve) => {
    let watcher: Watcher | undefined;
    let settled = false;
    const done = (kv: IKeyValue | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void watcher?.cancel().catch(() => undefined);
      resolve(kv);
    };
    const timer = setTimeout(() => done(undefined), Math.max(0, deadline - Date.now()));
    client
      .watch()
      .key(key)
      .startRevision(String(base + 1))
      .create()
      .then((w) => {
        watcher = w;
        if (settled) void w.cancel().catch(() => undefined);
        w.on('put', (kv) => done(kv));
        w.on('delete', (kv) => done(kv));
        w.on('error', () => done(undefined));
      }, () => done(undefined));
  });
}

/** The keys of the catalog's upstreams (every upstream has a zone in zonal: its own by default). */
function targetsOf(status: Status, prefix: string): Map<string, Target> {
  const out = new Map<string, Target>();
  const catalog = status.catalog();
  for (const protocol of ['http', 'stream'] as const)
    for (const u of (protocol === 'http' ? catalog.http?.upstreams : catalog.stream?.upstreams) ?? []) out.set(keyOf(prefix, protocol, u), { protocol, u });
  return out;
}

const keyOf = (prefix: string, protocol: Protocol, u: UpstreamConfig) => `${prefix}/${protocol}/upstreams/${u.name}`;
