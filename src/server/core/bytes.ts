// Values as bytes. A value zonal handles is one of two kinds of string: bytes as they came
// (node:http gives a request's head and an upstream's one character per byte, latin1), or
// text (a decoded URI, the configuration's strings, file names). Where a value leaves as
// bytes (a header line, a log line) both become one string of one character per byte:
// characters above 0xff can only be text, and are sent as their UTF-8 bytes; the others
// are taken as the bytes they are. Text of characters 0x80–0xff (`é` decoded from a URI)
// is sent as one byte each, where nginx, which never decodes to text, sends its UTF-8.

/** A character no byte string holds. */
export const WIDE = /[^\x00-\xff]/;

/** `value` as one character per byte: unchanged when it already is. */
export const wireBytes = (value: string): string => (WIDE.test(value) ? Buffer.from(value, 'utf8').toString('latin1') : value);
