// The hashes of nginx's hash and ip_hash balancers, computed without allocating: CRC-32
// (IEEE, as ngx_crc32 and zlib) over a string's UTF-8 bytes, and the address bytes
// ip_hash uses, parsed into a caller's array.

const TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
})();

/** A running CRC-32 starts here (ngx_crc32_init). */
export const CRC_INIT = 0xffffffff | 0;

export function crcByte(crc: number, byte: number): number {
  return TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
}

/** Adds a string's UTF-8 bytes (ngx_crc32_update). */
export function crcString(crc: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) crc = crcByte(crc, c);
    else if (c < 0x800) {
      crc = crcByte(crc, 0xc0 | (c >> 6));
      crc = crcByte(crc, 0x80 | (c & 0x3f));
    } else {
      if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
        const low = s.charCodeAt(i + 1);
        if (low >= 0xdc00 && low < 0xe000) {
          c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
          i++;
          crc = crcByte(crc, 0xf0 | (c >> 18));
          crc = crcByte(crc, 0x80 | ((c >> 12) & 0x3f));
          crc = crcByte(crc, 0x80 | ((c >> 6) & 0x3f));
          crc = crcByte(crc, 0x80 | (c & 0x3f));
          continue;
        }
      }
      // A lone surrogate is U+FFFD, as Buffer.from(s) writes it.
      if (c >= 0xd800 && c < 0xe000) c = 0xfffd;
      crc = crcByte(crc, 0xe0 | (c >> 12));
      crc = crcByte(crc, 0x80 | ((c >> 6) & 0x3f));
      crc = crcByte(crc, 0x80 | (c & 0x3f));
    }
  }
  return crc;
}

/** Adds a whole number's decimal digits (nginx's "%ui" of the rehash count). */
export function crcDecimal(crc: number, n: number): number {
  if (n >= 10) crc = crcDecimal(crc, Math.floor(n / 10));
  return crcByte(crc, 0x30 + (n % 10));
}

/** Adds a 32-bit value's four bytes, little-endian (nginx's prev_hash.byte on x86). */
export function crcWord(crc: number, v: number): number {
  crc = crcByte(crc, v & 0xff);
  crc = crcByte(crc, (v >>> 8) & 0xff);
  crc = crcByte(crc, (v >>> 16) & 0xff);
  return crcByte(crc, (v >>> 24) & 0xff);
}

/** The final CRC-32, unsigned (ngx_crc32_final). */
export function crcFinal(crc: number): number {
  return (crc ^ 0xffffffff) >>> 0;
}

export function crc32(s: string): number {
  return crcFinal(crcString(CRC_INIT, s));
}

/**
 * The bytes nginx's ip_hash hashes, written into `out` (16 bytes): an IPv4 client's
 * first three octets (an IPv4-mapped IPv6 address counts as IPv4), an IPv6 client's
 * sixteen bytes. Returns how many (3 or 16), or 0 when `address` is not an IP address.
 */
export function ipHashBytes(address: string, out: Uint8Array): number {
  if (parseIPv4(address, 0, address.length, out, 0)) return 3;
  return parseIPv6(address, out) ? (isMapped(out) ? (out.copyWithin(0, 12, 15), 3) : 16) : 0;
}

function isMapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

/** Dotted quad from..to into out[at..at+4]. */
function parseIPv4(s: string, from: number, to: number, out: Uint8Array, at: number): boolean {
  let part = 0;
  let digits = 0;
  let value = 0;
  for (let i = from; i <= to; i++) {
    const c = i < to ? s.charCodeAt(i) : 0x2e;
    if (c >= 0x30 && c <= 0x39) {
      value = value * 10 + (c - 0x30);
      if (++digits > 3 || value > 255) return false;
    } else if (c === 0x2e) {
      if (digits === 0 || part > 3) return false;
      out[at + part++] = value;
      value = 0;
      digits = 0;
    } else return false;
  }
  return part === 4;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/** RFC 4291 text (with `::`, a dotted IPv4 tail, a `%zone` or `[...]` around it). */
function parseIPv6(s: string, out: Uint8Array): boolean {
  let from = 0;
  let to = s.length;
  if (s.charCodeAt(0) === 0x5b) {
    if (s.charCodeAt(to - 1) !== 0x5d) return false;
    from = 1;
    to--;
  }
  const zone = s.indexOf('%', from);
  if (zone >= 0 && zone < to) to = zone;
  out.fill(0);
  let n = 0; // bytes written
  let gap = -1; // where `::` was, in bytes
  let i = from;
  if (s.charCodeAt(i) === 0x3a) {
    if (s.charCodeAt(i + 1) !== 0x3a) return false;
    gap = 0;
    i += 2;
  }
  while (i < to) {
    if (n >= 16) return false;
    let value = 0;
    let digits = 0;
    const start = i;
    for (; i < to; i++) {
      const h = hexValue(s.charCodeAt(i));
      if (h < 0) break;
      value = value * 16 + h;
      if (++digits > 4) return false;
    }
    if (i < to && s.charCodeAt(i) === 0x2e) {
      // A dotted IPv4 tail: the last four bytes.
      if (n > 12 || !parseIPv4(s, start, to, out, n)) return false;
      n += 4;
      i = to;
      break;
    }
    if (digits === 0) return false;
    out[n++] = value >> 8;
    out[n++] = value & 0xff;
    if (i === to) break;
    if (s.charCodeAt(i) !== 0x3a) return false;
    i++;
    if (s.charCodeAt(i) === 0x3a) {
      if (gap >= 0) return false;
      gap = n;
      i++;
    } else if (i === to) return false;
  }
  if (gap < 0) return n === 16;
  if (n === 16) return false;
  // Move what followed `::` to the end.
  const tail = n - gap;
  out.copyWithin(16 - tail, gap, n);
  out.fill(0, gap, 16 - tail);
  return true;
}
