// SHA-crypt, the `$5$` (SHA-256) and `$6$` (SHA-512) hashes of glibc's crypt(3), which
// nginx's auth_basic hands to the system and `openssl passwd -5|-6` or `mkpasswd` write.
// Node has no crypt(3): this follows Ulrich Drepper's specification ("Unix crypt using
// SHA-256 and SHA-512"), step by step, on node:crypto's hashes.
import { createHash } from 'node:crypto';
import { ALPHABET } from './des-crypt.js';

const ROUNDS_DEFAULT = 5000;
const ROUNDS_MIN = 1000;
const ROUNDS_MAX = 999_999_999;
const SALT_MAX = 16;

/** The order the specification writes the final digest's bytes in, three at a time
 * (the last group shorter). */
const ORDER = {
  sha256: [[0, 10, 20], [21, 1, 11], [12, 22, 2], [3, 13, 23], [24, 4, 14], [15, 25, 5], [6, 16, 26], [27, 7, 17], [18, 28, 8], [9, 19, 29], [-1, 31, 30]],
  sha512: [
    [0, 21, 42], [22, 43, 1], [44, 2, 23], [3, 24, 45], [25, 46, 4], [47, 5, 26], [6, 27, 48], [28, 49, 7], [50, 8, 29], [9, 30, 51], [31, 52, 10],
    [53, 11, 32], [12, 33, 54], [34, 55, 13], [56, 14, 35], [15, 36, 57], [37, 58, 16], [59, 17, 38], [18, 39, 60], [40, 61, 19], [62, 20, 41], [-1, -1, 63],
  ],
} as const;

type Algorithm = keyof typeof ORDER;

/** A length of bytes taken from `digest` repeated (the specification's P and S strings). */
function stretch(digest: Buffer, length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i += digest.length) digest.copy(out, i, 0, Math.min(digest.length, length - i));
  return out;
}

/** The digest in crypt's base 64: each group of three bytes as four characters, low bits first. */
function encode(algorithm: Algorithm, c: Buffer): string {
  let out = '';
  for (const group of ORDER[algorithm]) {
    const bytes = group.map((i) => (i < 0 ? 0 : c[i]));
    let w = (bytes[0] << 16) | (bytes[1] << 8) | bytes[2];
    const n = group.filter((i) => i >= 0).length + 1;
    for (let k = 0; k < n; k++, w >>= 6) out += ALPHABET[w & 0x3f];
  }
  return out;
}

/** The crypt(3) of `key` with `setting` (`$5$[rounds=N$]salt[$...]` or `$6$...`), or
 * undefined when the setting is not one. */
export function shaCrypt(key: Buffer, setting: string): string | undefined {
  const algorithm: Algorithm | undefined = setting.startsWith('$5$') ? 'sha256' : setting.startsWith('$6$') ? 'sha512' : undefined;
  if (!algorithm) return undefined;
  let rest = setting.slice(3);
  let rounds = ROUNDS_DEFAULT;
  let custom = false;
  const r = /^rounds=(\d+)\$/.exec(rest);
  if (r) {
    // The specification clamps; libxcrypt (Debian's crypt(3), nginx's) refuses instead.
    rounds = Number(r[1]);
    if (rounds < ROUNDS_MIN || rounds > ROUNDS_MAX) return undefined;
    custom = true;
    rest = rest.slice(r[0].length);
  }
  const end = rest.indexOf('$');
  const salt = Buffer.from(end < 0 ? rest : rest.slice(0, end), 'utf8').subarray(0, SALT_MAX);
  const hash = () => createHash(algorithm);
  const b = hash().update(key).update(salt).update(key).digest();
  const a = hash().update(key).update(salt);
  let n = key.length;
  for (; n > b.length; n -= b.length) a.update(b);
  a.update(b.subarray(0, n));
  for (n = key.length; n > 0; n >>= 1) a.update(n & 1 ? b : key);
  let c = a.digest();
  const dp = hash();
  for (let i = 0; i < key.length; i++) dp.update(key);
  const p = stretch(dp.digest(), key.length);
  const ds = hash();
  for (let i = 0; i < 16 + c[0]; i++) ds.update(salt);
  const s = stretch(ds.digest(), salt.length);
  for (let i = 0; i < rounds; i++) {
    const h = hash().update(i & 1 ? p : c);
    if (i % 3) h.update(s);
    if (i % 7) h.update(p);
    c = h.update(i & 1 ? c : p).digest();
  }
  return `${setting.slice(0, 3)}${custom ? `rounds=${rounds}$` : ''}${salt.toString('utf8')}$${encode(algorithm, c)}`;
}
