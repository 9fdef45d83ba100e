// IP addresses in text, parsed by hand into numbers: allow/deny rules and ip_hash read a
// client's address on every request, and this allocates nothing.

/** A dotted quad in `s[start, end)` as an unsigned 32-bit number; -1 when it is not one. */
export function parseInet4(s: string, start: number, end: number): number {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      octet = octet * 10 + (c - 0x30);
      if (++digits > 3 || octet > 255) return -1;
    } else if (c === 0x2e /* . */) {
      if (digits === 0 || ++dots > 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
    } else {
      return -1;
    }
  }
  if (digits === 0 || dots !== 3) return -1;
  return value * 256 + octet;
}

/** An IPv6 address in `s[start, end)` (RFC 4291 text: `::`, a dotted IPv4 tail, a `%zone`
 * ignored) into the 16 bytes of `out`; false when it is not one. */
export function parseInet6(s: string, out: Uint8Array, start = 0, end = s.length): boolean {
  const zone = s.indexOf('%', start);
  if (zone >= 0 && zone < end) end = zone;
  out.fill(0);
  let n = 0; // bytes written
  let gap = -1; // where `::` was, in bytes
  let i = start;
  if (i < end && s.charCodeAt(i) === 0x3a /* : */) {
    if (s.charCodeAt(i + 1) !== 0x3a) return false;
    gap = 0;
    i += 2;
  } else if (i === end) {
    return false;
  }
  while (i < end) {
    if (n >= 16) return false;
    let value = 0;
    let digits = 0;
    const group = i;
    for (; i < end; i++) {
      const h = hex(s.charCodeAt(i));
      if (h < 0) break;
      value = value * 16 + h;
      if (++digits > 4) return false;
    }
    if (i < end && s.charCodeAt(i) === 0x2e /* . */) {
      // The last four bytes written as IPv4.
      if (n > 12) return false;
      const v4 = parseInet4(s, group, end);
      if (v4 < 0) return false;
      out[n++] = v4 >>> 24;
      out[n++] = (v4 >>> 16) & 0xff;
      out[n++] = (v4 >>> 8) & 0xff;
      out[n++] = v4 & 0xff;
      break;
    }
    if (digits === 0) return false;
    out[n++] = value >> 8;
    out[n++] = value & 0xff;
    if (i === end) break;
    if (s.charCodeAt(i) !== 0x3a) return false;
    i++;
    if (i < end && s.charCodeAt(i) === 0x3a) {
      if (gap >= 0) return false;
      gap = n;
      i++;
    } else if (i === end) return false;
  }
  if (gap < 0) return n === 16;
  if (n === 16) return false;
  // What followed `::` goes to the end.
  const tail = n - gap;
  out.copyWithin(16 - tail, gap, n);
  out.fill(0, gap, 16 - tail);
  return true;
}

/** Whether 16 bytes are an IPv4-mapped address (`::ffff:a.b.c.d`), as a dual-stack
 * socket reports an IPv4 client. */
export function isMapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

/** Big-endian 32-bit word `w` (0 to 3) of 16 bytes. */
export function word(b: Uint8Array, w: number): number {
  return ((b[4 * w]! << 24) | (b[4 * w + 1]! << 16) | (b[4 * w + 2]! << 8) | b[4 * w + 3]!) >>> 0;
}

function hex(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/** Whether an address (text, IPv6 with or without brackets) is this machine's loopback:
 * 127.0.0.0/8, ::1, or 127.0.0.0/8 mapped into IPv6. */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const v4 = parseInet4(a, 0, a.length);
  if (v4 >= 0) return v4 >>> 24 === 127;
  const b = new Uint8Array(16);
  if (!parseInet6(a, b)) return false;
  if (isMapped(b)) return b[12] === 127;
  for (let i = 0; i < 15; i++) if (b[i] !== 0) return false;
  return b[15] === 1;
}
