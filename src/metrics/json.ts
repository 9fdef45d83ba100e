// JSON straight from the tree into bytes, without building objects or strings first:
// rendering ten thousand peers makes no garbage but the output buffer. Keys come as
// pre-encoded prefixes ("\n\t\t\"name\": "), integers are written digit by digit, and
// the layout is that of JSON.stringify(value, null, '\t') when pretty, of
// JSON.stringify(value) when not.

const OPEN = 0x7b; // {
const CLOSE = 0x7d; // }

// A buffer a transport gave back (recycle()), with its view, for the next response: a
// small answer (`/status/connections`) costs an allocation of its own otherwise, which
// is most of what it costs, and a large one a page fault per 4 KiB.
let spare: { buf: Buffer; view: DataView } | undefined;

// Responses are about as large as the previous one of the same kind: start there rather
// than doubling and copying up to several megabytes each time.
const lastSize = [4096, 4096];

export class JsonWriter {
  /** The bytes so far, up to `pos`; compiled writers (tree.ts) store into it directly. */
  buf: Buffer;
  /** The same bytes, for stores of four at once. */
  view: DataView;
  pos = 0;
  constructor(readonly pretty: boolean) {
    const size = lastSize[pretty ? 1 : 0] + 1024;
    if (spare && spare.buf.length >= size) {
      this.buf = spare.buf;
      this.view = spare.view;
      spare = undefined;
    } else {
      this.buf = Buffer.allocUnsafe(size);
      this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length);
    }
  }

  /** What gives the buffer back for the next writer once its result is no longer used
   * (ApiResponse.release); the largest buffer given back is kept. */
  recycle(): () => void {
    const buf = this.buf;
    const view = this.view;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (!(spare && spare.buf.length >= buf.length)) spare = { buf, view };
    };
  }

  /** Makes room for n more bytes (the buffer may be replaced). */
  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
    this.view = new DataView(bigger.buffer, bigger.byteOffset, bigger.length);
  }

  open(): void {
    this.room(1);
    this.buf[this.pos++] = OPEN;
  }

  /** The key of a member at `depth` (its object's depth + 1), comma first unless first. */
  key(name: string, depth: number, first: boolean): void {
    this.bytes(prefix(name, depth, first, this.pretty));
  }

  close(depth: number, empty: boolean): void {
    if (empty || !this.pretty) {
      this.room(1);
      this.buf[this.pos++] = CLOSE;
    } else this.bytes(closing(depth));
  }

  /** Pre-encoded bytes, from index `from` on: those under 16 bytes are copied by hand,
   * which beats a call for them; a key with its indent (some twenty bytes) is not. */
  bytes(b: Uint8Array, from = 0): void {
    const n = b.length - from;
    this.room(n);
    const buf = this.buf;
    let p = this.pos;
    if (n < 16) for (let i = from; i < b.length; i++) buf[p++] = b[i];
    else {
      buf.set(from ? b.subarray(from) : b, p);
      p += n;
    }
    this.pos = p;
  }

  scalar(value: number | string | boolean): void {
    if (typeof value === 'number' && value >= 0 && value < 4294967296 && value === Math.floor(value)) this.uint(value);
    else if (typeof value === 'string') this.bytes(quoted(value));
    else if (typeof value === 'boolean') this.bytes(value ? TRUE : FALSE);
    else this.text(scalarText(value));
  }

  /** Bytes `from` to `to` of `b`, four at a time through `v`, a DataView of `b`: for
   * bytes copied over and over (members' keys, an array's separators), where a byte at a
   * time cost more than the rest of writing them. */
  span(b: Uint8Array, v: DataView, from: number, to: number): void {
    this.room(to - from);
    const buf = this.buf;
    const view = this.view;
    let p = this.pos;
    let i = from;
    for (; i + 4 <= to; i += 4, p += 4) view.setUint32(p, v.getUint32(i, true), true);
    for (; i < to; i++) buf[p++] = b[i];
    this.pos = p;
  }

  /** Pre-encoded bytes made by encoded(): four at a time, or, for a run longer than some
   * eight such stores (a histogram's bounds), by one TypedArray.set, which then costs less
   * than the loop. */
  put(e: Encoded): void {
    const n = e.bytes.length;
    if (n > 32) {
      this.room(n);
      this.buf.set(e.bytes, this.pos);
      this.pos += n;
    } else this.span(e.bytes, e.view, 0, n);
  }

  /** The items of an array of numbers, each after its separator (`first` before the
   * first, `next` with its DataView before the others): whole numbers, which histogram
   * buckets are, go in one pass with room made once, rather than two calls and two
   * checks per item. */
  numbers(values: ArrayLike<number>, first: Uint8Array, next: Uint8Array, nextView: DataView): void {
    const n = values.length;
    const len = next.length;
    this.room(n * (len + 10) + first.length);
    for (let i = 0; i < n; i++) {
      if (i === 0) this.bytes(first);
      else this.span(next, nextView, 0, len);
      const v = values[i];
      if (v >= 0 && v < 0x8000_0000 && v === Math.floor(v)) this.pos = putUint(this.buf, this.pos, v);
      else {
        // Any other number by the general path, with room made again for the rest.
        this.scalar(v);
        this.room((n - i) * (len + 10));
      }
    }
  }

  /** A time as ISO 8601 in UTC with milliseconds: each second's text is made once. */
  isoTime(ms: number): void {
    const t = Math.round(ms);
    const second = Math.floor(t / 1000);
    // Times of one answer fall in a few seconds, and alternate between them (ten thousand
    // peers' last selection): a slot per second modulo 16 keeps each one's text.
    const slot = second & 15;
    let prefix = secondText[slot];
    if (secondOf[slot] !== second) {
      secondOf[slot] = second;
      secondText[slot] = prefix = Buffer.from('"' + new Date(second * 1000).toISOString().slice(0, 20));
    }
    this.bytes(prefix);
    this.room(5);
    const milli = t - second * 1000;
    const buf = this.buf;
    buf[this.pos++] = 48 + Math.floor(milli / 100);
    buf[this.pos++] = 48 + (Math.floor(milli / 10) % 10);
    buf[this.pos++] = 48 + (milli % 10);
    buf[this.pos++] = 0x5a; // Z
    buf[this.pos++] = 0x22; // "
  }

  /** A whole number below 2^32: by putUint below 2^31, as text above. */
  private uint(v: number): void {
    if (v >= 0x8000_0000) {
      this.text(String(v));
      return;
    }
    this.room(10);
    this.pos = putUint(this.buf, this.pos, v | 0);
  }

  /** `v` rounded to thousandths, as JSON.stringify writes Math.round(v * 1000) / 1000 (a
   * duration in ms): digits stored, not a number turned into text and encoded. Below
   * 2^53 / 1000, that double's shortest text is k/1000's own digits, trailing zeros off. */
  thousandths(v: number): void {
    const k = Math.round(v * 1000);
    if (!(k >= 0 && k < 0x8000_0000)) {
      this.text(scalarText(k / 1000));
      return;
    }
    const whole = Math.floor(k / 1000);
    const frac = k - whole * 1000;
    this.uint(whole);
    if (frac === 0) return;
    this.room(4);
    const buf = this.buf;
    buf[this.pos++] = 0x2e; // .
    buf[this.pos++] = 48 + Math.floor(frac / 100);
    const tens = Math.floor(frac / 10) % 10;
    const ones = frac % 10;
    if (tens !== 0 || ones !== 0) buf[this.pos++] = 48 + tens;
    if (ones !== 0) buf[this.pos++] = 48 + ones;
  }

  /** The newline that ends a document: a byte store rather than a call to encode text. */
  newline(): void {
    this.room(1);
    this.buf[this.pos++] = 0x0a;
  }

  /** Text already in JSON form (a quoted string, a large or fractional number). */
  text(s: string): void {
    this.room(s.length * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** The JSON written so far: a view of the buffer, not a copy. */
  result(): Buffer {
    lastSize[this.pretty ? 1 : 0] = this.pos;
    return this.buf.subarray(0, this.pos);
  }
}

/** Bytes written over and over (keys, separators, a histogram's bounds), with the
 * DataView that JsonWriter.span() copies them through. */
export interface Encoded {
  readonly bytes: Uint8Array;
  readonly view: DataView;
}
export function encoded(text: string | Uint8Array): Encoded {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  return { bytes, view: new DataView(bytes.buffer, bytes.byteOffset, bytes.length) };
}

/** Writes `x` (0 <= x < 2^31) in decimal at `p` of `b`, which has room for ten digits;
 * returns the position after it. Integer arithmetic below 2^31, which V8 turns into
 * multiplications. */
export function putUint(b: Uint8Array, p: number, x: number): number {
  if (x < 10) {
    b[p] = 48 + x;
    return p + 1;
  }
  const n = x < 100 ? 2 : x < 1000 ? 3 : x < 10000 ? 4 : x < 100000 ? 5 : x < 1000000 ? 6 : x < 10000000 ? 7 : x < 100000000 ? 8 : x < 1000000000 ? 9 : 10;
  let at = p + n;
  while (x >= 10) {
    const q = (x / 10) | 0;
    b[--at] = 48 + x - q * 10;
    x = q;
  }
  b[--at] = 48 + x;
  return p + n;
}

const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');

const secondOf = new Float64Array(16).fill(NaN);
const secondText: Uint8Array[] = new Array<Uint8Array>(16).fill(new Uint8Array(0));

// Strings a tree repeats (states, server names, zone names) encoded once; a bounded
// cache. Long strings (the configuration files of config_files) have one of their own,
// bounded by size: they stay the same until a reload, and escaping them is most of what
// rendering /status/server costs.
const strings = new Map<string, Uint8Array>();
const longStrings = new Map<string, Uint8Array>();
let longBytes = 0;
const LONG_BYTES_MAX = 8 * 1024 * 1024;
function quoted(s: string): Uint8Array {
  const short = s.length <= 256;
  let b = (short ? strings : longStrings).get(s);
  if (!b) {
    b = Buffer.from(JSON.stringify(s));
    if (short) {
      if (strings.size < 100_000) strings.set(s, b);
    } else {
      if (longBytes + b.length > LONG_BYTES_MAX) {
        longStrings.clear();
        longBytes = 0;
      }
      longStrings.set(s, b);
      longBytes += b.length;
    }
  }
  return b;
}

export function scalarText(value: number | string | boolean): string {
  return typeof value === 'string' ? JSON.stringify(value) : typeof value === 'number' && !Number.isFinite(value) ? 'null' : String(value);
}

// ",\n\t\t\"name\": " and its variants, encoded once per name, depth and position.
const prefixes = new Map<string, Uint8Array[]>();
export function prefix(name: string, depth: number, first: boolean, pretty: boolean): Uint8Array {
  let forName = prefixes.get(name);
  if (!forName) prefixes.set(name, (forName = []));
  const slot = depth * 4 + (first ? 2 : 0) + (pretty ? 1 : 0);
  let p = forName[slot];
  if (p === undefined) {
    p = Buffer.from((first ? '' : ',') + (pretty ? '\n' + '\t'.repeat(depth) : '') + JSON.stringify(name) + (pretty ? ': ' : ':'));
    forName[slot] = p;
  }
  return p;
}

const closings: Uint8Array[] = [];
export function closing(depth: number): Uint8Array {
  return (closings[depth] ??= Buffer.from('\n' + '\t'.repeat(depth) + '}'));
}
