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
export function responseIndex(code, claims) {
    if (code >= 100 && code < 600) {
        const i = commonIndex[code];
        if (i >= 0)
            return i;
        for (let c = 0; c < CLAIMED; c++) {
            const held = claims.load(c);
            if (held === code)
                return COMMON.length + c;
            if (held === 0 && claims.compareExchange(c, 0, code) === 0)
                return COMMON.length + c;
            if (claims.load(c) === code)
                return COMMON.length + c; // another worker claimed it for the same code
        }
    }
    return XXX;
}
// One list and its pairs, refilled by each call: a render lists ten thousand objects'
// responses, and readers of entries take them before the next call (shape.ts).
const listed = [];
const pairs = [];
function put(n, code, count) {
    const pair = (pairs[n] ??= ['', 0]);
    pair[0] = code;
    pair[1] = count;
    listed.push(pair);
}
/** Non-zero counts as [code, count], codes ascending, `xxx` last. */
export function responseEntries(sums, first, claims) {
    listed.length = 0;
    for (let i = 0; i < COMMON.length; i++)
        if (sums[first + i] > 0)
            put(listed.length, COMMON_NAMES[i], sums[first + i]);
    let claimed = false;
    // A claimed counter is counted only after its code was claimed: the claims (shared
    // memory of their own, a cache miss away) need reading only for counters above 0.
    for (let c = 0; c < CLAIMED; c++) {
        if (sums[first + COMMON.length + c] > 0) {
            put(listed.length, String(claims.load(c)), sums[first + COMMON.length + c]);
            claimed = true;
        }
    }
    // Claimed codes can fall between common ones: keep the order a reader expects.
    if (claimed)
        listed.sort((a, b) => Number(a[0]) - Number(b[0]));
    if (sums[first + XXX] > 0)
        put(listed.length, 'xxx', sums[first + XXX]);
    return listed;
}
//# sourceMappingURL=responses.js.map