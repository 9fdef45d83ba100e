// Peers from names: each `server <name> resolve` of an upstream (HTTP or stream alike)
// is followed by one loop in the primary, which looks the name up when its answer
// expires and makes the upstream's live set agree: addresses that appear become peers
// (keyed `<ip>:<port>`, `server` the configured name, the server's parameters), those
// that went away are removed (peers.ts retires their memory once requests in flight on
// them are long over). With `service=`, the SRV records give the targets and their
// ports, `weight` their weight, and the lowest priority the primaries, the others
// `backup` (Angie's rule).
//
// A name that does not resolve keeps the peers it had, except when the server says it
// does not exist or has no address (NXDOMAIN, or no records): then it has none.
import { isIPv6 } from 'node:net';
import { parsePeerName, type PeerConfig, type UpstreamConfig } from '../../metrics/catalog.js';
import { namesGeneration, readNames, type NameEntry, type PeerEntry } from '../../metrics/peers.js';
import { resolver as resolverRecorder } from '../../metrics/resolvers.js';
import type { StatusStore } from '../../metrics/store.js';
import { changePeers, type Protocol } from '../../metrics/upstreams.js';
import { peerConfig } from '../catalog.js';
import type { PeerParams, ServerConfig, UpstreamBlockConfig } from '../config/model.js';
import type { Log } from '../log.js';
import type { ResolverConfig } from './config.js';
import { DnsError, DnsResolver, RCODE } from './dns.js';

/** A found peer: its key and what the records say of it. */
export interface FoundPeer {
  readonly address: string;
  readonly weight?: number;
  readonly backup?: boolean;
}

/** A name the follower follows: a configured `server <name> resolve`, or one /config
 * added. The peers made from it are `base` with their own address. */
export interface NameSource {
  readonly server: string;
  readonly service?: string;
  readonly host: string;
  readonly port: number;
  readonly base: PeerConfig;
}

/** A configured `server <name> resolve` as a source of peers. */
export const sourceOf = (p: PeerParams): NameSource => ({ server: p.server, ...(p.service !== undefined ? { service: p.service } : {}), host: p.host, port: p.port, base: peerConfig(p) });

/** A name /config added (metrics/peers.ts readNames). */
export function sourceOfEntry(e: NameEntry): NameSource | undefined {
  const parsed = parsePeerName(e.service !== undefined ? `${e.service}@${e.server}` : e.server);
  if ('error' in parsed) return undefined;
  return { server: e.server, ...(e.service !== undefined ? { service: e.service } : {}), host: parsed.host, port: parsed.port, base: { ...e.params, server: e.server, ...(e.service !== undefined ? { service: e.service } : {}) } };
}

/** An upstream with `resolve` servers, as the follower needs it. */
export interface NamedUpstream {
  readonly protocol: Protocol;
  readonly name: string;
  /** Its `resolve` servers. */
  readonly servers: readonly NameSource[];
  readonly resolver: ResolverConfig;
  /** Methods that pick no backup (hash, ip_hash, random) get only the primaries of SRV. */
  readonly backup: boolean;
}

/** How often the names /config added are looked at (one atomic load per upstream). */
const NAMES_POLL_MS = 200;
/** Retry after a time-out or a failure that keeps the peers. */
const RETRY_MS = 1000;

/** `<ip>:<port>`, IPv6 in brackets: the key the configuration and /config use. */
export const addressKey = (ip: string, port: number): string => (isIPv6(ip) ? `[${ip}]:${port}` : `${ip}:${port}`);

/** Whether a live peer is one `server` made: the same name and service. */
export const madeBy = (p: PeerConfig, server: { server: string; service?: string }): boolean => p.server === server.server && p.service === server.service && p.name !== undefined;

/**
 * The live set once `server`'s peers are `found`: the other peers as they are, the ones
 * still found kept (with what /config set on them; SRV weight and backup follow the
 * records), the new ones made with the server's parameters. Undefined when nothing
 * changes, so that no update is published for nothing.
 */
export function reconcile(peers: readonly PeerEntry[], server: NameSource, allFound: readonly FoundPeer[]): PeerConfig[] | undefined {
  const mine = new Map(peers.filter((p) => madeBy(p, server)).map((p) => [p.name!, p]));
  // An address another server already has (written by address, or another name's) stays
  // that one's: peers are keyed by address.
  const taken = new Set(peers.filter((p) => !madeBy(p, server)).map((p) => p.name ?? p.server));
  const found = allFound.filter((f) => !taken.has(f.address));
  const base = server.base;
  let changed = mine.size !== found.length;
  const made: PeerConfig[] = [];
  for (const f of found) {
    const had = mine.get(f.address);
    const { id: _id, ...kept } = had ?? ({ ...base, id: -1 } as PeerEntry);
    const peer: PeerConfig = { ...kept, name: f.address };
    if (f.weight !== undefined && f.weight !== (peer.weight ?? 1)) {
      if (f.weight === 1) delete (peer as { weight?: number }).weight;
      else (peer as { weight?: number }).weight = f.weight;
      changed = true;
    }
    if (f.backup !== undefined && f.backup !== !!peer.backup) {
      if (f.backup) (peer as { backup?: boolean }).backup = true;
      else delete (peer as { backup?: boolean }).backup;
      changed = true;
    }
    if (!had) changed = true;
    made.push(peer);
  }
  if (!changed) return undefined;
  const others = peers.filter((p) => !madeBy(p, server)).map(({ id: _id, ...p }) => p);
  return [...others, ...made];
}

/** The SRV name of `server <name> service=<service>`: `_http._tcp.<name>` for
 * `service=_http._tcp`; a bare `http` is `_http._tcp` (nginx). */
export function srvName(server: { service?: string; host: string }): string {
  const service = server.service!;
  return service.startsWith('_') ? `${service}.${server.host}` : `_${service}._tcp.${server.host}`;
}

/** The resolvers of a configuration, one per distinct `resolver`, kept across reloads
 * when they stay the same (with their caches). */
export class Resolvers {
  private readonly byKey = new Map<string, DnsResolver>();

  constructor(private status: StatusStore) {}

  get(config: ResolverConfig): DnsResolver {
    const { origin: _origin, ...rest } = config;
    const key = JSON.stringify(rest);
    let r = this.byKey.get(key);
    if (!r) {
      r = new DnsResolver({
        servers: config.servers,
        timeout: config.timeout,
        ...(config.valid !== undefined ? { valid: config.valid } : {}),
        ipv4: config.ipv4,
        ipv6: config.ipv6,
        ...(config.statusZone ? { recorder: resolverRecorder(this.status, config.statusZone) } : {}),
      });
      this.byKey.set(key, r);
    }
    return r;
  }

  /** After a reload: the resolvers the new configuration does not use are closed. */
  keepOnly(used: ReadonlySet<DnsResolver>): void {
    for (const [key, r] of this.byKey)
      if (!used.has(r)) {
        r.close();
        this.byKey.delete(key);
      }
  }

  close(): void {
    for (const r of this.byKey.values()) r.close();
    this.byKey.clear();
  }
}

/** Follows every `resolve` server of a configuration until stopped. */
export class NameFollower {
  private stopped = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly intervals: NodeJS.Timeout[] = [];
  /** Resolves once every server had its first answer (or failure): for tests and logs. */
  readonly firstRound: Promise<void>;

  constructor(
    private readonly status: StatusStore,
    upstreams: readonly NamedUpstream[],
    resolvers: Resolvers,
    private readonly log: Log,
    /** Upstreams with a resolver, whose names /config may add. */
    watched: readonly NamedUpstream[] = [],
  ) {
    const firsts: Array<Promise<void>> = [];
    const used = new Set<DnsResolver>();
    for (const u of upstreams) {
      const dns = resolvers.get(u.resolver);
      used.add(dns);
      for (const server of u.servers) firsts.push(this.follow(u, server, dns));
    }
    for (const u of watched) {
      const dns = resolvers.get(u.resolver);
      used.add(dns);
      this.watchNames(u, dns);
    }
    resolvers.keepOnly(used);
    this.firstRound = Promise.all(firsts).then(() => undefined);
  }

  /** The names /config adds and removes: one atomic load per upstream every NAMES_POLL_MS. */
  private watchNames(u: NamedUpstream, dns: DnsResolver): void {
    const following = new Map<string, { alive: { on: boolean }; source: NameSource }>();
    let generation = -1;
    const check = () => {
      const entry = catalogEntry(this.status, u);
      if (!entry || this.stopped) return;
      const now = namesGeneration(this.status, entry);
      if (now === generation) return;
      generation = now;
      const wanted = new Map<string, NameSource>();
      for (const e of readNames(this.status, entry)) {
        const source = sourceOfEntry(e);
        if (source) wanted.set(`${source.service ?? ''}@${source.server}`, source);
      }
      for (const [key, f] of following)
        if (!wanted.has(key) || JSON.stringify(wanted.get(key)) !== JSON.stringify(f.source)) {
          f.alive.on = false;
          following.delete(key);
          // Gone from /config: its peers go (a changed one is made again below).
          if (!wanted.has(key)) this.apply(u, f.source, []);
        }
      for (const [key, source] of wanted)
        if (!following.has(key)) {
          const alive = { on: true };
          following.set(key, { alive, source });
          void this.follow(u, source, dns, alive);
        }
    };
    check();
    const timer = setInterval(check, NAMES_POLL_MS);
    timer.unref();
    this.intervals.push(timer);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const t of this.intervals) clearInterval(t);
  }

  /** The first round's promise; later rounds run from timers. */
  private follow(u: NamedUpstream, server: NameSource, dns: DnsResolver, alive: { on: boolean } = { on: true }): Promise<void> {
    let failing: string | undefined;
    const what = `"${server.service ? `${server.service}@` : ''}${server.server}" of upstream "${u.name}"`;
    const round = async (): Promise<void> => {
      if (this.stopped || !alive.on) return;
      let next: number;
      try {
        const { found, expires } = await this.lookup(u, server, dns);
        if (this.stopped || !alive.on) return;
        this.apply(u, server, found);
        if (failing !== undefined) this.log('notice', `${what} resolves again: ${found.map((f) => f.address).join(', ')}`);
        failing = undefined;
        next = expires;
      } catch (e) {
        if (this.stopped || !alive.on) return;
        const err = e instanceof DnsError ? e : undefined;
        // The name has no address: its peers go. Any other failure keeps them.
        if (err && (err.rcode === RCODE.not_found || err.rcode === RCODE.success)) this.apply(u, server, []);
        const why = (e as Error).message;
        if (failing !== why) this.log('warn', `${what} could not be resolved: ${why}${err && (err.rcode === 3 || err.rcode === 0) ? '; it has no peers' : ''}`);
        failing = why;
        next = Date.now() + (err && err.rcode !== 'timedout' ? 1000 * (u.resolver.valid ?? 5) : RETRY_MS);
      }
      if (!alive.on) return;
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void round();
      }, Math.max(0, next - Date.now()));
      this.timers.add(timer);
    };
    return round();
  }

  private async lookup(u: NamedUpstream, server: NameSource, dns: DnsResolver): Promise<{ found: FoundPeer[]; expires: number }> {
    if (!server.service) {
      const a = await dns.lookup(server.host);
      return { found: unique(a.addresses.map((ip) => ({ address: addressKey(ip, server.port) }))), expires: a.expires };
    }
    const srv = await dns.resolveSrv(srvName(server));
    const lowest = Math.min(...srv.records.map((r) => r.priority));
    const records = u.backup ? srv.records : srv.records.filter((r) => r.priority === lowest);
    let expires = srv.expires;
    const targets = await Promise.allSettled(records.map((r) => dns.lookup(r.target)));
    const found: FoundPeer[] = [];
    targets.forEach((t, i) => {
      if (t.status !== 'fulfilled') return;
      const r = records[i];
      expires = Math.min(expires, t.value.expires);
      // SRV weight 0 means "rarely" (RFC 2782): the least weight a peer can have.
      for (const ip of t.value.addresses)
        found.push({ address: addressKey(ip, r.port), weight: Math.max(1, r.weight), ...(u.backup ? { backup: r.priority !== lowest } : {}) });
    });
    if (found.length === 0) throw new DnsError(srvName(server), 0);
    return { found: unique(found), expires };
  }

  private apply(u: NamedUpstream, server: NameSource, found: readonly FoundPeer[]): void {
    const entry = catalogEntry(this.status, u);
    if (!entry) return;
    const result = changePeers(this.status, entry, (peers) => reconcile(peers, server, found) ?? { error: 'unchanged' as const });
    if (result.ok || result.error === 'unchanged') return;
    const why = 'description' in result ? result.description : 'its zone has no room for them';
    this.log('error', `the peers of "${server.server}" in upstream "${u.name}" were not changed: ${why}`);
  }
}

/** The first of each address: two records naming one address make one peer. */
function unique(found: FoundPeer[]): FoundPeer[] {
  const seen = new Set<string>();
  return found.filter((f) => !seen.has(f.address) && !!seen.add(f.address));
}

function catalogEntry(status: StatusStore, u: NamedUpstream): UpstreamConfig | undefined {
  const c = status.catalog();
  const list = (u.protocol === 'http' ? c.http?.upstreams : c.stream?.upstreams) ?? [];
  return list.find((x) => x.name === u.name);
}

/** The follower of a configuration's `resolve` servers, of HTTP and stream upstreams
 * alike; none when no upstream has a resolver. */
export function followNames(status: StatusStore, config: ServerConfig, resolvers: Resolvers, log: Log): NameFollower | undefined {
  const upstreams: NamedUpstream[] = [];
  const watched: NamedUpstream[] = [];
  const lists: ReadonlyArray<readonly [Protocol, readonly UpstreamBlockConfig[]]> = [
    ['http', config.http?.upstreams ?? []],
    ['stream', config.stream?.upstreams ?? []],
  ];
  for (const [protocol, list] of lists)
    for (const u of list) {
      if (!u.resolver) continue;
      const named: NamedUpstream = {
        protocol,
        name: u.name,
        servers: u.servers.filter((s) => s.resolve).map(sourceOf),
        resolver: u.resolver,
        backup: !['hash', 'ip_hash', 'random'].includes(u.method.kind),
      };
      watched.push(named);
      if (named.servers.length) upstreams.push(named);
    }
  if (!watched.length) {
    resolvers.keepOnly(new Set());
    return undefined;
  }
  return new NameFollower(status, upstreams, resolvers, log, watched);
}
