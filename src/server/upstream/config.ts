// The upstream module's configuration, declared beside the balancer that http and stream
// share (composed into the loader's table by config/directives.ts): the `upstream` block
// of http and the directives of an upstream block, which stream's `upstream` takes too.
//
//   upstream <name> { ... }                                         http
//   server <address> [weight= max_conns= max_fails= fail_timeout= slow_start= sid=
//          backup down resolve service=];                            upstream
//   zone <name> [<size>]; least_conn; ip_hash; random [two [least_conn]];
//   hash <key> [consistent]; keepalive N|off; keepalive_requests N; keepalive_time T;
//   keepalive_timeout T; queue N [timeout=T];
//   response_time_factor N; state <file>;                            upstream
//   least_time header|last_byte [inflight];                          upstream (Angie's)
//   least_time connect|first_byte|last_byte [inflight];              stream upstream
//   sticky cookie <name> [expires=T|max] [domain=] [httponly] [samesite=] [secure]
//          [path=]; sticky route $var...; sticky_secret S; sticky_strict on|off;
//                                                                     upstream (Angie's)
import fs from 'node:fs';
import path from 'node:path';
import type { Checker, UpstreamLevel } from '../config/levels.js';
import type { BalancingMethod, LeastTime, PeerParams, StickyConfig } from '../config/model.js';
import { readStateFile, StateFileError } from '../../metrics/peers.js';
import { parseResolvedServer } from '../resolver/config.js';
import { milliseconds, seconds, whole } from '../config/numbers.js';
import { define, type DirectiveSpec } from '../config/spec.js';
import type { Directive } from '../config/syntax.js';
import { checkVariables, defaultPeer, isZoneName, parseSize, parseUpstreamAddress, requestVariable, type UpstreamAddress } from '../config/values.js';
import { checkUpstreamBlock, newUpstreamBlock } from './check.js';

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
    // The same address twice is two peers, as two such `server` lines of the
    // configuration are (the file keeps no keys: they are given again in order).
    for (const p of readStateFile(file) ?? []) {
      if (p.service !== undefined) continue;
      const address = parseUpstreamAddress(p.server);
      if (address.error !== undefined) throw new StateFileError(file, lineOf(file, p.server), address.error);
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
function balancing(args: readonly [number, number], parse: (d: Directive, c: Checker, upstream: UpstreamLevel) => BalancingMethod | undefined) {
  return define({
    contexts: ['upstream'],
    args,
    multiple: true,
    apply(d, upstream, c) {
      if (upstream.method) return c.error(d.origin, 'load balancing method redefined');
      const method = parse(d, c, upstream);
      if (method) upstream.method = method;
    },
  });
}

/** keepalive_time and keepalive_timeout: a time (0 allowed) bounding a cached connection. */
function reuseTime(field: 'time' | 'timeout') {
  return define({
    contexts: ['upstream'],
    args: [1, 1],
    apply(d, upstream, c) {
      const ms = seconds(d.args[0], true);
      if (ms === undefined) c.error(d.origin, `"${d.name}" directive invalid value`);
      else upstream.reuse = { ...upstream.reuse, [field]: ms };
    },
  });
}

export const upstreamDirectives: Readonly<Record<string, DirectiveSpec>> = {
  upstream: define({
    contexts: ['http'],
    args: [1, 1],
    block: true,
    multiple: true,
    apply(d, http, c) {
      const { upstream, duplicate } = newUpstreamBlock(d, http.upstreams, c, 'http');
      c.walk(d.block ?? [], upstream);
      if (duplicate) return;
      checkUpstreamBlock(upstream, http.upstreams, c);
      http.upstreams.push(upstream);
    },
  }),
  // `server <address> [parameters]` of an upstream (http's `server` block is the core's).
  server: define({
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
      // Two servers of one address are two peers, as in nginx (the second keyed
      // `<address>~2`, metrics/peers.ts keyPeers). A name's resolver makes one peer per
      // address it finds, keyed by the address: the same name twice would make none.
      if (named && upstream.servers.some((s) => s.resolve && s.address === peer.address && s.service === peer.service))
        return c.error(d.origin, `a duplicate server ${peer.service ? `${peer.service}@` : ''}${peer.address} in upstream "${upstream.name}"`);
      upstream.servers.push(peer);
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

  // Angie's: the averages /status shows of each protocol (response_time is last_byte's).
  least_time: balancing([1, 2], (d, c, upstream) => {
    const [time, inflight] = d.args;
    if (!LEAST_TIMES[upstream.protocol].includes(time as LeastTime)) return void c.error(d.origin, `invalid parameter "${time}"`);
    if (inflight !== undefined && inflight !== 'inflight') return void c.error(d.origin, `invalid parameter "${inflight}"`);
    return { kind: 'least_time', time: time as LeastTime, inflight: inflight !== undefined };
  }),

  sticky: define({
    contexts: ['upstream'],
    args: [2, Infinity],
    apply(d, upstream, c) {
      if (upstream.sticky) return c.error(d.origin, '"sticky" directive is duplicate');
      const [mode, ...args] = d.args;
      if (mode === 'cookie') {
        const sticky = stickyCookie(args, d, c);
        if (sticky) upstream.sticky = sticky;
      } else if (mode === 'route') {
        for (const v of args) {
          const error = checkVariables(v, requestVariable);
          if (error) return c.error(d.origin, error);
        }
        upstream.sticky = { mode, variables: args, origin: d.origin };
      } else if (mode === 'learn')
        // Its sessions would need a keyed store of their own, expiring, in the zone.
        c.error(d.origin, '"sticky learn" is not supported: use "sticky cookie" or "sticky route"');
      else c.error(d.origin, `unknown sticky mode "${mode}"`);
    },
  }),
  sticky_secret: define({
    contexts: ['upstream'],
    args: [1, 1],
    apply(d, upstream, c) {
      const error = checkVariables(d.args[0], requestVariable);
      if (error) c.error(d.origin, error);
      else upstream.stickySecret = d.args[0];
    },
  }),
  sticky_strict: define({
    contexts: ['upstream'],
    args: [1, 1],
    apply(d, upstream, c) {
      const arg = d.args[0];
      if (arg !== 'on' && arg !== 'off') c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "on" or "off"`);
      else upstream.stickyStrict = arg === 'on';
    },
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

  // How long a cached connection is reused (ngx_http_upstream_keepalive_module).
  keepalive_requests: define({
    contexts: ['upstream'],
    args: [1, 1],
    apply(d, upstream, c) {
      const n = whole(d.args[0], 0);
      if (n === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "keepalive_requests" directive`);
      else upstream.reuse = { ...upstream.reuse, requests: n };
    },
  }),
  keepalive_time: reuseTime('time'),
  keepalive_timeout: reuseTime('timeout'),

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
      upstream.state = c.path(d.args[0], 'prefix');
      checkStateFile(upstream.state, upstream.name, d, c);
    },
  }),
};

const LEAST_TIMES: Readonly<Record<UpstreamLevel['protocol'], readonly LeastTime[]>> = {
  http: ['header', 'last_byte'],
  stream: ['connect', 'first_byte', 'last_byte'],
};

/** The attributes `sticky cookie` takes besides `expires`: flags, and those with a value. */
const COOKIE_FLAGS = new Set(['httponly', 'secure']);
const COOKIE_VALUES = new Set(['domain', 'path', 'samesite']);

/** `sticky cookie <name> [attributes]`: Angie's attributes, `path=/` unless one is given. */
function stickyCookie(args: readonly string[], d: Directive, c: Checker): NonNullable<UpstreamLevel['sticky']> | undefined {
  const [cookie, ...rest] = args;
  if (cookie === '') return void c.error(d.origin, 'empty cookie name');
  if (!/^[!#-'*+.^-z|~0-9A-Z-]+$/.test(cookie)) return void c.error(d.origin, `invalid cookie name "${cookie}"`);
  let expires: number | 'max' | undefined;
  const attributes: string[] = [];
  for (const a of rest) {
    const eq = a.indexOf('=');
    const name = (eq < 0 ? a : a.slice(0, eq)).toLowerCase();
    const value = eq < 0 ? undefined : a.slice(eq + 1);
    if (name === 'expires' && value !== undefined) {
      if (expires !== undefined) return void c.error(d.origin, 'parameter "expires" is duplicate');
      const ms = value === 'max' ? 0 : seconds(value, false);
      if (ms === undefined) return void c.error(d.origin, `invalid parameter "${a}"`);
      expires = value === 'max' ? 'max' : ms / 1000;
      continue;
    }
    const valid = value === undefined ? COOKIE_FLAGS.has(name) : COOKIE_VALUES.has(name) && (name !== 'samesite' || /^(strict|lax|none)$/i.test(value));
    if (!valid || /[;\s]/.test(a)) return void c.error(d.origin, `invalid parameter "${a}"`);
    const error = checkVariables(a, requestVariable);
    if (error) return void c.error(d.origin, error);
    attributes.push(a);
  }
  if (!attributes.some((a) => a.toLowerCase().startsWith('path='))) attributes.push('path=/');
  return { mode: 'cookie', cookie, ...(expires !== undefined ? { expires } : {}), attributes, origin: d.origin };
}

/** An upstream block's `sticky`, with `sticky_secret` and `sticky_strict`. */
export function stickyOf(u: UpstreamLevel): StickyConfig | undefined {
  if (!u.sticky) return undefined;
  const { origin: _origin, ...sticky } = u.sticky;
  return { ...sticky, ...(u.stickySecret !== undefined ? { secret: u.stickySecret } : {}), strict: !!u.stickyStrict };
}
