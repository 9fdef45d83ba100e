// The limits module's configuration, declared beside its code as nginx's modules do:
// its directives (composed into the loader's table by config/directives.ts), what each
// block says, and what a location ends up with once the levels are merged.
//
//   limit_req_zone <key> zone=<name>:<size> rate=<N>r/s|r/m;   http
//   limit_req zone=<name> [burst=N] [nodelay | delay=N];        http, server, location
//   limit_req_status <code>; limit_req_dry_run on|off; limit_req_log_level <level>;
//   limit_conn_zone <key> zone=<name>:<size>;                   http
//   limit_conn <zone> <N>;                                      http, server, location
//   limit_conn_status <code>; limit_conn_dry_run on|off; limit_conn_log_level <level>;
import { addon } from '../../engine/native.js';
import { define as defineDirective, type DirectiveSpec } from '../config/spec.js';
import type { Checker, InheritableLevel } from '../config/levels.js';
import type { Origin } from '../config/model.js';
import type { Directive } from '../config/syntax.js';
import { checkVariables, isZoneName, parseSize } from '../config/values.js';
import { knownHttpVariable } from '../config/variables.js';

export type LogLevel = 'info' | 'notice' | 'warn' | 'error';
const LOG_LEVELS: readonly LogLevel[] = ['info', 'notice', 'warn', 'error'];

export interface LimitZone {
  readonly kind: 'req' | 'conn';
  readonly name: string;
  /** As written: a variable, or text with variables. */
  readonly key: string;
  /** Bytes. */
  readonly size: number;
  /** limit_req: requests per second (1r/m is 1/60). */
  readonly rate?: number;
  readonly origin: Origin;
}

interface ReqUse {
  readonly zone: string;
  readonly burst: number;
  /** Requests of the burst passed without delay: Infinity for `nodelay`. */
  readonly delay: number;
  readonly origin: Origin;
}

interface ConnUse {
  readonly zone: string;
  readonly limit: number;
  readonly origin: Origin;
}

/** What one block says of limits. */
export interface LimitLevel {
  readonly zones: LimitZone[];
  /** Only those written in this block: a block with any replaces the outer list (nginx). */
  readonly reqs: ReqUse[];
  readonly conns: ConnUse[];
  reqStatus?: number;
  connStatus?: number;
  reqDryRun?: boolean;
  connDryRun?: boolean;
  reqLogLevel?: LogLevel;
  connLogLevel?: LogLevel;
}

/** A location's limits once merged: every request there goes through them. */
export interface LimitsConfig {
  /** In the order written; each with its zone's key and rate. */
  readonly reqs: ReadonlyArray<{ readonly zone: string; readonly key: string; readonly rate: number; readonly burst: number; readonly delay: number }>;
  readonly conns: ReadonlyArray<{ readonly zone: string; readonly key: string; readonly limit: number }>;
  /** What a refused request is answered with (default 503). */
  readonly reqStatus: number;
  readonly connStatus: number;
  readonly reqDryRun: boolean;
  readonly connDryRun: boolean;
  /** The level refusals are logged at; delays one level lower (nginx). */
  readonly reqLogLevel: LogLevel;
  readonly connLogLevel: LogLevel;
}

// The loader's levels and model carry the module's settings without knowing the module:
// it adds its fields to their interfaces here (nginx gives each module a slot of its own in
// every block's configuration), so that the loader's types never import it.
declare module '../config/levels.js' {
  interface InheritableLevel {
    /** What the limits module's directives say here. */
    limits?: LimitLevel;
  }
}
declare module '../config/model.js' {
  interface IfConfig {
    /** Its own `limit_req`/`limit_conn`, else the location's (inherited as nginx merges). */
    readonly limits?: LimitsConfig;
  }
  interface LocationConfig {
    /** `limit_req` and `limit_conn` in force here (inherited as nginx); absent: none. */
    readonly limits?: LimitsConfig;
  }
  interface VirtualServerConfig {
    /** The limits of requests no location matches. */
    readonly limits?: LimitsConfig;
  }
  interface HttpBlockConfig {
    /** `limit_req_zone` and `limit_conn_zone`, in order. */
    readonly limitZones: readonly LimitZone[];
  }
}

const levelOf = (level: InheritableLevel): LimitLevel => (level.limits ??= { zones: [], reqs: [], conns: [] });

/** nginx refuses zones smaller than 8 pages. */
export const minZoneSize = (): number => 8 * addon.pageSize;

const define = defineDirective;
const inheritable = ['http', 'server', 'location'] as const;
// An `if` block may limit its requests too: the issue asks for it, where nginx does not
// allow it (zonal's addition, as `api` in `if` is).
const inheritableAndIf = [...inheritable, 'if'] as const;

/** `zone=<name>:<size>` of limit_req_zone and limit_conn_zone. */
function zoneParameter(d: Directive, arg: string, c: Checker): { name: string; size: number } | undefined {
  const value = arg.slice('zone='.length);
  const colon = value.lastIndexOf(':');
  if (colon < 0) return void c.error(d.origin, `invalid zone size "${value}"`);
  const name = value.slice(0, colon);
  const size = parseSize(value.slice(colon + 1));
  if (!isZoneName(name)) return void c.error(d.origin, `invalid zone name "${name}" in "${d.name}" directive: letters, digits, "_", "-" and "." only`);
  if (size === undefined) return void c.error(d.origin, `invalid zone size "${value}"`);
  if (size < minZoneSize()) return void c.error(d.origin, `zone "${name}" is too small: at least ${minZoneSize() / 1024}k (8 pages)`);
  if (size > 1024 * 1024 * 1024) return void c.error(d.origin, `zone "${name}" is too large: at most 1024m`);
  return { name, size };
}

function zoneDirective(kind: 'req' | 'conn') {
  return define({
    contexts: ['http'],
    args: kind === 'req' ? [3, 3] : [2, 2],
    multiple: true,
    apply(d, http, c) {
      const [key, ...params] = d.args;
      let zone: { name: string; size: number } | undefined;
      let rate: number | undefined;
      let bad = false;
      for (const p of params) {
        if (p.startsWith('zone=')) {
          zone = zoneParameter(d, p, c);
          bad ||= !zone;
        } else if (kind === 'req' && p.startsWith('rate=')) {
          const m = /^rate=(\d{1,9})r\/([sm])$/.exec(p);
          const n = m ? Number(m[1]) : 0;
          if (n <= 0) return c.error(d.origin, `invalid rate "${p}"`);
          rate = m![2] === 's' ? n : n / 60;
        } else return c.error(d.origin, `invalid parameter "${p}"`);
      }
      if (bad) return;
      if (!zone) return c.error(d.origin, `"${d.name}" must have "zone" parameter`);
      if (kind === 'req' && rate === undefined) return c.error(d.origin, `"${d.name}" must have "rate" parameter`);
      if (key === '') return c.error(d.origin, `empty key in "${d.name}" directive`);
      const error = checkVariables(key, knownHttpVariable);
      if (error) return c.error(d.origin, error);
      const zones = levelOf(http).zones;
      const other = zones.find((z) => z.name === zone!.name);
      if (other) return c.error(d.origin, `shared memory zone "${zone.name}" is already declared by "limit_${other.kind}_zone" in ${other.origin.file}:${other.origin.line}`);
      zones.push({ kind, name: zone.name, key, size: zone.size, ...(rate !== undefined ? { rate } : {}), origin: d.origin });
    },
  });
}

/** A positive whole number of nginx's range, or undefined. */
function positive(arg: string, most = 2147483647): number | undefined {
  if (!/^\d{1,10}$/.test(arg)) return undefined;
  const n = Number(arg);
  return n >= 1 && n <= most ? n : undefined;
}

const limitReq = define({
  contexts: inheritableAndIf,
  args: [1, 3],
  multiple: true,
  apply(d, level, c) {
    let zone: string | undefined;
    let burst = 0;
    let delay: number | undefined;
    for (const p of d.args) {
      if (p.startsWith('zone=')) zone = p.slice(5);
      else if (p.startsWith('burst=')) {
        const n = positive(p.slice(6));
        if (n === undefined) return c.error(d.origin, `invalid burst value "${p}"`);
        burst = n;
      } else if (p.startsWith('delay=')) {
        const n = positive(p.slice(6));
        if (n === undefined) return c.error(d.origin, `invalid delay value "${p}"`);
        if (delay === Infinity) return c.error(d.origin, `"nodelay" and "delay=" cannot be used together`);
        delay = n;
      } else if (p === 'nodelay') {
        if (delay !== undefined) return c.error(d.origin, `"nodelay" and "delay=" cannot be used together`);
        delay = Infinity;
      } else return c.error(d.origin, `invalid parameter "${p}"`);
    }
    if (!zone) return c.error(d.origin, `"limit_req" must have "zone" parameter`);
    const reqs = levelOf(level).reqs;
    if (reqs.some((r) => r.zone === zone)) return c.error(d.origin, `"limit_req zone=${zone}" is duplicate`);
    reqs.push({ zone, burst, delay: delay ?? 0, origin: d.origin });
  },
});

const limitConn = define({
  contexts: inheritableAndIf,
  args: [2, 2],
  multiple: true,
  apply(d, level, c) {
    const [zone, n] = d.args;
    const limit = positive(n, 65535);
    if (limit === undefined) return c.error(d.origin, `invalid number of connections "${n}", it must be from 1 to 65535`);
    const conns = levelOf(level).conns;
    if (conns.some((u) => u.zone === zone)) return c.error(d.origin, `"limit_conn ${zone}" is duplicate`);
    conns.push({ zone, limit, origin: d.origin });
  },
});

function statusCode(set: (l: LimitLevel, code: number) => void) {
  return define({
    contexts: inheritableAndIf,
    args: [1, 1],
    apply(d, level, c) {
      const code = /^\d{3}$/.test(d.args[0]) ? Number(d.args[0]) : 0;
      if (code < 400 || code > 599) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive, it must be from 400 to 599`);
      else set(levelOf(level), code);
    },
  });
}

function flag(set: (l: LimitLevel, on: boolean) => void) {
  return define({
    contexts: inheritableAndIf,
    args: [1, 1],
    apply(d, level, c) {
      const [arg] = d.args;
      if (arg === 'on' || arg === 'off') set(levelOf(level), arg === 'on');
      else c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "on" or "off"`);
    },
  });
}

function logLevel(set: (l: LimitLevel, level: LogLevel) => void) {
  return define({
    contexts: inheritableAndIf,
    args: [1, 1],
    apply(d, level, c) {
      const found = LOG_LEVELS.find((l) => l === d.args[0]);
      if (!found) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive, it must be "info", "notice", "warn" or "error"`);
      else set(levelOf(level), found);
    },
  });
}

/** The limits module's directives, composed into the loader's table. */
export const limitDirectives: Readonly<Record<string, DirectiveSpec>> = {
  limit_req_zone: zoneDirective('req'),
  limit_req: limitReq,
  limit_req_status: statusCode((l, code) => (l.reqStatus = code)),
  limit_req_dry_run: flag((l, on) => (l.reqDryRun = on)),
  limit_req_log_level: logLevel((l, level) => (l.reqLogLevel = level)),
  limit_conn_zone: zoneDirective('conn'),
  limit_conn: limitConn,
  limit_conn_status: statusCode((l, code) => (l.connStatus = code)),
  limit_conn_dry_run: flag((l, on) => (l.connDryRun = on)),
  limit_conn_log_level: logLevel((l, level) => (l.connLogLevel = level)),
};

/** The limits in force at a level: nginx's merge, where a level with any `limit_req`
 * (or `limit_conn`) replaces the outer list and the other settings inherit one by one. */
export interface MergedLimits {
  readonly reqs: readonly ReqUse[];
  readonly conns: readonly ConnUse[];
  readonly reqStatus: number;
  readonly connStatus: number;
  readonly reqDryRun: boolean;
  readonly connDryRun: boolean;
  readonly reqLogLevel: LogLevel;
  readonly connLogLevel: LogLevel;
}

export const TOP_LIMITS: MergedLimits = {
  reqs: [],
  conns: [],
  reqStatus: 503,
  connStatus: 503,
  reqDryRun: false,
  connDryRun: false,
  reqLogLevel: 'error',
  connLogLevel: 'error',
};

export function mergeLimits(outer: MergedLimits, level: InheritableLevel): MergedLimits {
  const l = level.limits;
  if (!l) return outer;
  return {
    reqs: l.reqs.length ? l.reqs : outer.reqs,
    conns: l.conns.length ? l.conns : outer.conns,
    reqStatus: l.reqStatus ?? outer.reqStatus,
    connStatus: l.connStatus ?? outer.connStatus,
    reqDryRun: l.reqDryRun ?? outer.reqDryRun,
    connDryRun: l.connDryRun ?? outer.connDryRun,
    reqLogLevel: l.reqLogLevel ?? outer.reqLogLevel,
    connLogLevel: l.connLogLevel ?? outer.connLogLevel,
  };
}

/** The zones of the http block, checked against the names of other shared zones. */
export function limitZones(level: InheritableLevel, otherZones: ReadonlyMap<string, string>, c: Checker): LimitZone[] {
  const zones = level.limits?.zones ?? [];
  for (const z of zones) {
    const other = otherZones.get(z.name);
    if (other) c.error(z.origin, `shared memory zone "${z.name}" is already used by ${other}`);
  }
  return zones;
}

/**
 * What a place runs: the merged limits with their zones found. A `limit_req` or
 * `limit_conn` naming a zone that no `limit_*_zone` declares is an error, reported once
 * however many places inherit it; `reported` keeps those.
 */
export function resolveLimits(m: MergedLimits, zones: readonly LimitZone[], c: Checker, reported: Set<object>): LimitsConfig | undefined {
  if (m.reqs.length === 0 && m.conns.length === 0) return undefined;
  const find = (use: ReqUse | ConnUse, kind: 'req' | 'conn') => {
    const zone = zones.find((z) => z.name === use.zone && z.kind === kind);
    if (!zone && !reported.has(use)) {
      reported.add(use);
      c.error(use.origin, `unknown limit_${kind}_zone "${use.zone}"`);
    }
    return zone;
  };
  const reqs = m.reqs.flatMap((r) => {
    const zone = find(r, 'req');
    return zone ? [{ zone: r.zone, key: zone.key, rate: zone.rate!, burst: r.burst, delay: r.delay }] : [];
  });
  const conns = m.conns.flatMap((u) => {
    const zone = find(u, 'conn');
    return zone ? [{ zone: u.zone, key: zone.key, limit: u.limit }] : [];
  });
  const { reqStatus, connStatus, reqDryRun, connDryRun, reqLogLevel, connLogLevel } = m;
  return { reqs, conns, reqStatus, connStatus, reqDryRun, connDryRun, reqLogLevel, connLogLevel };
}
