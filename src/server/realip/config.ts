// The realip module's directives (ngx_http_realip_module), composed into the loader's
// table by config/directives.ts:
//
//   set_real_ip_from <address> | <CIDR> | unix:;                       http, server, location
//   real_ip_header X-Real-IP | X-Forwarded-For | proxy_protocol | <field>;  http, server, location
//   real_ip_recursive on | off;                                         http, server, location
import type { InheritableLevel } from '../config/levels.js';
import type { Origin } from '../config/model.js';
import { define, type DirectiveSpec } from '../config/spec.js';
import { checkAccessAddress } from '../config/values.js';

/** What one block says. */
export interface RealipLevel {
  from?: string[];
  fromOrigin?: Origin;
  header?: string;
  recursive?: boolean;
}

/** Where the client's address is read once merged; present only with `set_real_ip_from`. */
export interface RealipConfig {
  /** Addresses, CIDR ranges, `unix:`. */
  readonly from: readonly string[];
  readonly origin: Origin;
  /** `x-real-ip`, `x-forwarded-for`, another field (lowercase), or `proxy_protocol`. */
  readonly header: string;
  readonly recursive: boolean;
}

declare module '../config/levels.js' {
  interface InheritableLevel {
    realip?: RealipLevel;
  }
}
declare module '../config/model.js' {
  interface Inherited {
    /** `set_real_ip_from` in force here: requests from those addresses give their client's. */
    readonly realip?: RealipConfig;
  }
}

const inheritable = ['http', 'server', 'location'] as const;
const levelOf = (level: InheritableLevel): RealipLevel => (level.realip ??= {});

export const realipDirectives: Readonly<Record<string, DirectiveSpec>> = {
  set_real_ip_from: define({
    contexts: inheritable,
    args: [1, 1],
    multiple: true,
    apply(d, level, c) {
      const [arg] = d.args;
      // nginx resolves a host name here; the one every host has is localhost's.
      const addresses = arg === 'localhost' ? ['127.0.0.1', '::1'] : arg !== 'all' && checkAccessAddress(arg) === undefined ? [arg] : undefined;
      if (!addresses) return c.error(d.origin, /^([\d.:/]+|all)$/.test(arg) ? `invalid parameter "${arg}"` : `host not found in set_real_ip_from "${arg}"`);
      const own = levelOf(level);
      (own.from ??= []).push(...addresses);
      own.fromOrigin ??= d.origin;
    },
  }),

  real_ip_header: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level) {
      const [arg] = d.args;
      levelOf(level).header = arg === 'proxy_protocol' ? arg : arg.toLowerCase();
    },
  }),

  real_ip_recursive: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level, c) {
      const [arg] = d.args;
      if (arg !== 'on' && arg !== 'off') return c.error(d.origin, `invalid value "${arg}" in "${d.name}" directive, it must be "on" or "off"`);
      levelOf(level).recursive = arg === 'on';
    },
  }),
};

/** nginx's merge: each setting from the nearest level that has it. */
export function mergeRealip(outer: RealipLevel | undefined, level: InheritableLevel): RealipLevel | undefined {
  const own = level.realip;
  if (!own) return outer;
  if (!outer) return own;
  return {
    ...outer,
    ...(own.from ? { from: own.from, fromOrigin: own.fromOrigin } : {}),
    ...(own.header !== undefined ? { header: own.header } : {}),
    ...(own.recursive !== undefined ? { recursive: own.recursive } : {}),
  };
}

/** What a place runs: nothing without `set_real_ip_from`. */
export function settleRealip(m: RealipLevel | undefined): { realip?: RealipConfig } {
  if (!m?.from?.length) return {};
  return { realip: { from: m.from, origin: m.fromOrigin!, header: m.header ?? 'x-real-ip', recursive: m.recursive ?? false } };
}
