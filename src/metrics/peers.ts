// The live peer set of each upstream: what /config changes and what /status and the
// balancers read. It is a seqlocked record in the upstream's own zone, so that
// - a reader learns whether it changed with one atomic load, and never sees half of an
//   update (the record is replaced whole);
// - writers in different workers are serialised by a compare-and-swap on the record's
//   generation: an update computed from an older set is computed again;
// - a writer killed in the middle leaves the old set (the zone's undo log rolls the
//   publication back).
//
// Each peer carries an id, unique in its upstream for the life of the zone: its counter
// blocks are keyed by it, so a peer removed and added again starts from zero. Removed
// peers' blocks are freed only RETIRE_MS later, once requests still using them are over,
// and not while a connection to them is still open (a stream session).
import { writeFileSync, renameSync, readFileSync, existsSync, unlinkSync } from 'node:fs';
import { ZoneFullError } from '../engine/index.js';
import { isPeerAddressError, parsePeerAddress, peerAddress, peerKeyOf, peerName, type PeerConfig, type UpstreamConfig } from './catalog.js';
import type { StatusStore } from './store.js';

/** A peer of the live set: its configuration (only what was set explicitly) and its id. */
export interface PeerEntry extends PeerConfig {
  readonly id: number;
}

export interface PeerSet {
  readonly peers: readonly PeerEntry[];
  /** The id the next new peer takes. */
  readonly nextId: number;
  /** Removed peers whose blocks are not freed yet, and when they were removed. */
  readonly retired: ReadonlyArray<{ readonly id: number; readonly at: number }>;
  /** The configuration store's revision of these peers (`config_store`): what the
   * instance last applied, and the entity tag of /config under the upstream. Published
   * with the peers, so that a reader never sees the one without the other. */
  readonly revision?: number;
}

const RECORD_KEY = 'peers';
/** How long a removed peer's memory stays: longer than a request to it takes. */
export const RETIRE_MS = 60_000;
const ATTEMPTS = 1000;

export const zoneOf = (u: UpstreamConfig): string => u.zone ?? u.name;
/** What an upstream keeps in its zone goes under its name: several upstreams may share
 * one zone (nginx: "several groups may share the same zone"), and an http and a stream
 * upstream never do (config/load.ts), so the name alone tells them apart. */
export const upstreamKey = (u: UpstreamConfig, key: string): string => `${u.name}/${key}`;
export const peerKey = (u: UpstreamConfig, id: number): string => upstreamKey(u, `peer/${id}`);
/** The record the upstream's live set is published in (a balancer holds it). */
export const peerSetRecord = (status: StatusStore, u: UpstreamConfig) => status.record(zoneOf(u), upstreamKey(u, RECORD_KEY));
/** Whether the upstream's set was published (a zone made elsewhere may have none yet). */
export const hasPeerSet = (status: StatusStore, u: UpstreamConfig): boolean => status.zoneNamed(zoneOf(u)).has(upstreamKey(u, RECORD_KEY));

/** The upstream's live set, decoded again only when it changed. */
export function peerSet(status: StatusStore, u: UpstreamConfig): PeerSet {
  const set = peerSetRecord(status, u).readJSON<PeerSet>();
  if (!set) throw new Error(`upstream "${u.name}" has no peer set yet`);
  return set;
}

/** Changes of the set since `generation`: one atomic load. */
export function peerGeneration(status: StatusStore, u: UpstreamConfig): number {
  return peerSetRecord(status, u).generation;
}

/** Makes a new peer's memory before it is published; throws ZoneFullError. */
export type Allocate = (u: UpstreamConfig, id: number) => void;
/** Frees a removed peer's memory. */
export type Free = (u: UpstreamConfig, id: number) => void;
/** Whether a removed peer still has connections (a stream session may last for hours):
 * its memory stays until they end. */
export type Busy = (u: UpstreamConfig, id: number) => boolean;

export type UpdateResult<E> =
  | { ok: true; created: boolean; set: PeerSet }
  | { ok: false; error: E }
  | { ok: false; error: 'no-room' }
  /** The upstream's state file cannot be written: nothing was published. */
  | { ok: false; error: 'state-file'; description: string };

/**
 * Replaces the upstream's peers with what `change` makes of the current ones (by name;
 * a name already there keeps its id and its counters). `change` may return an error
 * instead, and may run more than once: when another worker's update came first, it runs
 * again on the newer set. `created` says whether `name` (if given) is new.
 */
export function updatePeers<E>(
  status: StatusStore,
  u: UpstreamConfig,
  change: (peers: readonly PeerEntry[], set: PeerSet) => PeerConfig[] | { error: E },
  memory: { allocate: Allocate; free: Free; busy?: Busy },
  name?: string,
  revision?: number,
): UpdateResult<E> {
  const record = peerSetRecord(status, u);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    // The generation first: content read after it is at least as new, and a newer one
    // makes the write below fail and this loop run again.
    const generation = record.generation;
    const current = peerSet(status, u);
    const changed = change(current.peers, current);
    if (!Array.isArray(changed)) return { ok: false, error: changed.error };
    const next = keyPeers(changed);
    const now = Date.now();
    const ids = new Map(current.peers.map((p) => [peerName(p), p.id]));
    let nextId = current.nextId;
    const peers: PeerEntry[] = [];
    try {
      for (const p of next) {
        const id = ids.get(peerName(p)) ?? nextId++;
        if (id >= current.nextId) memory.allocate(u, id);
        peers.push({ ...p, id });
      }
    } catch (err) {
      // Blocks made for ids no one has published stay for the next writer, who takes
      // the same ids: nothing leaks.
      if (err instanceof ZoneFullError) return { ok: false, error: 'no-room' };
      throw err;
    }
    const kept = new Set(peers.map((p) => p.id));
    const removed = current.peers.filter((p) => !kept.has(p.id)).map((p) => ({ id: p.id, at: now }));
    const expired = current.retired.filter((r) => now - r.at >= RETIRE_MS && !memory.busy?.(u, r.id));
    const at = revision ?? current.revision;
    const set: PeerSet = { peers, nextId, retired: [...current.retired.filter((r) => !expired.includes(r)), ...removed], ...(at !== undefined ? { revision: at } : {}) };
    // The new state file is made before the set is published: a change that could not
    // survive a restart is refused whole rather than kept in memory only.
    const staged = u.state === undefined ? undefined : stageStateFile(u.state, peers);
    if (typeof staged === 'object') return { ok: false, error: 'state-file', description: staged.error };
    const written = record.writeIf(Buffer.from(JSON.stringify(set)), generation);
    if (written !== 'written') {
      if (staged !== undefined) discard(staged);
      if (written === 'conflict') continue;
      return { ok: false, error: 'no-room' };
    }
    for (const r of expired) memory.free(u, r.id);
    if (staged !== undefined) commitStateFile(status, u, staged, generation + 1);
    return { ok: true, created: name !== undefined && !ids.has(name), set };
  }
  throw new Error(`upstream "${u.name}": ${ATTEMPTS} concurrent updates in a row came first`);
}

/** The first set of an upstream, at start or reload: the state file's peers when it has
 * one, else the configured ones. Peers of the same name keep their ids. */
export function publishPeers(status: StatusStore, u: UpstreamConfig, allocate: Allocate, free: Free): void {
  const record = peerSetRecord(status, u);
  const file = u.state ? fromStateFile(u, readStateFile(u.state)) : undefined;
  const configured = file ?? u.peers;
  if (!record.readJSON()) {
    const set: PeerSet = { peers: keyPeers(configured).map((p, id) => ({ ...p, id })), nextId: configured.length, retired: [] };
    for (const p of set.peers) allocate(u, p.id);
    if (!record.writeJSON(set)) throw new Error(`the zone of upstream "${u.name}" has no room for its peers`);
    return;
  }
  // A reload keeps the peers a resolver made for a name still configured: the resolver
  // corrects them on its next answer, and their counters go on.
  const names = [...(u.resolve ?? []), ...readNames(status, u)];
  const resolved = (p: PeerConfig) => p.name !== undefined && names.some((r) => r.server === p.server && r.service === p.service);
  const result = updatePeers(
    status,
    u,
    (current) => [...(file ? keysKept(current, file) : configured.map((p) => ({ ...p }))), ...current.filter(resolved).map(({ id: _id, ...p }) => p)],
    { allocate, free },
  );
  if (!result.ok) throw new Error('description' in result ? result.description : `the zone of upstream "${u.name}" has no room for its peers`);
}

/**
 * Keys for a new live set: a key a peer has stays (one /config made as
 * `<address>~<n>`); the others take their address, or when an earlier one has it, the
 * next `<address>~<n>` free. So `server A; server A;` are two peers, `A` and `A~2`, each
 * with its own id, counters and parameters, as nginx keeps them.
 */
export function keyPeers(peers: readonly PeerConfig[]): PeerConfig[] {
  const taken = new Set<string>();
  const kept = peers.map((p) => {
    const keep = p.key !== undefined && p.key !== peerAddress(p) && !taken.has(p.key);
    if (keep) taken.add(p.key!);
    return keep;
  });
  return peers.map((p, i) => {
    if (kept[i]) return p;
    const { key: _key, ...rest } = p;
    const address = peerAddress(p);
    let ordinal = 1;
    while (taken.has(peerKeyOf(address, ordinal))) ordinal++;
    taken.add(peerKeyOf(address, ordinal));
    return ordinal === 1 ? rest : { ...rest, key: peerKeyOf(address, ordinal) };
  });
}

/** A state file's peers as a reload reads them: the file keeps addresses, not keys, so
 * the servers of one address take the keys the live peers of that address have, in
 * order (counters and /config paths go on as they were). */
function keysKept(current: readonly PeerConfig[], peers: readonly PeerConfig[]): PeerConfig[] {
  const keys = new Map<string, string[]>();
  for (const p of current) {
    const list = keys.get(peerAddress(p));
    if (list) list.push(peerName(p));
    else keys.set(peerAddress(p), [peerName(p)]);
  }
  return peers.map((p) => {
    const key = keys.get(peerAddress(p))?.shift();
    return key === undefined ? { ...p } : { ...p, key };
  });
}

/** The state file's peers, a configured server (`localhost:8081`) under the name it has
 * in the configuration (`127.0.0.1:8081`): the file writes servers as configured, and
 * read back alone they would be other peers, without their counters. */
function fromStateFile(u: UpstreamConfig, peers: PeerConfig[] | undefined): PeerConfig[] | undefined {
  const names = new Map(u.peers.flatMap((p) => (p.name !== undefined && p.service === undefined ? [[p.server, p.name] as const] : [])));
  return peers?.map((p) => {
    const name = p.name === undefined && p.service === undefined ? names.get(p.server) : undefined;
    return name === undefined ? p : { ...p, name };
  });
}

// ---- The state file -------------------------------------------------------------------
// As NGINX Plus's `state` directive: the upstream's peers as `server` lines, rewritten
// after each change (a temporary file renamed over it, so a crash leaves the old or the
// new file) and read instead of the configured servers at start and reload.

/** A peer parameter, declared once: the `server` directive's word (also its name in
 * /config), where PeerConfig keeps it, its kind of value, and the value it has when not
 * set (what /config shows with `defaults=on`), in the order /config shows them. /config
 * adds only how it checks a JSON value; the state file writes and reads the same words. */
export interface PeerParam {
  readonly word: string;
  readonly key: keyof PeerConfig;
  readonly kind: 'number' | 'time' | 'flag' | 'text';
  readonly default: number | boolean | string;
  /** Only HTTP upstreams have it. */
  readonly http?: true;
}

export const PEER_PARAMS: readonly PeerParam[] = [
  { word: 'weight', key: 'weight', kind: 'number', default: 1 },
  { word: 'max_conns', key: 'maxConns', kind: 'number', default: 0 },
  { word: 'max_fails', key: 'maxFails', kind: 'number', default: 1 },
  { word: 'fail_timeout', key: 'failTimeout', kind: 'time', default: 10 },
  { word: 'slow_start', key: 'slowStart', kind: 'time', default: 0 },
  { word: 'backup', key: 'backup', kind: 'flag', default: false },
  { word: 'down', key: 'down', kind: 'flag', default: false },
  { word: 'sid', key: 'sid', kind: 'text', default: '', http: true },
];

/** The balancing methods that ramp a recovering peer's weight: `slow_start` works by
 * the effective weight of round robin, which the others do not use (Angie: "round robin
 * or least_conn"). */
const SLOW_START_METHODS: ReadonlySet<string> = new Set(['round_robin', 'least_conn']);

/**
 * Why an upstream's balancing method refuses a `slow_start` (undefined when it takes
 * it): one message for the configuration file (`-t`) and /config (400 FormatError).
 * 0 is slow start off, which every method takes, so that a peer read with
 * `defaults=on` can be written back as it was read.
 */
export function slowStartRefused(method: string | undefined, slowStart: number): string | undefined {
  if (slowStart === 0 || SLOW_START_METHODS.has(method ?? 'round_robin')) return undefined;
  return `balancing method "${method}" does not support parameter "slow_start": only round robin and "least_conn" ramp a peer's weight`;
}

export function stateFileText(peers: readonly PeerConfig[]): string {
  // The peers of a `server <name> resolve` come from its name at each start: the file
  // keeps the peers written by address.
  const lines = peers.filter((p) => !isResolved(p)).map((p) => {
    const words = [`server ${p.service ? `${p.service}@` : ''}${p.server}`];
    for (const { key, word, kind } of PEER_PARAMS) {
      const v = p[key];
      if (v === undefined || v === false) continue;
      if (kind === 'flag') words.push(word);
      else if (kind === 'time') words.push(Number.isInteger(v) ? `${word}=${String(v)}s` : `${word}=${Math.round(Number(v) * 1000)}ms`);
      else words.push(`${word}=${String(v)}`);
    }
    return words.join(' ') + ';\n';
  });
  return lines.join('');
}

/** A peer a resolver made: its server is a name, it is keyed by an address. */
const isResolved = (p: PeerConfig): boolean => p.service !== undefined || (p.name !== undefined && isPeerAddressError(parsePeerAddress(p.server)));

const temporaryOf = (path: string) => `${path}.${process.pid}.tmp`;

function discard(temporary: string): void {
  try {
    if (existsSync(temporary)) unlinkSync(temporary);
  } catch {
    // nothing more to clean
  }
}

/** Writes the peers to a temporary file beside the state file: its name, or why not. */
function stageStateFile(path: string, peers: readonly PeerConfig[]): string | { error: string } {
  const temporary = temporaryOf(path);
  try {
    writeFileSync(temporary, stateFileText(peers));
    return temporary;
  } catch (err) {
    discard(temporary);
    const e = err as NodeJS.ErrnoException;
    return { error: `the state file "${path}" cannot be written (${e.code ?? e.message})` };
  }
}

/**
 * Puts a staged file in place once its set, `published`, is out. Writers in other
 * workers rename theirs too, in any order: whoever renames checks afterwards that no
 * newer set came out meanwhile, and writes that one if it did. The last to rename has
 * seen the newest set, so the file ends with it.
 */
function commitStateFile(status: StatusStore, u: UpstreamConfig, staged: string, published: number): void {
  const path = u.state!;
  const record = peerSetRecord(status, u);
  let temporary = staged;
  let wrote = published;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    try {
      renameSync(temporary, path);
    } catch (err) {
      discard(temporary);
      process.emitWarning(`the state file ${path} was not written: ${(err as Error).message}`);
      return;
    }
    const generation = record.generation;
    if (generation === wrote) return;
    // The set read may be newer than `generation`: the next check then writes again.
    const next = stageStateFile(path, peerSet(status, u).peers);
    if (typeof next === 'object') {
      process.emitWarning(next.error);
      return;
    }
    temporary = next;
    wrote = generation;
  }
}

/** A line of a state file that is not a `server` line zonal can read. */
export class StateFileError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly reason: string,
  ) {
    super(`${file}:${line}: ${reason}`);
  }
}

/** The peers of a state file; undefined when there is none yet. Throws a StateFileError
 * on a bad line, and the file system's error when it cannot be read. */
export function readStateFile(path: string): PeerConfig[] | undefined {
  if (!existsSync(path)) return undefined;
  return parseStateFile(readFileSync(path, 'utf8'), path);
}

export function parseStateFile(text: string, path = 'state file'): PeerConfig[] {
  const peers: PeerConfig[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) return;
    const bad = (why: string) => new StateFileError(path, i + 1, why);
    if (!line.endsWith(';')) throw bad('a line ends with ";"');
    const [directive, address, ...params] = line.slice(0, -1).trim().split(/\s+/);
    if (directive !== 'server' || !address) throw bad('expected "server <address> [parameters];"');
    // The forms of the configuration file and /config, keyed as they key them.
    const parsed = parsePeerAddress(address);
    if (isPeerAddressError(parsed)) throw bad(parsed.error);
    const peer: { -readonly [K in keyof PeerConfig]: PeerConfig[K] } = { server: address, ...(parsed.address !== address ? { name: parsed.address } : {}) };
    for (const param of params) {
      const eq = param.indexOf('=');
      const word = eq < 0 ? param : param.slice(0, eq);
      const value = eq < 0 ? undefined : param.slice(eq + 1);
      const spec = PEER_PARAMS.find((s) => s.word === word);
      if (!spec || (spec.kind === 'flag') !== (value === undefined)) throw bad(`unknown parameter "${param}"`);
      if (spec.kind === 'flag') (peer as Record<string, unknown>)[spec.key] = true;
      else if (spec.kind === 'text') (peer as Record<string, unknown>)[spec.key] = value;
      else {
        const n = spec.kind === 'time' ? parseTime(value!, true) : /^\d{1,10}$/.test(value!) ? Number(value) : undefined;
        if (n === undefined || (word === 'weight' && n < 1)) throw bad(`bad value in "${param}"`);
        (peer as Record<string, unknown>)[spec.key] = n;
      }
    }
    peers.push(peer);
  });
  return peers;
}

const TIME_UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, M: 2592000, y: 31536000 };

/**
 * An nginx time (`10s`, `1m30s`, `500ms`, a bare number of seconds) in seconds;
 * undefined when malformed. Milliseconds only when `ms` is allowed (slow_start), as
 * nginx allows them only for values kept to the millisecond.
 */
export function parseTime(text: string, ms: boolean): number | undefined {
  if (/^\d+$/.test(text)) return Number(text);
  const parts = /^(?:\d+(?:ms|[smhdwMy]))+$/.test(text) ? text.match(/\d+(?:ms|[smhdwMy])/g)! : undefined;
  if (!parts) return undefined;
  let total = 0;
  for (const part of parts) {
    const [, digits, unit] = /^(\d+)(ms|[smhdwMy])$/.exec(part)!;
    if (unit === 'ms' && !ms) return undefined;
    total += Number(digits) * TIME_UNITS[unit];
  }
  return Math.round(total * 1000) / 1000;
}

// ---- Names /config added ----------------------------------------------------------------
// `PUT /config/.../servers/<name>` of a host name (or `<service>@<name>`) in an upstream
// with a resolver: the name and its parameters, which the server's resolver follows as it
// follows a configured `server <name> resolve`. A record of the upstream's zone beside its
// peer set, written by compare-and-swap as the set is.

/** A followed name: the peers made from it take `params`. */
export interface NameEntry {
  readonly server: string;
  readonly service?: string;
  readonly params: Omit<PeerConfig, 'server' | 'service' | 'name'>;
}

const NAMES_KEY = 'names';

export function readNames(status: StatusStore, u: UpstreamConfig): NameEntry[] {
  return status.record(zoneOf(u), upstreamKey(u, NAMES_KEY)).readJSON<NameEntry[]>() ?? [];
}

/** One atomic load: whether the names changed since `generation`. */
export function namesGeneration(status: StatusStore, u: UpstreamConfig): number {
  return status.record(zoneOf(u), upstreamKey(u, NAMES_KEY)).generation;
}

/** Replaces the names with what `change` makes of them; false when the zone has no room. */
export function updateNames(status: StatusStore, u: UpstreamConfig, change: (names: readonly NameEntry[]) => NameEntry[]): boolean {
  const record = status.record(zoneOf(u), upstreamKey(u, NAMES_KEY));
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const generation = record.generation;
    const written = record.writeIf(Buffer.from(JSON.stringify(change(record.readJSON<NameEntry[]>() ?? []))), generation);
    if (written === 'written') return true;
    if (written === 'no-room') return false;
  }
  throw new Error(`upstream "${u.name}": ${ATTEMPTS} concurrent updates of its names in a row came first`);
}
