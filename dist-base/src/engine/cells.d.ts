import type { ZoneViews } from './views.js';
export declare class AtomicCells {
    readonly length: number;
    readonly offset: number;
    private readonly i32;
    private readonly base;
    constructor(views: ZoneViews, offset: number, length: number);
    load(i: number): number;
    store(i: number, value: number): void;
    /** Adds n and returns the value before. */
    add(i: number, n?: number): number;
    /** Subtracts n and returns the value before. */
    sub(i: number, n?: number): number;
    /** Sets the cell to `replacement` if it holds `expected`; returns what it held. */
    compareExchange(i: number, expected: number, replacement: number): number;
    /** Increments cell i unless it already holds `limit` or more (0: no limit); true if it
     * did. The check and the increment are one step for all processes, so N workers can
     * never together go past the limit. */
    acquire(i: number, limit: number): boolean;
    /** Undoes one acquire(). */
    release(i: number): void;
}
