// `responses`: a count per HTTP status code, for server zones, location zones and peers.
//
// 500 counters per object would make 10,000 peers cost tens of megabytes and make every
// render scan them all. So an object has a counter for each code servers commonly send,
// 16 counters whose code is claimed (with a compare-and-swap, once per object) by the
// first worker that sends an uncommon code, and `xxx` for codes outside 100-599 (and,
// should one object ever see more than 16 uncommon codes, for the 17th on).
import type { AtomicCells } from '../engine/index.js';

// The codes that make up nearly all of a server's responses (nginx's 444 and 499
// included); any other code takes one of the claimed counters.
const COMMON = [200, 201, 204, 206, 301, 302, 304, 307, 308, 400, 401, 403, 404, 405, 408, 409, 410, 413, 429, 444, 499, 500, 502, 503, 504];
export const CLAIMED = 16;
/** Counters a `responses` field takes in its block. */
export const RESPONSE_COUNTERS = COMMON.length + CLAIMED + 1;
const XXX = COMMON.length + CLAIMED;

const COMMON_NAMES = COMMON.map(String);
// code -> counter for the common codes, -1 for the others.
const commonIndex = new Int8Array(600).fill(-1);
COMMON.forEach((code, i) => (commonIndex[code] = i));

/** The counter (relative to the field's first) for `code`. `claims` are the object's 16
 * cells holding the uncommon codes it has seen. */
export function responseIndex(code: number, claims: AtomicCells): number {
  if (code >= 100 && code < 600) {
    const i = commonIndex[code];
    if (i >= 0) return i;
    for (let c = 0; c < CLAIMED; c++) {
      const held = claims.load(c);
      if (held === code) return COMMON.length + c;
      if (held === 0 && claims.compareExchange(c, 0, code) === 0) return COMMON.length + c;
      if (claims.load(c) === code) return COMMON.length + c; // another worker claimed it for the same code
    }
  }
  return XXX;
}

// Claimed counters of one object, to merge into the common ones' order (rarely any).
const claimedCodes = new Int32Array(CLAIMED);
const claimedCounts = new Float64Array(CLAIMED);

/** Calls `emit` for each non-zero count, codes ascending, `xxx` last. */
export function responseEntries(sums: Float64Array, first: number, claims: AtomicCells, emit: (code: string, count: number) => void): void {
  // A claimed counter is counted only after its code was claimed: the claims (shared
  // memory of their own, a cache miss away) need reading only for counters above 0.
  let claimed = 0;
  for (let c = 0; c < CLAIMED; c++) {
    const count = sums[first + COMMON.length + c];
    if (count > 0) {
      const code = claims.load(c);
      let at = claimed++;
      for (; at > 0 && claimedCodes[at - 1] > code; at--) {
        claimedCodes[at] = claimedCodes[at - 1];
        claimedCounts[at] = claimedCounts[at - 1];
      }
      claimedCodes[at] = code;
      claimedCounts[at] = count;
    }
  }
  // Claimed codes fall between common ones: keep the order a reader expects.
  let next = 0;
  for (let i = 0; i < COMMON.length; i++) {
    for (; next < claimed && claimedCodes[next] < COMMON[i]; next++) emit(String(claimedCodes[next]), claimedCounts[next]);
    if (sums[first + i] > 0) emit(COMMON_NAMES[i], sums[first + i]);
  }
  for (; next < claimed; next++) emit(String(claimedCodes[next]), claimedCounts[next]);
  if (sums[first + XXX] > 0) emit('xxx', sums[first + XXX]);
}
