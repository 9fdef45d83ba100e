import type { AtomicCells } from '../engine/index.js';
export declare const CLAIMED = 16;
/** Counters a `responses` field takes in its block. */
export declare const RESPONSE_COUNTERS: number;
/** The counter (relative to the field's first) for `code`. `claims` are the object's 16
 * cells holding the uncommon codes it has seen. */
export declare function responseIndex(code: number, claims: AtomicCells): number;
/** Non-zero counts as [code, count], codes ascending, `xxx` last. */
export declare function responseEntries(sums: Float64Array, first: number, claims: AtomicCells): Array<[string, number]>;
