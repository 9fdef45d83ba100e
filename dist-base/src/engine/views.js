export function makeViews(buffer) {
    return {
        u8: new Uint8Array(buffer),
        u32: new Uint32Array(buffer),
        i32: new Int32Array(buffer),
        u64: new BigUint64Array(buffer),
        f64: new Float64Array(buffer),
    };
}
//# sourceMappingURL=views.js.map