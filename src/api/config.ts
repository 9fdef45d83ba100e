// /config: the upstreams' peers, read and changed at run time. GET shows what is set
// (with `defaults=on`, every parameter); PUT replaces, PATCH merges (RFC 7386), DELETE
// resets. A write is checked whole before anything changes, then published as one
// compare-and-swap of the upstream's peer set (metrics/peers.ts): every worker sees it
// on its next read, and a rejected request changes nothing.
//
// With a store (`config_store`, issue 34), a write is computed from the peers this
// instance last applied, committed to the store compared with the store's revision they
// came with, and only then applied and answered; the entity tag under an upstream is
// that revision (`"r123"`), the same on every instance of the fleet.
//
// Writes are taken from an upstream down. Above it (/config, /config/http,
// /config/http/upstreams) an update would span several zones, which one publication
// cannot make atomic: those paths are read-only (405).
import { createHash } from 'node:crypto';
import type { PeerConfig, UpstreamConfig } from '../metrics/catalog.js';
import { isPeerAddressError, parsePeerAddress, parsePeerName, peerKeyOf, peerName, splitPeerKey, type PeerName } from '../metrics/catalog.js';
import { parseTime, PEER_PARAMS, peerSet, readNames, slowStartRefused, updateNames, type NameEntry, type PeerEntry, type PeerSet, type UpdateResult } from '../metrics/peers.js';
import type { Json as TreeJson } from '../metrics/shape.js';
import type { Status } from '../metrics/status.js';
import { changePeers, type Protocol } from '../metrics/upstreams.js';
import { apiError, jsonResponse, methodNotAllowed, pathNotFound } from './errors.js';
import type { ApiResponse } from './types.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Params = { -readonly [K in keyof PeerConfig]?: PeerConfig[K] };

const MAX = 2147483647;
/** Bodies above this are refused whole (the transports stop reading at one byte more). */
export const CONFIG_BODY_LIMIT = 64 * 1024;
const READ_ONLY = 'GET, HEAD';
const WRITABLE = 'GET, HEAD, PUT, PATCH, DELETE';

// ---- Parameters: one declaration each --------------------------------------------------

interface Param {
  /** The JSON name, as the server directive's parameter. */
  readonly name: string;
  readonly key: keyof PeerConfig;
  readonly default: number | boolean | string;
  readonly http?: true;
  /** The value as stored, or a description of what is accepted. */
  parse(v: Json): number | boolean | string | { expected: string };
}

const whole = (min: number) => (v: Json) =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= MAX ? v : { expected: `a whole number from ${min} to ${MAX}` };

/** Seconds as a number, or an nginx time string; to the millisecond only when `ms`. */
const time = (ms: boolean) => (v: Json) => {
  const expected = { expected: `a number of seconds from 0 to ${MAX}${ms ? ' (to the millisecond)' : ''} or a time such as "10s" or "1m"${ms ? ' or "500ms"' : ''}` };
  let seconds: number | undefined;
  if (typeof v === 'number') seconds = v;
  else if (typeof v === 'string') seconds = parseTime(v, ms);
  if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0 || seconds > MAX) return expected;
  const scaled = ms ? seconds * 1000 : seconds;
  return Math.abs(scaled - Math.round(scaled)) < 1e-9 ? Math.round(scaled) / (ms ? 1000 : 1) : expected;
};

const flag = (v: Json) => (typeof v === 'boolean' ? v : { expected: 'true or false' });

/** How /config checks each parameter's JSON value (PEER_PARAMS declares the rest). */
const PARSE: Record<string, Param['parse']> = {
  weight: whole(1),
  max_conns: whole(0),
  max_fails: whole(0),
  fail_timeout: time(false),
  slow_start: time(true),
  backup: flag,
  down: flag,
  sid: (v) => (typeof v === 'string' && /^[\x21-\x7e]{0,255}$/.test(v) ? v : { expected: 'a string of up to 255 printable characters without spaces' }),
};

export const PARAMS: readonly Param[] = PEER_PARAMS.map((p) => ({
  name: p.word,
  key: p.key,
  default: p.default,
  ...(p.http ? { http: true as const } : {}),
  parse: PARSE[p.word],
}));

/** Methods whose peers cannot be backups (nginx: hash, ip_hash and random balancers). */
const NO_BACKUP = new Set(['hash', 'ip_hash', 'random']);

function paramsOf(protocol: Protocol): readonly Param[] {
  return protocol === 'http' ? PARAMS : PARAMS.filter((p) => !p.http);
}

// ---- Reading ------------------------------------------------------------------------

/** A peer a resolver made from a `server <name> resolve`: keyed by its address, its
 * server a name (or an SRV service's). */
const isResolved = (p: PeerConfig): boolean => p.service !== undefined || (p.name !== undefined && isPeerAddressError(parsePeerAddress(p.server)));

/** What /config shows of a resolved peer and takes back unchanged: where it came from. */
const ORIGIN_FIELDS = ['server', 'service'] as const;

function peerJson(p: PeerConfig, protocol: Protocol, defaults: boolean): { [key: string]: Json } {
  const out: { [key: string]: Json } = {};
  if (isResolved(p)) for (const f of ORIGIN_FIELDS) if (p[f] !== undefined) out[f] = p[f]!;
  for (const param of paramsOf(protocol)) {
    const v = p[param.key];
    if (v !== undefined) out[param.name] = v as Json;
    else if (defaults) out[param.name] = param.default;
  }
  return out;
}

function serversJson(status: Status, u: UpstreamConfig, protocol: Protocol, defaults: boolean): { [key: string]: Json } {
  return serversOf(peerSet(status, u).peers, protocol, defaults);
}

function serversOf(peers: readonly PeerConfig[], protocol: Protocol, defaults: boolean): { [key: string]: Json } {
  const out: { [key: string]: Json } = {};
  for (const p of peers) out[peerName(p)] = peerJson(p, protocol, defaults);
  return out;
}

function upstreamsOf(status: Status, protocol: Protocol): UpstreamConfig[] {
  const c = status.catalog();
  return (protocol === 'http' ? c.http?.upstreams : c.stream?.upstreams) ?? [];
}

/** The protocols with configurable upstreams, in the tree's order. */
function protocols(status: Status): Protocol[] {
  return (['http', 'stream'] as const).filter((p) => upstreamsOf(status, p).length > 0);
}

/** The whole /config tree as JSON: what GET / shows under `config` (it holds no null). */
export function configJson(status: Status, defaults = false): TreeJson {
  const out: { [key: string]: Json } = {};
  for (const protocol of protocols(status)) {
    const ups: { [key: string]: Json } = {};
    for (const u of upstreamsOf(status, protocol)) ups[u.name] = { servers: serversJson(status, u, protocol, defaults) };
    out[protocol] = { upstreams: ups };
  }
  return out as TreeJson;
}

// ---- The store's values -------------------------------------------------------------

/** What a store keeps of an upstream: its peers in the shape GET shows them
 * (`{"servers": {...}}`). A resolver's peers are each instance's own: not kept. */
export function storedUpstream(peers: readonly PeerConfig[], protocol: Protocol): { servers: { [key: string]: Json } } {
  return { servers: serversOf(peers.filter((p) => !isResolved(p)), protocol, false) };
}

/** The peers a stored value makes, checked as a PUT of the upstream is, with the
 * resolver's peers of `current` kept; or why the value is refused. */
export function peersOfStored(protocol: Protocol, u: UpstreamConfig, value: unknown, current: readonly PeerEntry[]): PeerConfig[] | { error: string } {
  try {
    const body = value as Json;
    if (!isObject(body) || !isObject(body.servers)) throw new FormatError('the value is not an object with a "servers" object');
    const stored = applyServers(protocol, u, [], body.servers, false, KEEP_NAMES);
    return [...stored, ...current.filter(isResolved).map(stripId)];
  } catch (e) {
    if (e instanceof FormatError) return { error: e.description };
    throw e;
  }
}

/**
 * Where the writes of an instance with a store go (`config_store`). `commit` sends the
 * upstream's new peers to the store, on the condition that the store still has the
 * revision `base` this instance last applied; committed, it applies them (changePeers,
 * with the new revision) before it resolves. `conflict`: another instance wrote first,
 * and what it wrote has been applied: the write is computed again from it.
 */
export interface ConfigStore {
  commit(protocol: Protocol, u: UpstreamConfig, base: number, peers: readonly PeerConfig[]): Promise<StoreCommit>;
}

export type StoreCommit =
  | { readonly ok: true; readonly revision: number }
  | { readonly ok: false; readonly conflict: true }
  /** Refused whole, nothing changed: the store is unreachable or has no quorum (503). */
  | { readonly ok: false; readonly status: number; readonly error: string; readonly description: string };

/** How many times a write is computed again after other instances' writes came first. */
const STORE_ATTEMPTS = 16;

// ---- Requests -----------------------------------------------------------------------

export interface ConfigRequest {
  readonly method: string;
  /** Segments after `config`, percent-decoded. */
  readonly segments: readonly string[];
  /** The API path, for messages. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly body?: Uint8Array;
  /** The Content-Type header of a write. */
  readonly contentType?: string;
  /** If-Match and If-None-Match: a write applies only when they hold. */
  readonly ifMatch?: string;
  readonly ifNoneMatch?: string;
}

/** What a /config write did, for an audit log: applied (2xx) or refused, and why. */
export interface ConfigChange {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** The error's description when refused; the success's otherwise. */
  readonly description: string;
  /** The body as sent (for DELETE: none), shortened for a log line. */
  readonly value?: string;
}

/** What a path names: how deep it goes and what it found on the way. */
interface Target {
  /** Segments after `config`. */
  depth: number;
  protocol?: Protocol;
  upstream?: UpstreamConfig;
  /** `servers` was reached. */
  servers?: boolean;
  name?: string;
  /** The key `name` stands for (keyOf). */
  key?: string;
  param?: Param;
}

/** A write answers later only with a store: it waits for the store's commit. */
export function handleConfig(status: Status, req: ConfigRequest, store?: ConfigStore): ApiResponse | Promise<ApiResponse> {
  const head = req.method === 'HEAD';
  const pretty = req.query.get('pretty') !== 'off';
  const defaults = req.query.get('defaults') === 'on';
  const t = target(status, req.segments);
  if (!t) return pathNotFound(req.path, head);
  const writable = !!t.upstream;
  if (req.method === 'GET' || head) {
    const value = read(status, t, defaults);
    if (value === undefined) return pathNotFound(req.path, head);
    // The tag is the entity's own (its parameters as set, whatever `defaults` shows), or
    // the store's revision of its upstream.
    const revision = t.upstream ? peerSet(status, t.upstream).revision : undefined;
    return jsonResponse(200, value, pretty, head, { ETag: revision !== undefined ? revisionTag(revision) : entityTag(defaults ? read(status, t, false) : value) });
  }
  if (!['PUT', 'PATCH', 'DELETE'].includes(req.method) || !writable)
    return methodNotAllowed(req.method, req.path, writable ? WRITABLE : READ_ONLY);
  let body: Json | undefined;
  if (req.method !== 'DELETE') {
    const refused = unsupportedType(req.method, req.contentType);
    if (refused) return refused;
    const parsed = parseBody(req.body);
    if ('response' in parsed) return parsed.response;
    body = parsed.value;
  }
  return write(status, t, req, body, store);
}

/** The JSON types a write may carry: a PATCH is a JSON merge patch (RFC 7386) either way. */
const PATCH_TYPES = 'application/json, application/merge-patch+json';

/** 415 unless the body is declared JSON: a browser sends a cross-site form or a
 * `text/plain` fetch without asking first, never `application/json`. */
function unsupportedType(method: string, contentType: string | undefined): ApiResponse | undefined {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/json' || (method === 'PATCH' && type === 'application/merge-patch+json')) return undefined;
  const accepted = method === 'PATCH' ? PATCH_TYPES : 'application/json';
  return apiError(
    415,
    'UnsupportedMediaType',
    `The request body must be ${method === 'PATCH' ? 'application/json or application/merge-patch+json' : 'application/json'}${type ? `, not ${type}` : ': the request has no Content-Type'}.`,
    false,
    method === 'PATCH' ? { 'Accept-Patch': accepted } : {},
  );
}

/** A strong entity tag of an entity's JSON: equal JSON, equal tag. */
export function entityTag(value: Json | undefined): string {
  return `"${createHash('sha1').update(JSON.stringify(value ?? null)).digest('base64url').slice(0, 22)}"`;
}

/** The entity tag of everything under an upstream kept in a store: the store's revision. */
export const revisionTag = (revision: number): string => `"r${revision}"`;

/** The tag of the entity `t` names in `set`; undefined when it does not exist. */
function tagIn(t: Target, set: PeerSet, peers: readonly PeerConfig[]): string | undefined {
  const current = entityOf(t, peers, false);
  if (current === undefined) return undefined;
  return set.revision !== undefined ? revisionTag(set.revision) : entityTag(current);
}

/** Whether If-Match and If-None-Match hold for the entity's tag (`undefined`: absent),
 * with RFC 9110's strong comparison: a weak tag never matches If-Match. */
function preconditionsHold(tag: string | undefined, ifMatch: string | undefined, ifNoneMatch: string | undefined): boolean {
  const listed = (header: string) => header.split(',').map((s) => s.trim());
  if (ifMatch !== undefined) {
    const tags = listed(ifMatch);
    if (tag === undefined || !(tags.includes('*') || tags.includes(tag))) return false;
  }
  if (ifNoneMatch !== undefined && tag !== undefined) {
    const tags = listed(ifNoneMatch);
    if (tags.includes('*') || tags.some((x) => x.replace(/^W\//, '') === tag)) return false;
  }
  return true;
}

function target(status: Status, s: readonly string[]): Target | undefined {
  const t: Target = { depth: s.length };
  if (s.length === 0) return t;
  if (s[0] !== 'http' && s[0] !== 'stream') return undefined;
  t.protocol = s[0];
  if (!protocols(status).includes(t.protocol)) return undefined;
  if (s.length === 1) return t;
  if (s[1] !== 'upstreams') return undefined;
  if (s.length === 2) return t;
  t.upstream = upstreamsOf(status, t.protocol).find((u) => u.name === s[2]);
  if (!t.upstream) return undefined;
  if (s.length === 3) return t;
  if (s[3] !== 'servers') return undefined;
  t.servers = true;
  if (s.length === 4) return t;
  t.name = s[4];
  t.key = keyOf(s[4]);
  if (s.length === 5) return t;
  t.param = paramsOf(t.protocol).find((p) => p.name === s[5]);
  if (!t.param || s.length > 6) return undefined;
  return t;
}

function read(status: Status, t: Target, defaults: boolean): Json | undefined {
  if (!t.protocol) return configJson(status, defaults) as Json;
  if (!t.upstream) {
    const ups: { [key: string]: Json } = {};
    for (const u of upstreamsOf(status, t.protocol)) ups[u.name] = { servers: serversJson(status, u, t.protocol, defaults) };
    return t.depth === 1 ? { upstreams: ups } : ups;
  }
  const entity = entityOf(t, peerSet(status, t.upstream).peers, defaults);
  if (entity !== undefined || t.name === undefined) return entity;
  // A name the resolver follows, the configuration file's or one /config added: its
  // parameters, as its peers take them.
  const named = nameOf(t.upstream, t.name);
  if (!named || 'error' in named) return undefined;
  const entry = readNames(status, t.upstream).find((e) => sameName(e, named)) ?? fileName(t.upstream, named);
  if (!entry) return undefined;
  const shown = nameJson(entry, t.protocol, defaults);
  return t.param ? (shown[t.param.name] ?? t.param.default) : shown;
}

/** What /config shows of a followed name, and takes back unchanged: where its peers come
 * from (`server`, `service`, `resolve`), then the parameters they are made with. */
function nameJson(e: NameEntry, protocol: Protocol, defaults: boolean): { [key: string]: Json } {
  return { server: e.server, ...(e.service !== undefined ? { service: e.service } : {}), resolve: true, ...peerJson({ ...e.params, server: e.server }, protocol, defaults) };
}

/** A `server <name> resolve` of the configuration file that `n` names: the file may write
 * `srv.test` for the name /config spells `srv.test:80`. */
function fileName(u: UpstreamConfig, n: PeerName): NameEntry | undefined {
  const r = (u.resolve ?? []).find((r) => {
    const parsed = parsePeerName(r.service !== undefined ? `${r.service}@${r.server}` : r.server);
    return !('error' in parsed) && sameName(parsed, n);
  });
  return r && { server: r.server, ...(r.service !== undefined ? { service: r.service } : {}), params: r.params ?? {} };
}

/** A host name (or `<service>@<name>`) in an upstream with a resolver: a name its
 * resolver follows (`server <name> resolve` written through /config). Undefined for an
 * address, or when the upstream has no resolver. */
function nameOf(u: UpstreamConfig, name: string): PeerName | { error: string } | undefined {
  if (!u.resolver) return undefined;
  const address = parsePeerAddress(name);
  if (!isPeerAddressError(address) || !address.resolver) return undefined;
  const parsed = parsePeerName(name);
  return 'error' in parsed ? { error: parsed.error } : parsed;
}

const sameName = (e: { server: string; service?: string }, n: PeerName) => e.server === n.server && e.service === n.service;

/** PUT, PATCH or DELETE of a name: the names record (metrics/peers.ts), which the
 * primary's resolver follows; its peers appear as it resolves, keyed by address. */
function writeName(status: Status, t: Target, req: ConfigRequest, body: Json | undefined, named: PeerName): ApiResponse {
  const u = t.upstream!;
  const merge = req.method === 'PATCH';
  if (fileName(u, named)) return apiError(400, 'FormatError', fileNameError(t.name!));
  const current = readNames(status, u).find((e) => sameName(e, named));
  if (req.method === 'DELETE') {
    if (!current || t.param) return pathNotFound(req.path);
    if (!updateNames(status, u, (names) => names.filter((e) => !sameName(e, named))))
      return apiError(507, 'OutOfMemory', `The shared memory zone of upstream "${u.name}" has no room for the new configuration.`);
    // Its peers go with it now, not at the resolver's next look.
    changePeers(status, u, (peers) => peers.filter((p) => !(p.name !== undefined && p.server === named.server && p.service === named.service)).map(stripId));
    return jsonResponse(200, { success: 'Reset', description: `Configuration API entity "${req.path}" was reset to default.` }, true, false);
  }
  let params: Params;
  try {
    if (t.param) {
      if (!current) return pathNotFound(req.path);
      params = { ...current.params };
      if (merge && body === null) delete params[t.param.key];
      else setParam(params, t.param, body!, false, u);
      checkSlowStart(u, params);
    } else params = applyParams(t.protocol!, u, current && merge ? current.params : {}, withoutOrigin(body!, named), merge, undefined);
  } catch (e) {
    if (e instanceof FormatError) return apiError(400, 'FormatError', e.description);
    throw e;
  }
  const entry: NameEntry = { server: named.server, ...(named.service !== undefined ? { service: named.service } : {}), params };
  if (!updateNames(status, u, (names) => [...names.filter((e) => !sameName(e, named)), entry]))
    return apiError(507, 'OutOfMemory', `The shared memory zone of upstream "${u.name}" has no room for the new configuration.`);
  if (!current)
    return jsonResponse(201, { success: 'Created', description: `New configuration API entity "${req.path}" was created: its peers are its addresses, as the resolver finds them.` }, true, false);
  return jsonResponse(200, { success: 'Updated', description: `Existing configuration API entity "${req.path}" was updated with ${merge ? 'merging' : 'replacing'}.` }, true, false);
}

const fileNameError = (name: string) => `The server "${name}" is the configuration file's ("server ... resolve"): it is changed there.`;

/** A name's body without what GET shows of its origin (`server`, `service`, `resolve`),
 * which may be sent back as it is shown, and not changed. */
function withoutOrigin(body: Json, named: PeerName): Json {
  if (!isObject(body)) return body;
  const shown: { [key: string]: Json } = { server: named.server, service: named.service ?? null, resolve: true };
  const out: { [key: string]: Json } = {};
  for (const [field, value] of Object.entries(body)) {
    if (!Object.hasOwn(shown, field)) out[field] = value;
    else if (value !== shown[field]) throw new FormatError(`The "${field}" field of the server "${named.service !== undefined ? `${named.service}@` : ''}${named.server}" is its name's: it cannot be changed.`);
  }
  return out;
}

/** The entity an upstream's path names, from a set of its peers. */
function entityOf(t: Target, peers: readonly PeerConfig[], defaults: boolean): Json | undefined {
  const servers = serversOf(peers, t.protocol!, defaults);
  if (!t.servers) return { servers };
  if (t.name === undefined) return servers;
  // Own names only: `constructor` or `__proto__` is no server (the prototype's were 500 and 200).
  const key = Object.hasOwn(servers, t.key!) ? t.key! : t.name;
  if (!Object.hasOwn(servers, key)) return undefined;
  const peer = servers[key] as { [key: string]: Json };
  if (!t.param) return peer;
  return peer[t.param.name] ?? t.param.default;
}

function parseBody(body: Uint8Array | undefined): { value: Json } | { response: ApiResponse } {
  if (!body || body.length === 0) return { response: apiError(400, 'JsonError', 'The request has no JSON body.') };
  if (body.length > CONFIG_BODY_LIMIT)
    return { response: apiError(413, 'TooLarge', `The request body is larger than ${CONFIG_BODY_LIMIT} bytes.`) };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return { response: apiError(400, 'JsonError', 'The request body is not valid UTF-8.') };
  }
  try {
    return { value: JSON.parse(text) as Json };
  } catch (e) {
    return { response: apiError(400, 'JsonError', `The request body is not valid JSON: ${(e as Error).message}.`) };
  }
}

const isObject = (v: Json | undefined): v is { [key: string]: Json } => typeof v === 'object' && v !== null && !Array.isArray(v);

class FormatError {
  constructor(readonly description: string) {}
}

/** If-Match or If-None-Match did not hold when the write was to be made. */
class PreconditionFailed {}

/** The configuration file's check of `slow_start` against the balancing method, with its message. */
function checkSlowStart(u: UpstreamConfig, params: Params): void {
  const refused = slowStartRefused(u.method, params.slowStart ?? 0);
  if (refused) throw new FormatError(`The "slow_start" field is refused: ${refused}.`);
}

/** A peer's parameters after a PUT (`base` empty) or a PATCH (`base` the current ones). */
function applyParams(protocol: Protocol, u: UpstreamConfig, base: Params, patch: Json, merge: boolean, existing: PeerConfig | undefined): Params {
  if (!isObject(patch)) throw new FormatError('A server is a JSON object of its parameters.');
  const out: Params = merge ? { ...base } : {};
  for (const [field, value] of Object.entries(patch)) {
    // A resolved peer's `server` and `service` are its name's: what GET shows may be
    // written back, and nothing else.
    const origin = ORIGIN_FIELDS.find((f) => f === field);
    if (origin && existing && isResolved(existing) && value === (existing[origin] ?? null)) continue;
    if (origin && existing && isResolved(existing))
      throw new FormatError(`The "${field}" field of a server from "${existing.server}" is the resolver's: it cannot be changed.`);
    const param = paramsOf(protocol).find((p) => p.name === field);
    if (!param) throw new FormatError(`The "${field}" field is unknown.`);
    setParam(out, param, value, merge, u);
  }
  if (existing && !!out.backup !== !!existing.backup) throw new FormatError('The "backup" field can be set only when the server is created.');
  checkSlowStart(u, out);
  return out;
}

function setParam(out: Params, param: Param, value: Json, merge: boolean, u: UpstreamConfig): void {
  if (value === null && merge) {
    delete out[param.key];
    return;
  }
  const parsed = param.parse(value);
  if (typeof parsed === 'object') throw new FormatError(`The "${param.name}" field must be ${parsed.expected}.`);
  if (param.name === 'backup' && parsed === true && NO_BACKUP.has(u.method ?? ''))
    throw new FormatError(`The "backup" field is not supported by the "${u.method}" balancing method of upstream "${u.name}".`);
  (out as Record<string, unknown>)[param.key] = parsed;
}

/** A new peer from its name and parameters: keyed by its address, `server` as written
 * (`localhost:8080` is the peer 127.0.0.1:8080), as the configuration file makes one;
 * `<address>~<n>` is a further server of the address, under that key. */
function newPeer(name: string, params: Params): PeerConfig {
  const further = splitPeerKey(name);
  if (further && 'error' in further) throw new FormatError(serverNameError(name, further.error));
  const server = further ? further.server : name;
  const parsed = parsePeerAddress(server);
  if (isPeerAddressError(parsed)) throw new FormatError(serverNameError(name, parsed.error));
  return {
    ...params,
    server,
    ...(parsed.address !== server ? { name: parsed.address } : {}),
    ...(further ? { key: peerKeyOf(parsed.address, further.ordinal) } : {}),
  };
}

/** The description of a refused server name: the configuration file's message, whole. */
const serverNameError = (name: string, why: string) => `The server name "${name}" is refused: ${why}.`;

/** The key a server name in a path or a body stands for: its address when it is one,
 * so that `localhost:8080`, `127.0.0.1:8080` and `[0::1]:80`, `[::1]` each name one peer
 * (and `localhost:8080~2`, `127.0.0.1:8080~2` the second of that address). */
function keyOf(name: string): string {
  const further = splitPeerKey(name);
  if (further && 'error' in further) return name;
  const parsed = parsePeerAddress(further ? further.server : name);
  return isPeerAddressError(parsed) ? name : peerKeyOf(parsed.address, further ? further.ordinal : 1);
}

const stripId = ({ id: _id, ...p }: PeerEntry): PeerConfig => p;
const paramsOfPeer = (p: PeerConfig): Params => {
  const out: Params = {};
  for (const param of PARAMS) if (p[param.key] !== undefined) (out as Record<string, unknown>)[param.key] = p[param.key];
  return out;
};
const withParams = (p: PeerConfig, params: Params): PeerConfig => {
  const { server, service, name, key } = p;
  return { ...params, server, ...(service !== undefined ? { service } : {}), ...(name !== undefined ? { name } : {}), ...(key !== undefined ? { key } : {}) };
};

/** The servers of an upstream after a PUT or PATCH of its `servers` object (`body`),
 * or a DELETE (`body` undefined). The peers of followed names are `names`'s: those of a
 * name it keeps stay, the others go, whatever the body lists by address. */
function applyServers(protocol: Protocol, u: UpstreamConfig, peers: readonly PeerEntry[], body: Json | undefined, merge: boolean, names: NamesPlan): PeerConfig[] {
  if (body !== undefined && !isObject(body)) throw new FormatError('"servers" is a JSON object of servers by name.');
  const byName = new Map(peers.map((p) => [peerName(p), stripId(p)]));
  const out = merge ? new Map(byName) : new Map<string, PeerConfig>();
  const seen = new Map<string, string>();
  for (const [name, value] of Object.entries(body ?? {})) {
    if (names.listed.has(name)) continue;
    const key = byName.has(name) ? name : keyOf(name);
    const twice = seen.get(key);
    if (twice !== undefined) throw new FormatError(`The servers "${twice}" and "${name}" are the same server ${key}.`);
    seen.set(key, name);
    const existing = byName.get(key);
    if (value === null && merge) {
      out.delete(key);
      continue;
    }
    const params = applyParams(protocol, u, existing && merge ? paramsOfPeer(existing) : {}, value, merge, existing);
    out.set(key, existing ? withParams(existing, params) : newPeer(name, params));
  }
  for (const [key, p] of byName) {
    const followed = names.follows(p);
    if (followed === false) out.delete(key);
    else if (followed && !out.has(key)) out.set(key, p);
  }
  return [...out.values()];
}

/** What a write of a whole collection (an upstream's `servers`, or the upstream) does to
 * the names its resolver follows. The file's names are the file's: their peers stay. The
 * names /config added are the collection's: a PUT keeps those its body lists by name, a
 * PATCH merges its body's into them, a DELETE ends them all; the peers of an ended name
 * go in the same publication, and the follower stops (resolver/peers.ts). */
interface NamesPlan {
  /** Body keys that are names (not addresses). */
  readonly listed: ReadonlySet<string>;
  /** The names /config follows after the write; undefined when they stay as they are. */
  readonly names?: NameEntry[];
  /** Of a peer: true when a followed name made it and keeps it, false when its name
   * ends, undefined when no name made it. */
  follows(p: PeerConfig): boolean | undefined;
}

/** A plan that leaves names alone: a stored value's servers are addresses only. */
const KEEP_NAMES: NamesPlan = { listed: new Set(), follows: () => undefined };

const madeByName = (p: PeerConfig, e: { server: string; service?: string }) => p.name !== undefined && p.server === e.server && p.service === e.service;

function namesPlan(status: Status, protocol: Protocol, u: UpstreamConfig, body: Json | undefined, mode: 'replace' | 'merge' | 'keep'): NamesPlan {
  const current = u.resolver ? readNames(status, u) : [];
  const file = u.resolve ?? [];
  const listed = new Set<string>();
  let names: NameEntry[] | undefined;
  if (mode !== 'keep') {
    const next = new Map<string, NameEntry>(mode === 'merge' ? current.map((e) => [`${e.service ?? ''}@${e.server}`, e]) : []);
    for (const [key, value] of isObject(body) ? Object.entries(body) : []) {
      const named = nameOf(u, key);
      if (!named) continue;
      if ('error' in named) throw new FormatError(serverNameError(key, named.error));
      if (fileName(u, named)) throw new FormatError(fileNameError(key));
      listed.add(key);
      const id = `${named.service ?? ''}@${named.server}`;
      const had = next.get(id);
      if (value === null && mode === 'merge') {
        next.delete(id);
        continue;
      }
      const params = applyParams(protocol, u, had && mode === 'merge' ? had.params : {}, withoutOrigin(value, named), mode === 'merge', undefined);
      next.set(id, { server: named.server, ...(named.service !== undefined ? { service: named.service } : {}), params });
    }
    names = [...next.values()];
  }
  const kept = names ?? current;
  return {
    listed,
    ...(names ? { names } : {}),
    follows: (p) => {
      if (file.some((e) => madeByName(p, e)) || kept.some((e) => madeByName(p, e))) return true;
      return current.some((e) => madeByName(p, e)) ? false : undefined;
    },
  };
}

/** A write of a whole collection: what it does to the servers. */
interface Collection {
  readonly mode: 'replace' | 'merge' | 'keep';
  /** The `servers` object written (undefined: none, a DELETE). */
  readonly body?: Json;
}

/** The collection write a request makes, when it names an upstream or its `servers`. */
function collectionWrite(t: Target, method: string, body: Json | undefined): Collection | undefined {
  if (t.name !== undefined) return undefined;
  const merge = method === 'PATCH';
  if (method === 'DELETE') return { mode: 'replace' };
  if (t.servers) {
    if (!isObject(body)) throw new FormatError('"servers" is a JSON object of servers by name.');
    return { mode: merge ? 'merge' : 'replace', body };
  }
  // The upstream: `servers` is its one member.
  if (!isObject(body)) throw new FormatError('An upstream is a JSON object with a "servers" member.');
  for (const field of Object.keys(body)) if (field !== 'servers') throw new FormatError(`The "${field}" field is unknown.`);
  if (!('servers' in body)) return merge ? { mode: 'keep' } : { mode: 'replace' };
  if (body.servers === null && merge) return { mode: 'replace' };
  if (!isObject(body.servers)) throw new FormatError('"servers" is a JSON object of servers by name.');
  return { mode: merge ? 'merge' : 'replace', body: body.servers };
}

/** Whether a peer is the one a path names: by its key, or by its name as it is listed
 * (a peer made before names had keys, or embedded with a name that is no address). */
const isNamed = (p: PeerConfig, t: Target) => peerName(p) === t.key || peerName(p) === t.name;

function write(status: Status, t: Target, req: ConfigRequest, body: Json | undefined, store: ConfigStore | undefined): ApiResponse | Promise<ApiResponse> {
  const u = t.upstream!;
  const named = t.name !== undefined ? nameOf(u, t.name) : undefined;
  if (named && 'error' in named) return apiError(400, 'FormatError', serverNameError(t.name!, named.error));
  if (named && store) return apiError(400, 'FormatError', storeNameError(t.name!));
  if (named) return writeName(status, t, req, body, named);
  const protocol = t.protocol!;
  const merge = req.method === 'PATCH';
  const del = req.method === 'DELETE';
  let missing = false;
  const conditional = req.ifMatch !== undefined || req.ifNoneMatch !== undefined;
  const change = (peers: readonly PeerEntry[], set: PeerSet): PeerConfig[] | { error: FormatError | PreconditionFailed } => {
    missing = false;
    try {
      const list = peers.map(stripId);
      // Checked on the set being replaced, inside the compare-and-swap: of two writers
      // holding the same tag, the second sees the first's change and fails.
      if (conditional && !preconditionsHold(tagIn(t, set, list), req.ifMatch, req.ifNoneMatch)) return { error: new PreconditionFailed() };
      if (collection) return collection.mode === 'keep' ? list : applyServers(protocol, u, peers, collection.body, collection.mode === 'merge', plan!);
      const at = list.findIndex((p) => isNamed(p, t));
      const existing = at >= 0 ? list[at] : undefined;
      if (!t.param) {
        if (del) {
          if (!existing) missing = true;
          return list.filter((_, i) => i !== at);
        }
        const params = applyParams(protocol, u, existing && merge ? paramsOfPeer(existing) : {}, body!, merge, existing);
        if (!existing) return [...list, newPeer(t.name!, params)];
        list[at] = withParams(existing, params);
        return list;
      }
      if (!existing) {
        missing = true;
        return list;
      }
      const params = paramsOfPeer(existing);
      if (del || (merge && body === null)) delete params[t.param.key];
      else setParam(params, t.param, body!, false, u);
      checkSlowStart(u, params);
      if (t.param.name === 'backup' && !!params.backup !== !!existing.backup)
        throw new FormatError('The "backup" field can be set only when the server is created.');
      list[at] = withParams(existing, params);
      return list;
    } catch (e) {
      if (e instanceof FormatError) return { error: e };
      throw e;
    }
  };
  // A parameter path or a DELETE of a server needs the server: look before writing.
  const before = peerSet(status, u).peers;
  if ((t.param || (del && t.name !== undefined)) && !before.some((p) => isNamed(p, t))) return pathNotFound(req.path);
  let collection: Collection | undefined;
  let plan: NamesPlan | undefined;
  try {
    collection = collectionWrite(t, req.method, body);
    if (collection) plan = namesPlan(status, protocol, u, collection.body, collection.mode);
  } catch (e) {
    if (e instanceof FormatError) return apiError(400, 'FormatError', e.description);
    throw e;
  }
  if (store) {
    if (plan?.listed.size) return apiError(400, 'FormatError', storeNameError([...plan.listed][0]));
    return storeWrite(status, t, store, change).then(finish);
  }
  return finish(changePeers(status, u, change, t.key));

  function finish(result: WriteResult): ApiResponse {
    if (!result.ok) {
      if (result.error === 'no-room')
        return apiError(507, 'OutOfMemory', `The shared memory zone of upstream "${u.name}" has no room for the new configuration.`);
      if (result.error instanceof StoreRefusal) return apiError(result.error.status, result.error.error, result.error.description);
      if ('description' in result) return apiError(500, 'InternalError', `Upstream "${u.name}" was not changed: ${result.description}.`);
      if (result.error instanceof PreconditionFailed)
        return apiError(412, 'PreconditionFailed', `Configuration API entity "${req.path}" does not match the If-Match or If-None-Match condition: it was changed or created since it was read.`);
      return apiError(400, 'FormatError', (result.error as FormatError).description);
    }
    if (missing) return pathNotFound(req.path);
    // The names after the peers: a request the peers' compare-and-swap refused (a format
    // error, a failed condition) has changed nothing. A name's follower that answers in
    // between puts back peers its watcher removes on its next look (200 ms).
    if (plan?.names && !updateNames(status, u, () => plan.names!)) {
      changePeers(status, u, () => before.map(stripId));
      return apiError(507, 'OutOfMemory', `The shared memory zone of upstream "${u.name}" has no room for the new configuration.`);
    }
    // The entity's new tag, for the writer's next conditional write.
    const set = peerSet(status, u);
    const tag = tagIn(t, set, set.peers);
    const tags: Record<string, string> = tag === undefined ? {} : { ETag: tag };
    if (del) return jsonResponse(200, { success: 'Reset', description: `Configuration API entity "${req.path}" was reset to default.` }, true, false, tags);
    if (result.created && t.name !== undefined && !t.param)
      return jsonResponse(201, { success: 'Created', description: `New configuration API entity "${req.path}" was created.` }, true, false, tags);
    return jsonResponse(
      200,
      { success: 'Updated', description: `Existing configuration API entity "${req.path}" was updated with ${merge ? 'merging' : 'replacing'}.` },
      true,
      false,
      tags,
    );
  }
}

type Change = (peers: readonly PeerEntry[], set: PeerSet) => PeerConfig[] | { error: FormatError | PreconditionFailed };
type WriteResult = UpdateResult<FormatError | PreconditionFailed | StoreRefusal>;

/** A store's refusal of a write (unreachable, no quorum): nothing changed anywhere. */
class StoreRefusal {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
  ) {}
}

const storeNameError = (name: string) =>
  `The server "${name}" is a name the resolver follows: names are each instance's own and are not kept in the configuration store ("config_store"), write them in the configuration file.`;

/** Each store's writes in flight, per upstream: one at a time, in order. */
const queues = new WeakMap<ConfigStore, Map<string, Promise<unknown>>>();

/** A write through the store: computed from the peers last applied, committed on the
 * condition that no other instance wrote since, and computed again when one did. An
 * instance sends one write of an upstream at a time: its own writes never race each
 * other, only other instances' do. */
function storeWrite(status: Status, t: Target, store: ConfigStore, change: Change): Promise<WriteResult> {
  let byUpstream = queues.get(store);
  if (!byUpstream) queues.set(store, (byUpstream = new Map()));
  const key = `${t.protocol}/${t.upstream!.name}`;
  const queued = (byUpstream.get(key) ?? Promise.resolve()).then(() => commitWrite(status, t, store, change));
  const settled = queued.catch(() => undefined);
  byUpstream.set(key, settled);
  void settled.then(() => {
    if (byUpstream.get(key) === settled) byUpstream.delete(key);
  });
  return queued;
}

async function commitWrite(status: Status, t: Target, store: ConfigStore, change: Change): Promise<WriteResult> {
  const u = t.upstream!;
  for (let attempt = 0; attempt < STORE_ATTEMPTS; attempt++) {
    const set = peerSet(status, u);
    if (set.revision === undefined)
      return { ok: false, error: new StoreRefusal(503, 'ServiceUnavailable', `Upstream "${u.name}" was not changed: this instance has not read it from the configuration store yet.`) };
    const next = change(set.peers, set);
    if (!Array.isArray(next)) return { ok: false, error: next.error };
    const created = t.name !== undefined && !set.peers.some((p) => isNamed(p, t));
    const committed = await store.commit(t.protocol!, u, set.revision, next);
    if (committed.ok) return { ok: true, created, set: peerSet(status, u) };
    if (!('conflict' in committed)) return { ok: false, error: new StoreRefusal(committed.status, committed.error, committed.description) };
    // Writers of several instances that keep meeting step apart.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 2 * attempt));
  }
  return {
    ok: false,
    error: new StoreRefusal(503, 'ServiceUnavailable', `Upstream "${u.name}" was not changed: other instances' writes came first ${STORE_ATTEMPTS} times in a row.`),
  };
}
