export interface ZoneViews {
    readonly u8: Uint8Array;
    readonly u32: Uint32Array;
    readonly i32: Int32Array;
    readonly u64: BigUint64Array;
    readonly f64: Float64Array;
}
export declare function makeViews(buffer: ArrayBuffer): ZoneViews;
