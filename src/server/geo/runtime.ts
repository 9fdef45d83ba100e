// A `geo` at run time: the client's address (or the one a value gives) looked up among
// the block's networks, the longest prefix that holds it winning (or among its ranges),
// as ngx_http_geo_module does. An IPv4 client of a dual-stack socket is looked up as IPv4.
import { isIP } from 'node:net';
import { binaryAddress, unmapped, type Variable } from '../../api/variables.js';
import type { AccessChecker } from '../access/runtime.js';
import { cached, type Scope } from '../map/runtime.js';
import { forwardedAddress } from '../realip/forwarded.js';

/** An address as a number: 32 bits for IPv4, 128 for IPv6. */
export interface Address {
  readonly v6: boolean;
  readonly n: bigint;
}

/** `1.2.3.4`, `::1`; `::ffff:1.2.3.4` is IPv4. Undefined when it is no address. */
export function addressOf(text: string): Address | undefined {
  const plain = unmapped(text);
  const family = isIP(plain);
  if (!family) return undefined;
  const bytes = binaryAddress(plain);
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return { v6: family === 6, n };
}

export interface Network {
  readonly v6: boolean;
  /** Prefix length. */
  readonly bits: number;
  readonly net: bigint;
  readonly value: string;
}

export interface GeoTable {
  /** Longest prefix first. */
  readonly networks: readonly Network[];
  /** `ranges`: IPv4 only, a later range over an earlier one. */
  readonly ranges?: ReadonlyArray<{ readonly from: bigint; readonly to: bigint; readonly value: string }>;
  readonly default: string;
  /** `proxy`: the addresses whose X-Forwarded-For gives the client's. */
  readonly proxies?: AccessChecker;
  readonly proxyRecursive: boolean;
}

/** What a module's geo reads: its client's address, and its X-Forwarded-For (http). */
export interface GeoScope<C> extends Scope<C> {
  client(c: C): string | undefined;
  forwardedFor?(c: C): string | undefined;
}

export const maskOf = (bits: number, v6: boolean): bigint => {
  const width = v6 ? 128n : 32n;
  return bits === 0 ? 0n : ((1n << width) - 1n) ^ ((1n << (width - BigInt(bits))) - 1n);
};

export function geoLookup(t: GeoTable, a: Address): string {
  if (t.ranges) {
    if (a.v6) return t.default;
    for (let i = t.ranges.length - 1; i >= 0; i--) {
      const r = t.ranges[i];
      if (a.n >= r.from && a.n <= r.to) return r.value;
    }
    return t.default;
  }
  for (const net of t.networks) if (net.v6 === a.v6 && (a.n & maskOf(net.bits, net.v6)) === net.net) return net.value;
  return t.default;
}

/** nginx's INADDR_NONE: what a value that is no address is looked up as. */
const NONE: Address = { v6: false, n: 0xffffffffn };

export function geoVariable<C>(name: string, source: string | undefined, t: GeoTable, scope: GeoScope<C>): Variable<C> {
  let sourceOf: ((c: C) => string) | undefined;
  return cached(scope, name, false, (c) => {
    let text = source === undefined ? scope.client(c) : (sourceOf ??= scope.table.compile(source))(c);
    if (t.proxies && scope.forwardedFor) {
      const xff = scope.forwardedFor(c);
      const found = xff === undefined ? undefined : forwardedAddress(text, xff, t.proxies, t.proxyRecursive);
      if (found) text = found.address;
    }
    return geoLookup(t, (text !== undefined && addressOf(text)) || NONE);
  });
}
