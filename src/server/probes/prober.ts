// Active health probes: one prober for the whole server, in the primary, whose results
// every worker's balancer reads from the peers' shared state cells (`unhealthy` and
// `checking` peers are skipped) and /status from their counters (`health.probes`).
//
// What it checks is protocol-free: a probe is a function of a peer's address that says
// pass or fail (an HTTP request, or a stream probe's connect, `send=` and answer), and the prober
// keeps each peer's consecutive passes and failures per probe and moves its state:
// `fails` failures in a row make it unhealthy, `passes` passes make it healthy; a peer
// is up only when none of its upstream's probes holds it unhealthy, and a peer that
// starts `checking` (an `essential` probe) stays so until a probe passed.
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { isIPv6 } from 'node:net';
import tls from 'node:tls';
import type { UpstreamConfig } from '../../metrics/catalog.js';
import { parsePeerAddress, isPeerAddressError, peerAddress, peerName } from '../../metrics/catalog.js';
import { peerSet, type PeerEntry } from '../../metrics/peers.js';
import type { StatusStore } from '../../metrics/store.js';
import { PeerCell, PeerState, peerHandles, type PeerHandles, type Protocol } from '../../metrics/upstreams.js';
import type { Log } from '../log.js';
import type { ServerConfig, UpstreamBlockConfig } from '../config/model.js';
import type { AnyProbeConfig, ProbeConfig, ProbeMode } from './config.js';
import type { ProbeTest } from './test.js';

/** One probe of one peer: resolves true when it passed. Never rejects. */
export type ProbeCheck = (host: string, port: number) => Promise<boolean>;

/** A probe as the prober runs it, whatever its protocol. */
export interface ProbeSpec {
  readonly name: string;
  readonly port?: number;
  /** Milliseconds. */
  readonly interval: number;
  readonly essential: boolean;
  readonly persistent: boolean;
  readonly fails: number;
  readonly passes: number;
  readonly mode: ProbeMode;
  readonly check: ProbeCheck;
}

export interface ProbedUpstream {
  readonly protocol: Protocol;
  readonly name: string;
  readonly probes: readonly ProbeSpec[];
}

interface Tally {
  passes: number;
  fails: number;
  /** Undefined until the probe has reached a verdict. */
  healthy?: boolean;
  busy: boolean;
}

export class Prober {
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly tallies = new Map<string, Tally>();
  private readonly handles = new Map<string, PeerHandles>();
  private stopped = false;

  /**
   * `reload`: the configuration was read again. Peers of an `essential` probe go back to
   * `checking`, unless it is `persistent` and they were up (Angie).
   */
  constructor(
    private readonly status: StatusStore,
    upstreams: readonly ProbedUpstream[],
    private readonly log: Log,
    reload = false,
  ) {
    for (const u of upstreams) {
      if (reload && u.probes.some((p) => p.essential)) this.recheck(u);
      for (const probe of u.probes) {
        const tick = () => this.round(u, probe);
        // The first round at once: `checking` peers wait for it.
        setImmediate(tick);
        const t = setInterval(tick, probe.interval);
        t.unref();
        this.timers.push(t);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
  }

  private entry(u: ProbedUpstream): UpstreamConfig | undefined {
    const c = this.status.catalog();
    return ((u.protocol === 'http' ? c.http?.upstreams : c.stream?.upstreams) ?? []).find((x) => x.name === u.name);
  }

  private peer(u: UpstreamConfig, protocol: Protocol, p: PeerEntry): PeerHandles {
    const key = `${u.name}\0${p.id}`;
    let h = this.handles.get(key);
    if (!h) {
      h = peerHandles(this.status, u, p.id, protocol);
      this.handles.set(key, h);
    }
    return h;
  }

  private recheck(u: ProbedUpstream): void {
    const entry = this.entry(u);
    if (!entry) return;
    const persistent = u.probes.some((p) => p.essential && p.persistent);
    for (const p of peerSet(this.status, entry).peers) {
      const { cells } = this.peer(entry, u.protocol, p);
      if (persistent && cells.load(PeerCell.state) === PeerState.up) continue;
      cells.store(PeerCell.state, PeerState.checking);
    }
  }

  private round(u: ProbedUpstream, probe: ProbeSpec): void {
    if (this.stopped) return;
    const entry = this.entry(u);
    if (!entry) return;
    const now = Date.now();
    const peers = peerSet(this.status, entry).peers;
    this.forgetGone(u, peers);
    for (const p of peers) {
      if (p.down) continue;
      const key = `${u.name}\0${p.id}\0${probe.name}`;
      let tally = this.tallies.get(key);
      if (!tally) this.tallies.set(key, (tally = { passes: 0, fails: 0, busy: false }));
      if (tally.busy) continue;
      const handles = this.peer(entry, u.protocol, p);
      const state = handles.cells.load(PeerCell.state);
      if (probe.mode === 'onfail' && state === PeerState.up) continue;
      if (probe.mode === 'idle' && state === PeerState.up && now - handles.metrics.lastSelected() < probe.interval) continue;
      const address = parsePeerAddress(peerAddress(p));
      if (isPeerAddressError(address)) continue;
      tally.busy = true;
      const t = tally;
      void probe.check(address.host, probe.port ?? address.port).then((ok) => {
        t.busy = false;
        if (this.stopped) return;
        this.result(u, entry, p, probe, t, ok);
      });
    }
  }

  /** What was kept of peers no longer in the set (a resolver's churn would grow it). */
  private forgetGone(u: ProbedUpstream, peers: readonly PeerEntry[]): void {
    if (this.tallies.size <= peers.length * u.probes.length) return;
    const live = new Set(peers.map((p) => `${u.name}\0${p.id}`));
    for (const key of this.tallies.keys()) if (key.startsWith(`${u.name}\0`) && !live.has(key.slice(0, key.lastIndexOf('\0')))) this.tallies.delete(key);
    for (const key of this.handles.keys()) if (key.startsWith(`${u.name}\0`) && !live.has(key)) this.handles.delete(key);
  }

  private result(u: ProbedUpstream, entry: UpstreamConfig, p: PeerEntry, probe: ProbeSpec, tally: Tally, ok: boolean): void {
    // A peer removed while its probe ran: its memory may be gone.
    if (!peerSet(this.status, entry).peers.some((x) => x.id === p.id)) return;
    const { metrics, cells } = this.peer(entry, u.protocol, p);
    metrics.probed(ok);
    if (ok) {
      tally.passes++;
      tally.fails = 0;
      if (tally.passes >= probe.passes) tally.healthy = true;
    } else {
      tally.fails++;
      tally.passes = 0;
      if (tally.fails >= probe.fails) tally.healthy = false;
    }
    const verdicts = u.probes.map((x) => this.tallies.get(`${u.name}\0${p.id}\0${x.name}`)?.healthy);
    const state = cells.load(PeerCell.state);
    const name = peerName(p);
    if (verdicts.includes(false)) {
      if (state !== PeerState.unhealthy) {
        cells.store(PeerCell.state, PeerState.unhealthy);
        this.log('warn', `peer ${name} of upstream "${u.name}" is unhealthy: probe "${probe.name}" failed ${tally.fails} time${tally.fails === 1 ? '' : 's'}`);
      }
      return;
    }
    // Healthy again, or checked for the first time: only the prober's own states move;
    // `unavailable` and `recovering` belong to the balancers' passive checks.
    if ((state === PeerState.unhealthy || state === PeerState.checking) && verdicts.includes(true)) {
      if (cells.compareExchange(PeerCell.state, state, PeerState.up) === state && state === PeerState.unhealthy)
        this.log('notice', `peer ${name} of upstream "${u.name}" is healthy again`);
    }
  }
}

/** The HTTP check of a probe: its request to the peer, and whether the answer passes. */
export function httpCheck(probe: ProbeConfig): ProbeCheck {
  // The statuses proxy_next_upstream names that count as the peer's failure, as a
  // request's would (Angie: a probe passes as a request would): http_500, 502, 503, 504
  // and 429; nginx never counts 403 and 404 against a peer.
  const failing = new Set(
    probe.proxy.nextUpstream
      .filter((c) => c.startsWith('http_') && c !== 'http_403' && c !== 'http_404')
      .map((c) => Number(c.slice(5))),
  );
  const tls = probe.proxy.ssl;
  return (host, port) =>
    new Promise<boolean>((resolve) => {
      let settled = false;
      const done = (ok: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        resolve(ok);
      };
      // The probe may take its location's connect and read time-outs, and no longer than
      // its interval (the next round skips a peer whose probe still runs), or 1 s when the
      // interval is shorter: a loaded machine is no failing peer.
      const timer = setTimeout(() => done(false), Math.min(Math.max(probe.interval, 1000), probe.proxy.connectTimeout + probe.proxy.readTimeout));
      const options: https.RequestOptions = {
        host,
        port,
        method: probe.method,
        path: probe.uri,
        headers: { host: probe.host, 'user-agent': 'zonal probe', connection: 'close' },
        agent: false,
        ...(tls
          ? { rejectUnauthorized: tls.verify, ...(tls.serverName ? { servername: tls.name } : {}), ...(tls.trusted ? { ca: readCa(tls.trusted) } : {}) }
          : {}),
      };
      const req = (tls ? https : http).request(options, (res) => {
        let body = 0;
        res.on('data', (chunk: Buffer) => {
          body += chunk.length;
          // More body than it may read: the answer is not what the probe expects.
          if (body > probe.maxBody) done(false);
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          done(probe.check ? probe.check({ status, headers: res.headers }) : !failing.has(status));
        });
        res.on('error', () => done(false));
      });
      req.on('error', () => done(false));
      req.end();
    });
}

const cas = new Map<string, Buffer>();
function readCa(file: string): Buffer | undefined {
  let ca = cas.get(file);
  if (!ca) {
    try {
      ca = readFileSync(file);
      cas.set(file, ca);
    } catch {
      return undefined;
    }
  }
  return ca;
}

/** A configured probe as the prober runs it: only its check depends on its protocol. */
export function probeSpec(p: AnyProbeConfig): ProbeSpec {
  return {
    name: p.name,
    ...(p.port !== undefined ? { port: p.port } : {}),
    interval: p.interval,
    essential: p.essential,
    persistent: p.persistent,
    fails: p.fails,
    passes: p.passes,
    mode: p.mode,
    check:
      p.protocol === 'http'
        ? httpCheck(p)
        : streamCheck({ ...(p.send ? { send: p.send } : {}), udp: p.udp, tls: p.ssl, maxResponse: p.maxResponse, timeout: p.timeout, ...(p.check ? { test: p.check } : {}) }),
  };
}

/** The prober of a configuration's HTTP and stream upstreams; none when no location or
 * stream server has a probe. */
export function startProbes(status: StatusStore, config: ServerConfig, log: Log, reload: boolean): Prober | undefined {
  const lists: ReadonlyArray<readonly [Protocol, readonly UpstreamBlockConfig[]]> = [
    ['http', config.http?.upstreams ?? []],
    ['stream', config.stream?.upstreams ?? []],
  ];
  const upstreams: ProbedUpstream[] = lists.flatMap(([protocol, list]) =>
    list.filter((u) => u.probes?.length).map((u) => ({ protocol, name: u.name, probes: u.probes!.map(probeSpec) })),
  );
  return upstreams.length ? new Prober(status, upstreams, log, reload) : undefined;
}

/** What a stream probe (`upstream_probe` in a stream server) does: connect (with TLS
 * under `proxy_ssl on`), send `send` if given, and pass once connected when there is
 * nothing to wait for (no `send` and no `test`, or `maxResponse` 0), else once the
 * answer came: its first bytes without a test, or, with one, as soon as what came so far
 * passes it (HAProxy's `expect`: a greeting or an answer needs not end the connection).
 * More answer than `maxResponse`, an end or a time-out before that, fail. UDP passes on
 * an answering datagram (that passes the test). */
export interface StreamProbeOptions {
  readonly send?: Buffer;
  readonly udp?: boolean;
  readonly tls?: boolean;
  /** Bytes of answer read at most; 0: the answer is not waited for. */
  readonly maxResponse: number;
  /** Milliseconds the whole probe may take. */
  readonly timeout: number;
  /** `test=`, on the answer as `$upstream_probe_response`. */
  readonly test?: ProbeTest;
}

/** The stream probe's check. */
export function streamCheck(o: StreamProbeOptions): ProbeCheck {
  const waits = o.maxResponse > 0 && (o.send !== undefined || o.test !== undefined);
  return (host, port) =>
    new Promise<boolean>((resolve) => {
      let settled = false;
      const close: Array<() => void> = [];
      const done = (ok: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        for (const c of close) c();
        resolve(ok);
      };
      const timer = setTimeout(() => done(false), o.timeout);
      const chunks: Buffer[] = [];
      let got = 0;
      /** The answer so far: passes, fails, or waits for more (undefined). */
      const judge = (chunk: Buffer, ended: boolean): boolean | undefined => {
        got += chunk.length;
        if (got > o.maxResponse) return false;
        if (!o.test) return got > 0 || (ended ? false : undefined);
        chunks.push(chunk);
        const answer = Buffer.concat(chunks).toString('latin1');
        if (o.test({ response: answer })) return true;
        return ended || got === o.maxResponse ? false : undefined;
      };
      if (o.udp) {
        const socket = dgram.createSocket(isIPv6(host) ? 'udp6' : 'udp4');
        close.push(() => socket.close());
        socket.on('error', () => done(false));
        // A datagram is a whole answer: one that fails the test may be followed by another.
        socket.on('message', (m: Buffer) => {
          got = 0;
          chunks.length = 0;
          if (judge(m, false) === true) done(true);
        });
        socket.send(o.send ?? Buffer.alloc(0), port, host, (err) => err && done(false));
        return;
      }
      // A unix socket peer (`unix:<path>`) is probed at its path.
      const where = host.startsWith('unix:') ? { path: host.slice(5) } : { host, port };
      const socket: net.Socket = o.tls ? tls.connect({ ...where, rejectUnauthorized: false }) : net.connect(where);
      close.push(() => socket.destroy());
      socket.on('error', () => done(false));
      socket.on(o.tls ? 'secureConnect' : 'connect', () => {
        if (o.send) socket.write(o.send);
        if (!waits) done(true);
      });
      socket.on('data', (chunk: Buffer) => {
        const verdict = judge(chunk, false);
        if (verdict !== undefined) done(verdict);
      });
      socket.on('end', () => done(judge(Buffer.alloc(0), true) ?? false));
    });
}
