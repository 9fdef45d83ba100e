// The zonal server's primary process: it reads the configuration, creates the zones,
// forks the workers (node:cluster) and keeps them running, serves the admin listeners,
// reloads on SIGHUP, stops gracefully on SIGQUIT and fast on SIGTERM or SIGINT (cli.ts).
//
// Worker slots: each worker writes its own shard of every counter block. The zones have
// twice as many slots as workers (at least as many as CPUs, twice), so that a reload's
// new workers can start while the old ones drain; a restarted worker takes the slot of
// the one it replaces, so the totals go on from where they were.
import cluster, { type Worker } from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { setWorkerSlot, WORKER_SLOT_ENV } from '../engine/index.js';
import { Status } from '../metrics/status.js';
import { repairSlot } from '../metrics/upstreams.js';
import { repairLimitSlot } from '../metrics/limits.js';
import { repairStreamZones } from '../metrics/stream-zones.js';
import type { AdminListeners } from './admin.js';
import { logAudit } from './audit.js';
import { statusConfigOf } from './catalog.js';
import { formatConfigError, loadConfig, type LoadOptions } from './config/load.js';
import type { ServerConfig } from './config/model.js';
import { killPreforked, setupCluster, workerEnv, type Preforked } from './core/workers.js';
import { createZones } from './core/zones.js';
import type { FromPrimary, ToPrimary } from './messages.js';
import { stderrLog, type Log } from './log.js';
import { applyProcessLogs } from './log/process.js';
import { listenGroups } from './listens.js';
import type { Prober } from './probes/prober.js';
import type { NameFollower, Resolvers } from './resolver/peers.js';
import type { EtcdStore } from './config-store/store.js';
import { answerMessage, requestOf } from './config-store/forward.js';
import { handleConfig } from '../api/config.js';
import { apiError } from '../api/errors.js';
import type { ConfigWrite } from './messages.js';

/** How long draining workers may take before they are killed, unless
 * `worker_shutdown_timeout` says (nginx waits for ever by default). */
const DRAIN_MS = 30_000;
/** A fast stop: how long a worker told to exit may take before it is killed. */
const EXIT_MS = 5000;
/** A worker that dies sooner than this after its start is restarted after this delay. */
const RESTART_DELAY_MS = 1000;

// What only some configurations use is loaded when one does, not at every start (a start
// is mostly loading, issue 32): the admin listeners (uWebSockets.js and the API), and the
// resolver and the prober (startDiscovery).
const loadAdmin = async () => (await import('./admin.js')).AdminListeners;
const loadDiscovery = async () => {
  const [{ startProbes }, { followNames, Resolvers }] = await Promise.all([import('./probes/prober.js'), import('./resolver/peers.js')]);
  return { startProbes, followNames, Resolvers };
};
type Discovery = Awaited<ReturnType<typeof loadDiscovery>>;
// ...and the configuration store's client (config_store), which loads etcd's.
const loadStore = async () => (await import('./config-store/store.js')).EtcdStore;
/** How long a start waits for the configuration store before it serves what it has. */
const STORE_START_WAIT_MS = 1000;

/** The resolver or the prober has work in `config`. */
function wantsDiscovery(config: ServerConfig): boolean {
  const upstreams = [...(config.http?.upstreams ?? []), ...(config.stream?.upstreams ?? [])];
  return upstreams.some((u) => u.probes?.length || u.servers.some((s) => s.resolve)) || !!config.http?.resolverZones?.length || !!config.stream?.resolverZones?.length;
}

interface WorkerRecord {
  readonly worker: Worker;
  readonly slot: number;
  readonly generation: number;
  readonly started: number;
  state: 'starting' | 'ready' | 'draining';
  /** Runs the cache loader and manager for its configuration. */
  readonly cacheKeeper: boolean;
}

export class Primary {
  private readonly workers = new Set<WorkerRecord>();
  private readonly freeSlots: number[];
  private readonly ticketKeys = randomBytes(48).toString('base64');
  /** Made once a configuration has an admin listener. */
  private admin?: AdminListeners;
  private discovery?: Discovery;
  private generation = 0;
  private stopping = false;
  private stopped?: Promise<void>;
  private reloading = false;
  private reloadAgain = false;
  /** The primary's own view of the zones, writing in its own worker slot: the resolver
   * and the prober run here, one for the whole server (see startDiscovery). */
  private writer?: Status;
  private resolvers?: Resolvers;
  private follower?: NameFollower;
  private prober?: Prober;
  /** `config_store`: the instance's one client of the store and its watch. */
  private store?: EtcdStore;

  private constructor(
    private readonly file: string,
    private readonly options: Pick<LoadOptions, 'prefix' | 'globals'>,
    private config: ServerConfig,
    private readonly status: Status,
    private readonly log: Log,
  ) {
    // The last slot is the primary's own (the resolver's and the prober's counters).
    this.freeSlots = Array.from({ length: status.zone.workerSlots - 1 }, (_, i) => i);
  }

  /** Reads the configuration (or takes the one `cli.ts` read, with the workers it forked
   * early for it), creates the zones, starts the workers and admin listeners. */
  static async start(
    file: string,
    log: Log = stderrLog,
    options: Pick<LoadOptions, 'prefix' | 'globals'> & { config?: ServerConfig; preforked?: Preforked[] } = {},
  ): Promise<Primary> {
    const loaded = options.config ? { config: options.config, errors: [] } : loadConfig(file, options);
    const config = loaded.config;
    const preforked = options.preforked ?? [];
    if (!config) throw new Error(loaded.errors.map(formatConfigError).join('\n'));
    applyProcessLogs(config);
    let status: Status;
    try {
      status = createZones(config);
    } catch (e) {
      killPreforked(preforked);
      throw e;
    }
    const primary = new Primary(file, { prefix: options.prefix, globals: options.globals }, config, status, log);
    setupCluster();
    try {
      await primary.loadFor(config);
      primary.startDiscovery(config, false);
      await primary.startStore(config);
      await primary.admin?.apply(config);
      await Promise.all(
        Array.from({ length: config.workerProcesses }, () => {
          const slot = primary.takeSlot()!;
          return primary.spawn(slot, 0, preforked.find((p) => p.slot === slot));
        }),
      );
    } catch (e) {
      killPreforked(preforked);
      await primary.stop();
      throw e;
    }
    log('notice', `started ${config.workerProcesses} worker${config.workerProcesses === 1 ? '' : 's'} from ${file}`);
    return primary;
  }

  get instance(): string {
    return this.status.instance;
  }

  /** Worker processes serving the current configuration. */
  get pids(): number[] {
    return [...this.workers].filter((r) => r.generation === this.generation && r.state !== 'draining').map((r) => r.worker.process.pid!);
  }

  private takeSlot(): number | undefined {
    return this.freeSlots.shift();
  }

  /** Forks a worker in `slot` (or takes the one forked early for it); resolves once it
   * listens, rejects when it cannot. */
  private spawn(slot: number, generation: number, preforked?: Preforked): Promise<WorkerRecord> {
    const worker = preforked?.worker ?? cluster.fork({ ...workerEnv(this.config.core), [WORKER_SLOT_ENV]: String(slot) });
    // A message sent to a worker that is already going (Ctrl-C reaches the workers too, and
    // a killed one may not have closed its channel yet) fails with EPIPE as an 'error'
    // event: unhandled, it would take the primary down. The worker's end is its 'exit'.
    worker.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE' && e.code !== 'ERR_IPC_CHANNEL_CLOSED') this.log('warn', `worker ${worker.process.pid}: ${e.message}`);
    });
    // One worker of each configuration runs the cache loader and manager: the first one
    // started, and whichever replaces it when it dies.
    const cacheKeeper = ![...this.workers].some((r) => r.cacheKeeper && r.generation === generation && r.state !== 'draining');
    const record: WorkerRecord = { worker, slot, generation, started: Date.now(), state: 'starting', cacheKeeper };
    this.workers.add(record);
    const start: FromPrimary = {
      type: 'start',
      file: this.file,
      files: this.config.files,
      ...(this.config.secrets ? { secrets: this.config.secrets } : {}),
      prefix: this.config.prefix,
      ...(this.config.globals !== undefined ? { globals: this.config.globals } : {}),
      ticketKeys: this.ticketKeys,
      cacheKeeper,
    };
    return new Promise((resolve, reject) => {
      let failure = 'the worker exited before it was ready';
      if (preforked?.waiting) worker.send(start);
      worker.on('message', (m: ToPrimary) => {
        if (m.type === 'waiting') worker.send(start);
        else if (m.type === 'audit') logAudit(this.log, m.line);
        else if (m.type === 'config-write') void this.configWrite(worker, m);
        else if (m.type === 'ready' && record.state === 'starting') {
          record.state = 'ready';
          resolve(record);
        } else if (m.type === 'failed') failure = m.message;
      });
      const exited = (code: number | null, signal: string | null) => {
        this.workers.delete(record);
        // What the worker had in flight at its peers and in queues ends with it, before
        // another worker takes the slot.
        try {
          repairSlot(this.status, slot);
          // ...and the connection limit counts it held, which would otherwise stay taken.
          repairLimitSlot(this.status, slot);
          repairStreamZones(this.status, slot);
        } catch (e) {
          this.log('error', `repairing worker slot ${slot} failed: ${(e as Error).message}`);
        }
        this.freeSlots.push(slot);
        if (record.state === 'starting') reject(new Error(failure));
        else this.exited(record, code, signal);
      };
      // A worker forked early may have gone before the primary took it.
      if (worker.isDead()) exited(worker.process.exitCode, worker.process.signalCode);
      else worker.once('exit', exited);
    });
  }

  /** A worker ended: one of the current configuration is replaced in its slot. */
  private exited(record: WorkerRecord, code: number | null, signal: string | null): void {
    if (this.stopping || record.state === 'draining' || record.generation !== this.generation) return;
    this.log('warn', `worker ${record.worker.process.pid} exited (${signal ?? `code ${code}`}): starting another`);
    const again = () => {
      if (this.stopping || record.generation !== this.generation) return;
      const i = this.freeSlots.indexOf(record.slot);
      const slot = i >= 0 ? this.freeSlots.splice(i, 1)[0] : this.takeSlot();
      if (slot === undefined) return;
      this.spawn(slot, record.generation).catch((e: Error) => {
        this.log('error', `a worker failed to start: ${e.message}`);
        setTimeout(again, RESTART_DELAY_MS).unref();
      });
    };
    if (Date.now() - record.started < RESTART_DELAY_MS) setTimeout(again, RESTART_DELAY_MS).unref();
    else again();
  }

  /** SIGHUP: reads the configuration again; when it loads, new workers start with it and
   * the old ones drain. A configuration that does not load changes nothing. */
  async reload(): Promise<boolean> {
    if (this.reloading) {
      this.reloadAgain = true;
      return false;
    }
    this.reloading = true;
    try {
      return await this.reloadOnce();
    } finally {
      this.reloading = false;
      if (this.reloadAgain && !this.stopping) {
        this.reloadAgain = false;
        void this.reload();
      }
    }
  }

  private async reloadOnce(): Promise<boolean> {
    let loaded: ReturnType<typeof loadConfig>;
    try {
      loaded = loadConfig(this.file, this.options);
    } catch (e) {
      // The reader's own failure: the running configuration stays, as for any error.
      loaded = { errors: [{ file: this.file, line: 0, message: `the configuration cannot be read: ${(e as Error).message}` }], warnings: [] };
    }
    const { config, errors } = loaded;
    if (!config) {
      for (const e of errors) this.log('emerg', formatConfigError(e).replace(/^zonal: \[emerg\] /, ''));
      this.log('error', 'reload refused: the running configuration stays');
      return false;
    }
    try {
      await this.loadFor(config);
    } catch (e) {
      this.log('error', `reload failed: ${(e as Error).message}`);
      return false;
    }
    if (config.workerProcesses > this.freeSlots.length) {
      this.log(
        'error',
        `reload refused: ${config.workerProcesses} workers need as many free worker slots and ${this.freeSlots.length} are free ` +
          `(the zones have ${this.status.zone.workerSlots}; workers still draining hold theirs)`,
      );
      return false;
    }
    const old = [...this.workers];
    try {
      this.status.reload(statusConfigOf(config), config.files);
    } catch (e) {
      // A state file that went bad since the check, a zone without room: the workers
      // running stay, with what they have.
      this.log('error', `reload failed: ${(e as Error).message}`);
      return false;
    }
    this.config = config;
    applyProcessLogs(config);
    this.generation++;
    this.startDiscovery(config, true);
    await this.startStore(config);
    await this.admin?.apply(config);
    const started = await Promise.allSettled(Array.from({ length: config.workerProcesses }, () => this.spawn(this.takeSlot()!, this.generation)));
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) {
      // The new workers cannot serve (a listen address is taken...): the old ones go on.
      this.log('error', `reload failed: ${(failed as PromiseRejectedResult).reason.message}`);
      for (const r of started) if (r.status === 'fulfilled') this.drain(r.value);
      this.generation--;
      return false;
    }
    for (const r of old) this.drain(r);
    this.log('notice', `reloaded: generation ${this.generation}, ${config.workerProcesses} worker${config.workerProcesses === 1 ? '' : 's'}`);
    return true;
  }

  /** Loads what `config` needs of the admin listeners, the resolver and the prober, before
   * anything of it is applied. */
  private async loadFor(config: ServerConfig): Promise<void> {
    if (this.store && config.configStore && !this.store.takes(config.configStore))
      throw new Error('"config_store" cannot change its endpoints or prefix on a reload: the revisions applied are the running store\'s; restart to change them');
    if (!this.admin && listenGroups(config, true).length > 0) this.admin = new (await loadAdmin())(this.status, this.log);
    if (!this.discovery && wantsDiscovery(config)) this.discovery = await loadDiscovery();
  }

  /**
   * The resolver of `resolve` servers and the health prober run in the primary: one of
   * each for the whole server, as the issue asks, with nothing to hand over when a worker
   * dies or a reload replaces them all, and their results in shared memory where every
   * worker's balancer reads them. They write their counters in the primary's own slot.
   */
  private startDiscovery(config: ServerConfig, reload: boolean): void {
    this.follower?.stop();
    this.prober?.stop();
    // Once loaded (an earlier configuration wanted them), they restart with each one.
    if (!wantsDiscovery(config) && !this.discovery) return;
    const { startProbes, followNames, Resolvers } = this.discovery!;
    const writer = this.ownWriter();
    this.resolvers ??= new Resolvers(writer);
    this.follower = followNames(writer, config, this.resolvers, this.log);
    this.prober = startProbes(writer, config, this.log, reload);
  }

  /** The primary's own view of the zones, writing in its own worker slot. */
  private ownWriter(): Status {
    if (!this.writer) {
      setWorkerSlot(this.status.zone.workerSlots - 1);
      this.writer = Status.attach({ instance: this.status.instance, writer: true });
    }
    return this.writer;
  }

  /**
   * `config_store`: the store's client and watch run here, one for the instance, as the
   * resolver does; the admin API commits to it, and the workers' API locations send
   * their writes here (configWrite). A start waits for etcd a moment at most: one that
   * is unreachable leaves the instance serving what it last applied.
   */
  private async startStore(config: ServerConfig): Promise<void> {
    const wanted = config.configStore;
    if (!wanted) {
      this.store?.close();
      this.store = undefined;
    } else if (this.store) this.store.reconfigure(wanted);
    else this.store = await (await loadStore()).start(wanted, this.ownWriter(), this.log, STORE_START_WAIT_MS);
    if (this.admin) this.admin.store = this.store;
  }

  /** A worker's /config write: committed to the store here, answered to the worker. */
  private async configWrite(worker: Worker, m: ConfigWrite): Promise<void> {
    let answer;
    try {
      answer = await handleConfig(this.ownWriter(), requestOf(m), this.store);
    } catch (e) {
      this.log('error', `config_store: a write failed: ${(e as Error).message}`);
      answer = apiError(500, 'InternalError', `The write failed: ${(e as Error).message}`);
    }
    if (worker.isConnected()) worker.send(answerMessage(m.id, answer));
  }

  private drain(record: WorkerRecord): void {
    if (record.state === 'draining') return;
    record.state = 'draining';
    const message: FromPrimary = { type: 'drain' };
    if (record.worker.isConnected()) record.worker.send(message);
    const kill = setTimeout(() => record.worker.process.kill('SIGKILL'), this.config.core.workerShutdownTimeout ?? DRAIN_MS);
    kill.unref();
    record.worker.once('exit', () => clearTimeout(kill));
  }

  /** Stops: gracefully (SIGQUIT), the workers stop accepting and finish what is in
   * flight; fast (SIGTERM, SIGINT, or a graceful stop asked again), they exit at once.
   * Either way the zones are removed once every worker has exited. */
  stop(how: 'graceful' | 'fast' = 'graceful'): Promise<void> {
    if (this.stopped) {
      // A fast stop asked while a graceful one waits: the workers exit now.
      if (how === 'fast') for (const r of this.workers) this.exit(r);
      return this.stopped;
    }
    return (this.stopped = this.stopOnce(how));
  }

  private async stopOnce(how: 'graceful' | 'fast'): Promise<void> {
    this.stopping = true;
    this.store?.close();
    this.follower?.stop();
    this.prober?.stop();
    this.resolvers?.close();
    this.admin?.close();
    const exits = [...this.workers].map((r) => new Promise<void>((resolve) => (r.worker.isDead() ? resolve() : r.worker.once('exit', () => resolve()))));
    for (const r of this.workers) {
      if (how === 'graceful') this.drain(r);
      else this.exit(r);
    }
    await Promise.all(exits);
    this.status.remove();
  }

  private exit(record: WorkerRecord): void {
    const message: FromPrimary = { type: 'exit' };
    if (record.worker.isConnected()) record.worker.send(message);
    else record.worker.process.kill('SIGKILL');
    const kill = setTimeout(() => record.worker.process.kill('SIGKILL'), EXIT_MS);
    kill.unref();
    record.worker.once('exit', () => clearTimeout(kill));
  }
}
