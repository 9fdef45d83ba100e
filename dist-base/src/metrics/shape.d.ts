export type Json = number | string | boolean | Json[] | {
    [key: string]: Json;
};
/** What a request asks of rendering. */
export interface RenderContext {
    /** Times as epoch milliseconds instead of ISO 8601 (`date=epoch`). */
    readonly dateEpoch: boolean;
    /** The address that accepted the API request (`/status/server/address`). */
    readonly address: string;
    /** Whether the serving location has `api_config_files on`. */
    readonly configFiles: boolean;
    /** Now, in epoch milliseconds, the same for the whole response. */
    readonly now: number;
}
export type MetricType = 'counter' | 'gauge';
export type Scalar = number | string | boolean;
export interface Leaf<S> {
    readonly kind: 'leaf';
    readonly name: string;
    /** The value, or undefined when the field is absent for this instance. */
    value(source: S, ctx: RenderContext): Scalar | undefined;
    /** How the text format exports it; strings are exported only through `numeric`. */
    readonly metric?: MetricType;
    readonly help: string;
    /** For a Time field: the value is epoch milliseconds, rendered as ISO 8601. */
    readonly time?: boolean;
    /** For a string exported as a number (a peer's state). */
    numeric?(value: Scalar): number;
}
/** An object whose keys are data, such as `responses` (codes) or cache `shards`. */
export interface Entries<S> {
    readonly kind: 'entries';
    readonly name: string;
    /** The entries now. The list may be reused by the next call: read it before then. */
    entries(source: S, ctx: RenderContext): Array<[string, number]>;
    readonly metric: MetricType;
    readonly help: string;
    /** The label the keys become in the text format. */
    readonly label: string;
}
export interface Group<S> {
    readonly kind: 'group';
    readonly name: string;
    readonly fields: ReadonlyArray<Field<S>>;
    /** Absent when this says so (an `ssl` object of a server that does not listen with SSL). */
    present?(source: S): boolean;
}
export type Field<S> = Leaf<S> | Entries<S> | Group<S>;
export declare function group<S>(name: string, fields: ReadonlyArray<Field<S>>, present?: (source: S) => boolean): Group<S>;
/** A counter or gauge read from the instance's sums by index. */
export declare function counter<S extends {
    sums: Float64Array;
}>(name: string, index: number, help: string): Leaf<S>;
export declare function gauge<S extends {
    sums: Float64Array;
}>(name: string, index: number, help: string): Leaf<S>;
/** Any other leaf: a configured value, a derived number, a string. */
export declare function leaf<S>(name: string, help: string, value: (source: S, ctx: RenderContext) => Scalar | undefined, metric?: MetricType): Leaf<S>;
/** A Time field: epoch milliseconds, absent while 0. */
export declare function time<S>(name: string, help: string, ms: (source: S, ctx: RenderContext) => number): Leaf<S>;
export declare function entries<S>(name: string, label: string, metric: MetricType, help: string, list: (source: S, ctx: RenderContext) => Array<[string, number]>): Entries<S>;
/** A time as the request wants it: ISO 8601 in UTC with milliseconds, or epoch ms. */
export declare function renderTime(ms: number, ctx: RenderContext): Scalar;
/** What an instance renders from when its fields live in a counter block. */
export interface Counted {
    /** The block's sums, read once when the instance's node is made. */
    readonly sums: Float64Array;
}
/** Lays a family's counters out in its block in declaration order: each field is
 * declared once, and its index, JSON name, type and help come from that one place. */
export declare class Layout<S extends Counted> {
    /** Counters the block holds. */
    size: number;
    counter(name: string, help: string): Leaf<S> & {
        readonly index: number;
    };
    gauge(name: string, help: string): Leaf<S> & {
        readonly index: number;
    };
    /** `count` consecutive counters, for a field with its own way of rendering them. */
    reserve(count: number): number;
}
