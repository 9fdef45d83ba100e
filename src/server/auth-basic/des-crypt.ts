// The traditional crypt(3) of Unix: DES, 25 times over a zero block, keyed with the first
// 8 bytes of the password (7 bits of each) and salted with 12 bits that swap entries of
// the expansion table. nginx hands a hash it does not know itself (not $apr1$, {PLAIN},
// {SHA} or {SSHA}) to the system's crypt(3), whose oldest format this is: 2 salt
// characters then 11 of the hash (`htpasswd -d`, Perl's crypt('password', 'salt')). node
// has no crypt(3) and node:crypto no DES in OpenSSL 3's default provider, so the cipher
// is written here from FIPS 46's tables, one bit per byte as Version 7 Unix's crypt.c
// did: 25 encryptions cost well under a millisecond, and runtime.ts remembers success.

/** The 64 characters of crypt(3)'s encoding, in the order of their 6-bit values. */
/** crypt(3)'s base 64 alphabet, of the salt and the hash alike (SHA-crypt's too). */
export const ALPHABET = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// FIPS 46's tables, bit positions counted from 1.
const IP = [
  58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4, 62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8,
  57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3, 61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7,
];
const FP = [
  40, 8, 48, 16, 56, 24, 64, 32, 39, 7, 47, 15, 55, 23, 63, 31, 38, 6, 46, 14, 54, 22, 62, 30, 37, 5, 45, 13, 53, 21, 61, 29,
  36, 4, 44, 12, 52, 20, 60, 28, 35, 3, 43, 11, 51, 19, 59, 27, 34, 2, 42, 10, 50, 18, 58, 26, 33, 1, 41, 9, 49, 17, 57, 25,
];
/** Permuted choice 1: the key's 56 bits, C then D. */
const PC1 = [
  57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18, 10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36,
  63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22, 14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4,
];
/** Permuted choice 2: a round's 48 key bits out of C and D. */
const PC2 = [
  14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, 23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2,
  41, 52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48, 44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32,
];
const SHIFTS = [1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1];
/** The expansion of R to 48 bits, which the salt changes. */
const E = [
  32, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11, 12, 13, 12, 13, 14, 15, 16, 17,
  16, 17, 18, 19, 20, 21, 20, 21, 22, 23, 24, 25, 24, 25, 26, 27, 28, 29, 28, 29, 30, 31, 32, 1,
];
const P = [16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10, 2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25];
/** The eight S-boxes, each 4 rows of 16. */
const S = [
  [14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7, 0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8,
    4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0, 15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13],
  [15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10, 3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5,
    0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15, 13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9],
  [10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8, 13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1,
    13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7, 1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12],
  [7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15, 13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9,
    10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4, 3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14],
  [2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9, 14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6,
    4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14, 11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3],
  [12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11, 10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8,
    9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6, 4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13],
  [4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1, 13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6,
    1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2, 6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12],
  [13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7, 1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2,
    7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8, 2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11],
];

/** The 16 round keys of a 64-bit key (one bit per byte). */
function keySchedule(key: Uint8Array): Uint8Array[] {
  const cd = Uint8Array.from(PC1, (b) => key[b - 1]);
  const rounds: Uint8Array[] = [];
  for (const shift of SHIFTS) {
    for (let s = 0; s < shift; s++) {
      // C and D (28 bits each) rotate left apart.
      for (const half of [0, 28]) {
        const first = cd[half];
        cd.copyWithin(half, half + 1, half + 28);
        cd[half + 27] = first;
      }
    }
    rounds.push(Uint8Array.from(PC2, (b) => cd[b - 1]));
  }
  return rounds;
}

/** One DES encryption of `block` in place, with the (salted) expansion `e`. */
function encrypt(block: Uint8Array, rounds: readonly Uint8Array[], e: readonly number[]): void {
  const lr = Uint8Array.from(IP, (b) => block[b - 1]);
  let l = lr.subarray(0, 32);
  let r = lr.subarray(32);
  const f = new Uint8Array(32);
  const x = new Uint8Array(48);
  for (const k of rounds) {
    for (let j = 0; j < 48; j++) x[j] = r[e[j] - 1] ^ k[j];
    for (let box = 0, t = 0; box < 8; box++, t += 6) {
      // The outer bits choose the row, the inner four the column.
      const value = S[box][(x[t] << 5) | (x[t + 5] << 4) | (x[t + 1] << 3) | (x[t + 2] << 2) | (x[t + 3] << 1) | x[t + 4]];
      for (let j = 0; j < 4; j++) f[4 * box + j] = (value >> (3 - j)) & 1;
    }
    // The new R is L xor f(R); the old R becomes L: L is overwritten and the halves swap.
    for (let j = 0; j < 32; j++) l[j] ^= f[P[j] - 1];
    [l, r] = [r, l];
  }
  // The last round's halves go out unswapped: R16 L16.
  const out = new Uint8Array(64);
  out.set(r, 0);
  out.set(l, 32);
  for (let j = 0; j < 64; j++) block[j] = out[FP[j] - 1];
}

/** crypt(3) of `password` (its bytes) with the salt of `setting` (a hash or its first two
 * characters): the 13 characters of a traditional DES hash, or undefined when the salt
 * is not two characters of the encoding (which crypt(3) refuses). */
export function desCrypt(password: Uint8Array, setting: string): string | undefined {
  if (setting.length < 2) return undefined;
  const salt = [ALPHABET.indexOf(setting[0]), ALPHABET.indexOf(setting[1])];
  if (salt[0] < 0 || salt[1] < 0) return undefined;
  // The key: the low 7 bits of each of the first 8 bytes, the eighth bit of each 0.
  const key = new Uint8Array(64);
  for (let i = 0; i < 8 && i < password.length && password[i] !== 0; i++) {
    for (let j = 0; j < 7; j++) key[8 * i + j] = (password[i] >> (6 - j)) & 1;
  }
  const e = [...E];
  for (let i = 0; i < 2; i++) {
    for (let j = 0; j < 6; j++) {
      if ((salt[i] >> j) & 1) [e[6 * i + j], e[6 * i + j + 24]] = [e[6 * i + j + 24], e[6 * i + j]];
    }
  }
  const rounds = keySchedule(key);
  // 66 bits: the 64 of the block and two 0s, eleven characters of 6 bits.
  const block = new Uint8Array(66);
  for (let i = 0; i < 25; i++) encrypt(block, rounds, e);
  let hash = setting.slice(0, 2);
  for (let i = 0; i < 11; i++) {
    let c = 0;
    for (let j = 0; j < 6; j++) c = (c << 1) | block[6 * i + j];
    hash += ALPHABET[c];
  }
  return hash;
}
