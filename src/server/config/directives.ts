// The directive table: one entry per directive with where it may be written, how many
// arguments it takes and what it does to its block. Adding a directive is adding an
// entry; walk.ts applies the generic checks for every entry. As in nginx, two directives
// of different contexts may share a name (`server` in http and in upstream): the entry
// is then a list, and the context picks one.
import fs from 'node:fs';
import path from 'node:path';
import type { Checker, InheritableLevel } from './levels.js';
import type { BalancingMethod, NextUpstreamCondition, PeerParams } from './model.js';
import { parseTime, readStateFile, StateFileError } from '../../metrics/peers.js';
import { limitDirectives } from '../limits/config.js';
import { streamDirectives } from '../stream/config.js';
import { cacheDirectives } from '../cache/config.js';
import { headerDirectives } from '../headers/config.js';
import { parseResolvedServer, resolverDirectives } from '../resolver/config.js';
import { probeDirectives } from '../probes/config.js';
import { dashboardDirectives } from '../dashboard/config.js';
import { histogramDirectives } from '../histograms/config.js';
import { runtimeDirectives } from '../runtime/config.js';
import { httpCoreDirectives } from '../http/config.js';
import { rewriteDirectives } from '../rewrite/config.js';
import { sslDirectives } from '../ssl/config.js';
import { accessDirectives } from '../access/config.js';
import { authBasicDirectives } from '../auth-basic/config.js';
import { apiDirectives } from '../api/config.js';
import { contentDirectives } from '../http/content-config.js';
import { checkReadable, define, MAX, milliseconds, readable, resolvePath, type DirectiveSpec } from './spec.js';
import { checkUpstreamBlock, newUpstreamBlock } from './upstream-check.js';
import type { Directive } from './syntax.js';

export type { DirectiveSpec } from './spec.js';
import {
  checkHeader,
  checkVariables,
  defaultPeer,
  isZoneName,
  parseProxyPass,
  parseSize,
  parseUpstreamAddress,
  requestVariable,
  type UpstreamAddress,
} from './values.js';

const inheritable = ['http', 'server', 'location'] as const;

/** The primary reads a state file at start and reload, and every /config change
 * rewrites it (a temporary file beside it, renamed over it): a file it could not read, or
 * a directory it could not write in, is an error now rather than a failure later. */
function checkStateFile(file: string, upstream: string, d: Directive, c: Checker): void {
  if (!c.disk) return;
  const cannot = (e: unknown) => c.error(d.origin, `cannot write the state file "${file}" (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  try {
    const dir = path.dirname(file);
    if (!fs.statSync(dir).isDirectory()) return cannot(new Error(`"${dir}" is not a directory`));
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (e) {
    return cannot(e);
  }
  try {
    const peers = readStateFile(file);
    const seen = new Set<string>();
    for (const p of peers ?? []) {
      if (p.service !== undefined) continue;
      const address = parseUpstreamAddress(p.server);
      if (address.error !== undefined) throw new StateFileError(file, lineOf(file, p.server), address.error);
      if (seen.has(address.value.address)) throw new StateFileError(file, lineOf(file, p.server), `a duplicate server ${address.value.address}`);
      seen.add(address.value.address);
    }
  } catch (e) {
    if (e instanceof StateFileError) c.error({ file: e.file, line: e.line }, `${e.reason} in the state file of upstream "${upstream}"`);
    else c.error(d.origin, `cannot read the state file "${file}" (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

/** The line of a state file that names `server`. */
function lineOf(file: string, server: string): number {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const i = lines.findIndex((l) => l.replace(/#.*$/, '').trim().split(/\s+/)[1]?.replace(/;$/, '') === server);
  return i + 1;
}

/** The modules that declare their directives beside their code. */
const modules: ReadonlyArray<Readonly<Record<string, DirectiveSpec | readonly DirectiveSpec[]>>> = [
  httpCoreDirectives,
  rewriteDirectives,
  sslDirectives,
  accessDirectives,
  authBasicDirectives,
  apiDirectives,
  contentDirectives,
  limitDirectives,
  streamDirectives,
  cacheDirectives,
  headerDirectives,
  resolverDirectives,
  probeDirectives,
  dashboardDirectives,
  histogramDirectives,
  runtimeDirectives,
];

/** The entries of a directive's name: none when it is unknown. */
export function specsOf(name: string): readonly DirectiveSpec[] {
  const entries = [directives, ...modules].filter((m) => Object.hasOwn(m, name)).map((m) => m[name]);
  return entries.flatMap((entry) => (isList(entry) ? entry : [entry]));
}

const isList = (entry: DirectiveSpec | readonly DirectiveSpec[]): entry is readonly DirectiveSpec[] => Array.isArray(entry);

/** A whole number from `least` to MAX, or undefined. */
function whole(arg: string | undefined, least: number): number | undefined {
  if (arg === undefined || !/^\d{1,10}$/.test(arg)) return undefined;
  const n = Number(arg);
  return n >= least && n <= MAX ? n : undefined;
}

/** A time in seconds to at most MAX, in milliseconds; `ms` only when `ms` (as nginx's
 * `fail_timeout` takes whole seconds, `slow_start` fractions). */
function seconds(arg: string | undefined, ms: boolean): number | undefined {
  const s = arg === undefined ? undefined : parseTime(arg, ms);
  return s === undefined || s > MAX ? undefined : Math.round(s * 1000);
}

type Peer = { -readonly [K in keyof PeerParams]: PeerParams[K] };

/** Gives a valid value to `to`; false for none. */
function put<T>(value: T | undefined, to: (v: T) => void): boolean {
  if (value === undefined) return false;
  to(value);
  return true;
}

/** The parameters of an upstream `server`, by name: each sets the peer from its value
 * (undefined for a flag) or says it is invalid. */
const SERVER_PARAMETERS: Readonly<Record<string, (value: string | undefined, peer: Peer) => boolean>> = {
  weight: (v, p) => put(whole(v, 1), (n) => (p.weight = n)),
  max_conns: (v, p) => put(whole(v, 0), (n) => (p.maxConns = n)),
  max_fails: (v, p) => put(whole(v, 0), (n) => (p.maxFails = n)),
  fail_timeout: (v, p) => put(seconds(v, false), (ms) => (p.failTimeout = ms)),
  slow_start: (v, p) => put(seconds(v, true), (ms) => (p.slowStart = ms)),
  // As /config takes it: printable, no spaces, at most 255.
  sid: (v, p) => put(v !== undefined && /^[\x21-\x7e]{1,255}$/.test(v) ? v : undefined, (sid) => (p.sid = sid)),
  backup: (v, p) => put(v === undefined ? true : undefined, (b) => (p.backup = b)),
  down: (v, p) => put(v === undefined ? true : undefined, (b) => (p.down = b)),
  resolve: (v, p) => put(v === undefined ? true : undefined, (b) => (p.resolve = b)),
  service: (v, p) => put(v !== undefined && /^[A-Za-z0-9_.-]{1,63}$/.test(v) ? v : undefined, (name) => (p.service = name)),
};

/** A balancing method: one per upstream, whichever it is. */
function balancing(args: readonly [number, number], parse: (d: Directive, c: Checker) => BalancingMethod | undefined) {
  return define({
    contexts: ['upstream'],
    args,
    multiple: true,
    apply(d, upstream, c) {
      if (upstream.method) return c.error(d.origin, 'load balancing method redefined');
      const method = parse(d, c);
      if (method) upstream.method = method;
    },
  });
}

/** `proxy_connect_timeout`, `proxy_read_timeout`. */
function proxyTimeout(set: (level: InheritableLevel, ms: number) => void) {
  return define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const ms = milliseconds(d.args[0]);
      if (ms === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
      else set(level, ms);
    },
  });
}

/** `proxy_ssl_server_name`, `proxy_ssl_session_reuse`, `proxy_ssl_verify`: on or off. */
function proxyFlag(set: (level: InheritableLevel, on: boolean, d: Directive) => void) {
  return define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const arg = d.args[0];
      if (arg !== 'on' && arg !== 'off') c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "on" or "off"`);
      else set(level, arg === 'on', d);
    },
  });
}

const NEXT_UPSTREAM: readonly NextUpstreamCondition[] = ['error', 'timeout', 'http_502', 'http_503', 'http_504'];

export const directives: Readonly<Record<string, DirectiveSpec | readonly DirectiveSpec[]>> = {
  include: define({
    contexts: ['main', 'http', 'server', 'location', 'upstream'],
    args: [1, 1],
    multiple: true,
    admin: true,
    apply: (d, level, c) => c.walk(d.included ?? [], level),
  }),

  worker_processes: define({
    contexts: ['main'],
    args: [1, 1],
    apply(d, main, c) {
      const [arg] = d.args;
      if (arg === 'auto') main.workerProcesses = c.cpus;
      else if (/^\d{1,3}$/.test(arg) && Number(arg) >= 1 && Number(arg) <= 128) main.workerProcesses = Number(arg);
      else c.error(d.origin, `invalid value "${arg}" in "worker_processes" directive, it must be "auto" or a number from 1 to 128`);
    },
  }),

  // `server <address> [parameters]` of an upstream; the http block's `server` is the HTTP
  // core module's (http/config.ts).
  server: [
    define({
      contexts: ['upstream'],
      args: [1, Infinity],
      multiple: true,
      apply(d, upstream, c) {
        const [server, ...params] = d.args;
        upstream.serverWritten = true;
        const parsed = parseUpstreamAddress(server);
        // A name is taken when `resolve` says a resolver follows it (resolver/config.ts).
        const named = parsed.error !== undefined && parsed.resolver && params.includes('resolve') ? parseResolvedServer(server, params) : undefined;
        if (named?.error !== undefined) return c.error(d.origin, named.error);
        if (parsed.error !== undefined && !named) return c.error(d.origin, parsed.error);
        const address = named ? named.value : (parsed as { value: UpstreamAddress }).value;
        const peer: Peer = { ...defaultPeer(server, address, d.origin) };
        for (const p of params) {
          const eq = p.indexOf('=');
          const name = eq < 0 ? p : p.slice(0, eq);
          const set = Object.hasOwn(SERVER_PARAMETERS, name) ? SERVER_PARAMETERS[name] : undefined;
          if (!set?.(eq < 0 ? undefined : p.slice(eq + 1), peer)) return c.error(d.origin, `invalid parameter "${p}"`);
        }
        // An address needs no resolver: `resolve` on one changes nothing.
        if (!named) delete peer.resolve;
        if (peer.service !== undefined && !peer.resolve) return c.error(d.origin, `"service" parameter requires "resolve" and a name in upstream "${upstream.name}"`);
        // The API keys peers by address: two servers of one address would be one peer.
        if (upstream.servers.some((s) => s.address === peer.address && s.service === peer.service))
          return c.error(d.origin, `a duplicate server ${peer.service ? `${peer.service}@` : ''}${peer.address} in upstream "${upstream.name}"`);
        upstream.servers.push(peer);
      },
    }),
  ],

  upstream: define({
    contexts: ['http'],
    args: [1, 1],
    block: true,
    multiple: true,
    apply(d, http, c) {
      const { upstream, duplicate } = newUpstreamBlock(d, http.upstreams, c);
      c.walk(d.block ?? [], upstream);
      if (duplicate) return;
      checkUpstreamBlock(upstream, http.upstreams, c);
      http.upstreams.push(upstream);
    },
  }),

  zone: define({
    contexts: ['upstream'],
    args: [1, 2],
    apply(d, upstream, c) {
      const [name, sizeArg] = d.args;
      if (!isZoneName(name)) return c.error(d.origin, `invalid zone name "${name}" in "zone" directive: letters, digits, "_", "-" and "." only`);
      if (sizeArg === undefined) return void (upstream.zone = { name, origin: d.origin });
      const size = parseSize(sizeArg);
      if (size === undefined) return c.error(d.origin, `invalid zone size "${sizeArg}"`);
      // Below 64k a zone holds its header and hardly a peer; above 1g it is a typo.
      if (size < 64 * 1024) return c.error(d.origin, `zone "${name}" is too small: at least 64k`);
      if (size > 1024 * 1024 * 1024) return c.error(d.origin, `zone "${name}" is too large: at most 1024m`);
      upstream.zone = { name, size, origin: d.origin };
    },
  }),

  least_conn: balancing([0, 0], () => ({ kind: 'least_conn' })),
  ip_hash: balancing([0, 0], () => ({ kind: 'ip_hash' })),

  // `random two least_conn` is nginx's spelling of what `random two` does.
  random: balancing([0, 2], (d, c) => {
    const [two, method] = d.args;
    const bad = two !== undefined && two !== 'two' ? two : method !== undefined && method !== 'least_conn' ? method : undefined;
    if (bad !== undefined) return void c.error(d.origin, `invalid parameter "${bad}"`);
    return { kind: 'random', two: two !== undefined };
  }),

  hash: balancing([1, 2], (d, c) => {
    const [key, consistent] = d.args;
    if (consistent !== undefined && consistent !== 'consistent') return void c.error(d.origin, `invalid parameter "${consistent}"`);
    const error = checkVariables(key, requestVariable);
    if (error) return void c.error(d.origin, error);
    return { kind: 'hash', key, consistent: consistent !== undefined };
  }),

  keepalive: define({
    contexts: ['upstream'],
    args: [1, 1],
    apply(d, upstream, c) {
      // `off`: each connection closes after its response, as nginx does without the directive.
      const n = d.args[0] === 'off' ? 0 : whole(d.args[0], 1);
      if (n === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "keepalive" directive`);
      else upstream.keepalive = n;
    },
  }),

  queue: define({
    contexts: ['upstream'],
    args: [1, 2],
    apply(d, upstream, c) {
      const [sizeArg, timeoutArg] = d.args;
      const size = whole(sizeArg, 1);
      if (size === undefined) return c.error(d.origin, `invalid value "${sizeArg}" in "queue" directive`);
      const timeout = timeoutArg === undefined ? 60_000 : timeoutArg.startsWith('timeout=') ? milliseconds(timeoutArg.slice('timeout='.length)) : undefined;
      if (timeout === undefined) return c.error(d.origin, `invalid parameter "${timeoutArg}"`);
      upstream.queue = { size, timeout };
    },
  }),

  // Angie's smoothing of header_time and response_time, in percent.
  response_time_factor: define({
    contexts: ['upstream'],
    args: [1, 1],
    apply(d, upstream, c) {
      const n = whole(d.args[0], 1);
      if (n === undefined || n > 99) c.error(d.origin, `invalid value "${d.args[0]}" in "response_time_factor" directive, it must be a number from 1 to 99`);
      else upstream.responseTimeFactor = n;
    },
  }),

  // NGINX Plus's state file, relative to the file that names it.
  state: define({
    contexts: ['upstream'],
    args: [1, 1],
    apply(d, upstream, c) {
      upstream.state = resolvePath(d, d.args[0]);
      checkStateFile(upstream.state, upstream.name, d, c);
    },
  }),

  proxy_pass: define({
    contexts: ['location', 'if'],
    args: [1, 1],
    apply(d, location, c) {
      const parsed = parseProxyPass(d.args[0]);
      if (parsed.error !== undefined) return c.error(d.origin, parsed.error);
      // A regex or a condition says which requests, not which part of their URI to
      // replace; a URI with variables is the whole URI, which needs no part.
      const { uri } = parsed.value;
      if (uri !== undefined && !uri.includes('$')) {
        if (location.kind === 'if') return c.error(d.origin, '"proxy_pass" cannot have URI part inside "if" statement, unless it has variables');
        if (location.modifier === '~' || location.modifier === '~*')
          return c.error(d.origin, '"proxy_pass" cannot have URI part in location given by regular expression');
      }
      location.proxyPass = { ...parsed.value, origin: d.origin };
    },
  }),

  proxy_set_header: define({
    contexts: inheritable,
    args: [2, 2],
    multiple: true,
    apply(d, level, c) {
      const [name, value] = d.args;
      const error = checkHeader(name, value);
      if (error) c.error(d.origin, error);
      else level.proxySetHeaders.push({ name, value });
    },
  }),

  // TLS to the peers of `proxy_pass https://`, with nginx's defaults: no SNI, no
  // verification, sessions reused.
  proxy_ssl_server_name: proxyFlag((level, on) => (level.proxySslServerName = on)),
  proxy_ssl_session_reuse: proxyFlag((level, on) => (level.proxySslSessionReuse = on)),
  proxy_ssl_verify: proxyFlag((level, on, d) => (level.proxySslVerify = { value: on, origin: d.origin })),
  proxy_ssl_name: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      if (d.args[0].includes('$')) c.error(d.origin, `variables in "proxy_ssl_name" are not supported`);
      else level.proxySslName = d.args[0];
    },
  }),
  proxy_ssl_trusted_certificate: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const file = resolvePath(d, d.args[0]);
      checkReadable(file, d, c);
      if (c.disk && !readable(file)?.includes('-----BEGIN CERTIFICATE-----'))
        return c.error(d.origin, `cannot load certificate "${file}" of the "${d.name}" directive: no PEM certificate in it`);
      level.proxySslTrustedCertificate = file;
    },
  }),
  proxy_connect_timeout: proxyTimeout((level, ms) => (level.proxyConnectTimeout = ms)),
  proxy_read_timeout: proxyTimeout((level, ms) => (level.proxyReadTimeout = ms)),

  // zonal retries on these conditions only; nginx's others (invalid_header, http_500,
  // http_404, non_idempotent, ...) are refused rather than silently ignored.
  proxy_next_upstream: define({
    contexts: inheritable,
    args: [1, Infinity],
    apply(d, level, c) {
      if (d.args.length === 1 && d.args[0] === 'off') return void (level.proxyNextUpstream = []);
      const conditions: NextUpstreamCondition[] = [];
      for (const arg of d.args) {
        const condition = NEXT_UPSTREAM.find((n) => n === arg);
        if (!condition) return c.error(d.origin, `invalid value "${arg}" in "proxy_next_upstream" directive`);
        if (!conditions.includes(condition)) conditions.push(condition);
      }
      level.proxyNextUpstream = conditions;
    },
  }),

  proxy_next_upstream_tries: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const n = whole(d.args[0], 0);
      if (n === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "proxy_next_upstream_tries" directive`);
      else level.proxyNextUpstreamTries = n;
    },
  }),
};
