// JSON straight from the tree into bytes, without building objects or strings first:
// rendering ten thousand peers makes no garbage but the output buffer. Keys come as
// pre-encoded prefixes ("\n\t\t\"name\": "), integers are written digit by digit, and
// the layout is that of JSON.stringify(value, null, '\t') when pretty, of
// JSON.stringify(value) when not.
const OPEN = 0x7b; // {
const CLOSE = 0x7d; // }
// A buffer a transport gave back (recycle()), for the next large response.
let spare;
const KEEP_FROM = 64 * 1024;
// Responses are about as large as the previous one of the same kind: start there rather
// than doubling and copying up to several megabytes each time.
const lastSize = [4096, 4096];
export class JsonWriter {
    constructor(pretty) {
        this.pretty = pretty;
        this.pos = 0;
        const size = lastSize[pretty ? 1 : 0] + 1024;
        if (spare && spare.length >= size) {
            this.buf = spare;
            spare = undefined;
        }
        else
            this.buf = Buffer.allocUnsafe(size);
        this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length);
    }
    /** What gives the buffer back for the next writer once its result is no longer used
     * (ApiResponse.release); only large buffers are kept, the largest one. */
    recycle() {
        const buf = this.buf;
        let done = false;
        return () => {
            if (done)
                return;
            done = true;
            if (buf.length >= KEEP_FROM && !(spare && spare.length >= buf.length))
                spare = buf;
        };
    }
    /** Makes room for n more bytes (the buffer may be replaced). */
    room(n) {
        if (this.pos + n <= this.buf.length)
            return;
        const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
        this.buf.copy(bigger, 0, 0, this.pos);
        this.buf = bigger;
        this.view = new DataView(bigger.buffer, bigger.byteOffset, bigger.length);
    }
    open() {
        this.room(1);
        this.buf[this.pos++] = OPEN;
    }
    /** The key of a member at `depth` (its object's depth + 1), comma first unless first. */
    key(name, depth, first) {
        this.bytes(prefix(name, depth, first, this.pretty));
    }
    close(depth, empty) {
        if (empty || !this.pretty) {
            this.room(1);
            this.buf[this.pos++] = CLOSE;
        }
        else
            this.bytes(closing(depth));
    }
    /** Pre-encoded bytes, from index `from` on: short ones are copied by hand, which beats
     * a call for them. */
    bytes(b, from = 0) {
        const n = b.length - from;
        this.room(n);
        const buf = this.buf;
        let p = this.pos;
        if (n < 48)
            for (let i = from; i < b.length; i++)
                buf[p++] = b[i];
        else {
            buf.set(from ? b.subarray(from) : b, p);
            p += n;
        }
        this.pos = p;
    }
    scalar(value) {
        if (typeof value === 'number' && value >= 0 && value < 4294967296 && value === Math.floor(value))
            this.uint(value);
        else if (typeof value === 'string')
            this.bytes(quoted(value));
        else if (typeof value === 'boolean')
            this.bytes(value ? TRUE : FALSE);
        else
            this.text(scalarText(value));
    }
    /** A time as ISO 8601 in UTC with milliseconds: each second's text is made once. */
    isoTime(ms) {
        const t = Math.round(ms);
        const second = Math.floor(t / 1000);
        if (second !== lastSecond) {
            lastSecond = second;
            lastPrefix = Buffer.from('"' + new Date(second * 1000).toISOString().slice(0, 20));
        }
        this.bytes(lastPrefix);
        this.room(5);
        const milli = t - second * 1000;
        const buf = this.buf;
        buf[this.pos++] = 48 + Math.floor(milli / 100);
        buf[this.pos++] = 48 + (Math.floor(milli / 10) % 10);
        buf[this.pos++] = 48 + (milli % 10);
        buf[this.pos++] = 0x5a; // Z
        buf[this.pos++] = 0x22; // "
    }
    /** A whole number below 2^32, digit by digit (int32 arithmetic below 2^31, which V8
     * turns into multiplications). */
    uint(v) {
        this.room(10);
        const buf = this.buf;
        if (v < 10) {
            buf[this.pos++] = 48 + v;
            return;
        }
        if (v >= 0x8000_0000) {
            this.text(String(v));
            return;
        }
        let x = v | 0;
        const digits = x < 100 ? 2 : x < 1000 ? 3 : x < 10000 ? 4 : x < 100000 ? 5 : x < 1000000 ? 6 : x < 10000000 ? 7 : x < 100000000 ? 8 : x < 1000000000 ? 9 : 10;
        let p = this.pos + digits;
        this.pos = p;
        while (x >= 10) {
            const q = (x / 10) | 0;
            buf[--p] = 48 + x - q * 10;
            x = q;
        }
        buf[--p] = 48 + x;
    }
    /** Text already in JSON form (a quoted string, a large or fractional number). */
    text(s) {
        this.room(s.length * 3);
        this.pos += this.buf.write(s, this.pos, 'utf8');
    }
    /** The JSON written so far: a view of the buffer, not a copy. */
    result() {
        lastSize[this.pretty ? 1 : 0] = this.pos;
        return this.buf.subarray(0, this.pos);
    }
}
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
let lastSecond = NaN;
let lastPrefix = new Uint8Array(0);
// Strings a tree repeats (states, server names, zone names) encoded once; a bounded
// cache, since a string can also be a one-off (a configuration file).
const strings = new Map();
function quoted(s) {
    let b = strings.get(s);
    if (!b) {
        b = Buffer.from(JSON.stringify(s));
        if (s.length <= 256 && strings.size < 100_000)
            strings.set(s, b);
    }
    return b;
}
export function scalarText(value) {
    return typeof value === 'string' ? JSON.stringify(value) : typeof value === 'number' && !Number.isFinite(value) ? 'null' : String(value);
}
// ",\n\t\t\"name\": " and its variants, encoded once per name, depth and position.
const prefixes = new Map();
export function prefix(name, depth, first, pretty) {
    let forName = prefixes.get(name);
    if (!forName)
        prefixes.set(name, (forName = []));
    const slot = depth * 4 + (first ? 2 : 0) + (pretty ? 1 : 0);
    let p = forName[slot];
    if (p === undefined) {
        p = Buffer.from((first ? '' : ',') + (pretty ? '\n' + '\t'.repeat(depth) : '') + JSON.stringify(name) + (pretty ? ': ' : ':'));
        forName[slot] = p;
    }
    return p;
}
const closings = [];
export function closing(depth) {
    return (closings[depth] ??= Buffer.from('\n' + '\t'.repeat(depth) + '}'));
}
//# sourceMappingURL=json.js.map