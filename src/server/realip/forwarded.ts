// nginx's ngx_http_get_forwarded_addr: the address a trusted proxy says its client has,
// read from the right of a header's list (`, ` or spaces between). Recursive, each
// address found that is trusted too gives way to the one before it; the first address
// that is not a valid one ends the walk with what was found. realip and geo's `proxy`
// both read it.
import { isIP } from 'node:net';
import { accessChecker, type AccessChecker } from '../access/runtime.js';
import type { Origin } from '../config/model.js';

/** An address as a header gives it, with its port if it has one. */
export interface ForwardedAddress {
  readonly address: string;
  readonly port?: number;
}

/** Whether an address (undefined: a Unix-domain client) is among `from` (addresses,
 * CIDR ranges, `unix:`). */
export function trustedSet(from: readonly string[], origin: Origin): AccessChecker {
  return accessChecker([...from.map((address) => ({ allow: true, address, origin })), { allow: false, address: 'all', origin }]);
}

/** nginx's ngx_parse_addr_port: `1.2.3.4`, `1.2.3.4:80`, `::1`, `[::1]`, `[::1]:80`. */
export function parseAddressPort(text: string): ForwardedAddress | undefined {
  let address = text;
  let port: string | undefined;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return undefined;
    address = text.slice(1, close);
    const rest = text.slice(close + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) return undefined;
      port = rest.slice(1);
    }
    if (isIP(address) !== 6) return undefined;
  } else if (text.indexOf(':') >= 0 && text.indexOf(':') === text.lastIndexOf(':')) {
    address = text.slice(0, text.indexOf(':'));
    port = text.slice(text.indexOf(':') + 1);
    if (isIP(address) !== 4) return undefined;
  } else if (!isIP(address)) return undefined;
  if (port === undefined) return { address };
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) return undefined;
  return { address, port: Number(port) };
}

/** The client a trusted `peer` (undefined: a Unix-domain one) forwards for, from the
 * list `value`; undefined when the peer is not trusted or the list gives no address. */
export function forwardedAddress(peer: string | undefined, value: string, trusted: AccessChecker, recursive: boolean): ForwardedAddress | undefined {
  if (!trusted(peer)) return undefined;
  const entries = value.split(/[ ,]+/);
  let found: ForwardedAddress | undefined;
  for (let i = entries.length - 1; i >= 0; i--) {
    if (entries[i] === '') continue;
    const parsed = parseAddressPort(entries[i]);
    if (!parsed) return found;
    found = parsed;
    if (!recursive || !trusted(parsed.address)) return found;
  }
  return found;
}
