// How a metric family declares its part of the status tree: each field once, with its
// JSON name, where its value comes from, whether it is present, and its metric type and
// help. The path walker, the JSON renderer and both text formats derive from these
// declarations and know nothing of any one family.
export function group(name, fields, present) {
    return { kind: 'group', name, fields, present };
}
/** A counter or gauge read from the instance's sums by index. */
export function counter(name, index, help) {
    return { kind: 'leaf', name, metric: 'counter', help, value: (s) => s.sums[index] };
}
export function gauge(name, index, help) {
    return { kind: 'leaf', name, metric: 'gauge', help, value: (s) => s.sums[index] };
}
/** Any other leaf: a configured value, a derived number, a string. */
export function leaf(name, help, value, metric) {
    return { kind: 'leaf', name, help, value, metric };
}
/** A Time field: epoch milliseconds, absent while 0. */
export function time(name, help, ms) {
    return { kind: 'leaf', name, help, time: true, value: (s, ctx) => ms(s, ctx) || undefined };
}
export function entries(name, label, metric, help, list) {
    return { kind: 'entries', name, label, metric, help, entries: list };
}
/** A time as the request wants it: ISO 8601 in UTC with milliseconds, or epoch ms. */
export function renderTime(ms, ctx) {
    if (ctx.dateEpoch)
        return Math.round(ms);
    // Times in one response mostly fall in a few seconds: format each second once.
    const t = Math.round(ms);
    const second = Math.floor(t / 1000);
    if (second !== lastSecond) {
        lastSecond = second;
        lastPrefix = new Date(second * 1000).toISOString().slice(0, 20);
    }
    return lastPrefix + String(t - second * 1000).padStart(3, '0') + 'Z';
}
let lastSecond = NaN;
let lastPrefix = '';
/** Lays a family's counters out in its block in declaration order: each field is
 * declared once, and its index, JSON name, type and help come from that one place. */
export class Layout {
    constructor() {
        /** Counters the block holds. */
        this.size = 0;
    }
    counter(name, help) {
        const index = this.size++;
        return { kind: 'leaf', name, metric: 'counter', help, index, value: (s) => s.sums[index] };
    }
    gauge(name, help) {
        const index = this.size++;
        return { kind: 'leaf', name, metric: 'gauge', help, index, value: (s) => s.sums[index] };
    }
    /** `count` consecutive counters, for a field with its own way of rendering them. */
    reserve(count) {
        const first = this.size;
        this.size += count;
        return first;
    }
}
//# sourceMappingURL=shape.js.map