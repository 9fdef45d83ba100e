// The hashes of nginx's hash and ip_hash balancers, computed without allocating: CRC-32
// (IEEE, as ngx_crc32 and zlib) over a string's UTF-8 bytes, and the address bytes
// ip_hash uses, parsed into a caller's array.
import { isMapped, parseInet4, parseInet6 } from '../inet.js';

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
  const v4 = parseInet4(address, 0, address.length);
  if (v4 >= 0) {
    out[0] = v4 >>> 24;
    out[1] = (v4 >>> 16) & 0xff;
    out[2] = (v4 >>> 8) & 0xff;
    return 3;
  }
  const bracketed = address.charCodeAt(0) === 0x5b /* [ */;
  if (bracketed && address.charCodeAt(address.length - 1) !== 0x5d /* ] */) return 0;
  if (!parseInet6(address, out, bracketed ? 1 : 0, bracketed ? address.length - 1 : address.length)) return 0;
  if (!isMapped(out)) return 16;
  out.copyWithin(0, 12, 15);
  return 3;
}
