export declare class JsonWriter {
    readonly pretty: boolean;
    /** The bytes so far, up to `pos`; compiled writers (tree.ts) store into it directly. */
    buf: Buffer;
    /** The same bytes, for stores of four at once. */
    view: DataView;
    pos: number;
    constructor(pretty: boolean);
    /** What gives the buffer back for the next writer once its result is no longer used
     * (ApiResponse.release); only large buffers are kept, the largest one. */
    recycle(): () => void;
    /** Makes room for n more bytes (the buffer may be replaced). */
    room(n: number): void;
    open(): void;
    /** The key of a member at `depth` (its object's depth + 1), comma first unless first. */
    key(name: string, depth: number, first: boolean): void;
    close(depth: number, empty: boolean): void;
    /** Pre-encoded bytes, from index `from` on: short ones are copied by hand, which beats
     * a call for them. */
    bytes(b: Uint8Array, from?: number): void;
    scalar(value: number | string | boolean): void;
    /** A time as ISO 8601 in UTC with milliseconds: each second's text is made once. */
    isoTime(ms: number): void;
    /** A whole number below 2^32, digit by digit (int32 arithmetic below 2^31, which V8
     * turns into multiplications). */
    private uint;
    /** Text already in JSON form (a quoted string, a large or fractional number). */
    text(s: string): void;
    /** The JSON written so far: a view of the buffer, not a copy. */
    result(): Buffer;
}
export declare function scalarText(value: number | string | boolean): string;
export declare function prefix(name: string, depth: number, first: boolean, pretty: boolean): Uint8Array;
export declare function closing(depth: number): Uint8Array;
