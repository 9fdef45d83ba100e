// Typed views over one mapped zone, made once per zone and shared by every block in it.
export interface ZoneViews {
  readonly u8: Uint8Array;
  readonly u32: Uint32Array;
  readonly i32: Int32Array;
  readonly u64: BigUint64Array;
  readonly f64: Float64Array;
}

export function makeViews(buffer: ArrayBuffer): ZoneViews {
  return {
    u8: new Uint8Array(buffer),
    u32: new Uint32Array(buffer),
    i32: new Int32Array(buffer),
    u64: new BigUint64Array(buffer),
    f64: new Float64Array(buffer),
  };
}
