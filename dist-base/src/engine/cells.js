export class AtomicCells {
    constructor(views, offset, length) {
        this.i32 = views.i32;
        this.offset = offset;
        this.length = length;
        this.base = offset / 4;
    }
    load(i) {
        return Atomics.load(this.i32, this.base + i);
    }
    store(i, value) {
        Atomics.store(this.i32, this.base + i, value);
    }
    /** Adds n and returns the value before. */
    add(i, n = 1) {
        return Atomics.add(this.i32, this.base + i, n);
    }
    /** Subtracts n and returns the value before. */
    sub(i, n = 1) {
        return Atomics.sub(this.i32, this.base + i, n);
    }
    /** Sets the cell to `replacement` if it holds `expected`; returns what it held. */
    compareExchange(i, expected, replacement) {
        return Atomics.compareExchange(this.i32, this.base + i, expected, replacement);
    }
    /** Increments cell i unless it already holds `limit` or more (0: no limit); true if it
     * did. The check and the increment are one step for all processes, so N workers can
     * never together go past the limit. */
    acquire(i, limit) {
        const k = this.base + i;
        if (limit <= 0) {
            Atomics.add(this.i32, k, 1);
            return true;
        }
        for (let cur = Atomics.load(this.i32, k); cur < limit;) {
            const seen = Atomics.compareExchange(this.i32, k, cur, cur + 1);
            if (seen === cur)
                return true;
            cur = seen;
        }
        return false;
    }
    /** Undoes one acquire(). */
    release(i) {
        Atomics.sub(this.i32, this.base + i, 1);
    }
}
//# sourceMappingURL=cells.js.map