// `allow` / `deny` as ngx_http_access_module checks them: rules split by family in their
// order, the first that matches decides, and a client no rule matches is let through.
// Addresses are parsed by hand (inet.ts) and compared under the rule's mask, so a check
// allocates nothing.
import type { AccessRule } from '../config/model.js';
import { isMapped, parseInet4, parseInet6, word } from '../inet.js';

interface Inet4Rule {
  readonly allow: boolean;
  readonly net: number;
  readonly mask: number;
}

interface Inet6Rule {
  readonly allow: boolean;
  readonly net0: number;
  readonly net1: number;
  readonly net2: number;
  readonly net3: number;
  readonly mask0: number;
  readonly mask1: number;
  readonly mask2: number;
  readonly mask3: number;
}

/** `(remoteAddress) => allowed`. `remoteAddress` as node reports it: `127.0.0.1`, `::1`,
 * `::ffff:127.0.0.1`, or undefined for a Unix-domain socket. */
export type AccessChecker = (remoteAddress: string | undefined) => boolean;

/** true = allowed. No rule, or no rule matching, allows (the usual last rule is `deny all`). */
export function accessChecker(rules: readonly AccessRule[]): AccessChecker {
  if (rules.length === 0) return () => true;
  // nginx puts `all` in each family's list, and each address into its family's list only.
  const inet: Inet4Rule[] = [];
  const inet6: Inet6Rule[] = [];
  const unix: boolean[] = [];
  for (const rule of rules) {
    const parsed = parseRule(rule);
    if (parsed === 'all' || parsed === 'unix') unix.push(rule.allow);
    if (parsed === 'unix') continue;
    if (parsed === 'all' || 'mask' in parsed) inet.push(parsed === 'all' ? { allow: rule.allow, net: 0, mask: 0 } : parsed);
    if (parsed === 'all' || 'mask0' in parsed) {
      inet6.push(parsed === 'all' ? { allow: rule.allow, net0: 0, net1: 0, net2: 0, net3: 0, mask0: 0, mask1: 0, mask2: 0, mask3: 0 } : parsed);
    }
  }

  // A keep-alive client asks again and again with the same address.
  let lastAddress: string | undefined;
  let lastAllowed = true;
  return (remoteAddress) => {
    if (remoteAddress === lastAddress && remoteAddress !== undefined) return lastAllowed;
    const allowed = check(remoteAddress, inet, inet6, unix);
    lastAddress = remoteAddress;
    lastAllowed = allowed;
    return allowed;
  };
}

const scratch = new Uint8Array(16);

function check(address: string | undefined, inet: readonly Inet4Rule[], inet6: readonly Inet6Rule[], unix: readonly boolean[]): boolean {
  if (address !== undefined) {
    const v4 = parseInet4(address, 0, address.length);
    if (v4 >= 0) return checkInet4(v4, inet);
    if (parseInet6(address, scratch)) {
      // A dual-stack socket reports IPv4 clients as ::ffff:a.b.c.d: nginx checks those
      // against the IPv4 rules when there are any.
      if (inet.length > 0 && isMapped(scratch)) return checkInet4(word(scratch, 3), inet);
      return checkInet6(scratch, inet6);
    }
  }
  // A Unix-domain client (or an address nothing could parse): only `all` and `unix:` apply.
  return unix.length === 0 ? true : unix[0]!;
}

function checkInet4(address: number, rules: readonly Inet4Rule[]): boolean {
  for (const rule of rules) {
    if (((address & rule.mask) >>> 0) === rule.net) return rule.allow;
  }
  return true;
}

function checkInet6(address: Uint8Array, rules: readonly Inet6Rule[]): boolean {
  const a0 = word(address, 0);
  const a1 = word(address, 1);
  const a2 = word(address, 2);
  const a3 = word(address, 3);
  for (const rule of rules) {
    if (
      ((a0 & rule.mask0) >>> 0) === rule.net0 &&
      ((a1 & rule.mask1) >>> 0) === rule.net1 &&
      ((a2 & rule.mask2) >>> 0) === rule.net2 &&
      ((a3 & rule.mask3) >>> 0) === rule.net3
    ) {
      return rule.allow;
    }
  }
  return true;
}

function parseRule(rule: AccessRule): 'all' | 'unix' | Inet4Rule | Inet6Rule {
  const written = rule.address;
  if (written === 'all') return 'all';
  if (written === 'unix:') return 'unix';
  const slash = written.indexOf('/');
  const host = slash < 0 ? written : written.slice(0, slash);
  const bitsWritten = slash < 0 ? undefined : written.slice(slash + 1);
  const invalid = () => new Error(`invalid parameter "${written}" in ${rule.origin.file}:${rule.origin.line}`);

  const v4 = parseInet4(host, 0, host.length);
  if (v4 >= 0) {
    const bits = prefixLength(bitsWritten, 32);
    if (bits < 0) throw invalid();
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    // nginx warns that low address bits are meaningless and masks them off.
    return { allow: rule.allow, net: (v4 & mask) >>> 0, mask };
  }
  const v6 = new Uint8Array(16);
  if (!host.includes('%') && parseInet6(host, v6)) {
    const bits = prefixLength(bitsWritten, 128);
    if (bits < 0) throw invalid();
    const masks = [0, 1, 2, 3].map((word) => {
      const wordBits = Math.min(32, Math.max(0, bits - word * 32));
      return wordBits === 0 ? 0 : (0xffffffff << (32 - wordBits)) >>> 0;
    }) as [number, number, number, number];
    return {
      allow: rule.allow,
      net0: (word(v6, 0) & masks[0]) >>> 0,
      net1: (word(v6, 1) & masks[1]) >>> 0,
      net2: (word(v6, 2) & masks[2]) >>> 0,
      net3: (word(v6, 3) & masks[3]) >>> 0,
      mask0: masks[0],
      mask1: masks[1],
      mask2: masks[2],
      mask3: masks[3],
    };
  }
  throw invalid();
}

/** The length after `/`, or the whole address without one; -1 when invalid. */
function prefixLength(written: string | undefined, max: number): number {
  if (written === undefined) return max;
  if (!/^\d{1,3}$/.test(written)) return -1;
  const bits = Number(written);
  return bits <= max ? bits : -1;
}
