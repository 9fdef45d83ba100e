// Byte ranges, as nginx's range filter (ngx_http_range_filter_module) serves them: a 200
// answer of known length that allows ranges (a static file, an answer from the proxy
// cache) is answered to a `Range: bytes=...` request with 206 and the part asked for, or
// with multipart/byteranges for several, or 416 when none of them is in the body; an
// answer that is not ranged says `Accept-Ranges: bytes`. `If-Range` ranges it only when
// it names the answer's ETag or its Last-Modified exactly.
import type { IncomingMessage } from 'node:http';
import { header } from './variables.js';
import { httpSeconds, type Validators } from './not-modified.js';

/** [start, end) of the body. */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

export type RangeDecision =
  /** The whole answer, with Accept-Ranges. */
  | { readonly kind: 'whole' }
  | { readonly kind: 'unsatisfiable' }
  | { readonly kind: 'partial'; readonly ranges: readonly ByteRange[] };

const WHOLE: RangeDecision = { kind: 'whole' };
const UNSATISFIABLE: RangeDecision = { kind: 'unsatisfiable' };

/** nginx's decision for a 200 answer of `length` bytes that allows ranges. */
export function rangeOf(req: IncomingMessage, length: number, validators: Validators): RangeDecision {
  const range = header(req, 'range');
  if (range === undefined || range.length < 7 || range.slice(0, 6).toLowerCase() !== 'bytes=') return WHOLE;
  const ifRange = header(req, 'if-range');
  if (ifRange !== undefined) {
    if (ifRange.length >= 2 && ifRange.endsWith('"')) {
      if (validators.etag !== ifRange) return WHOLE;
    } else {
      const modified = validators.lastModified === undefined ? undefined : httpSeconds(validators.lastModified);
      if (modified === undefined || httpSeconds(ifRange) !== modified) return WHOLE;
    }
  }
  return parse(range.slice(6), length);
}

/** ngx_http_range_parse: ranges past the end are left out, one reaching past it is cut at
 * it; none left is 416, and ranges adding up to more than the body (overlapping ones)
 * are answered with the whole body, as is a `0-` range of an empty one. */
function parse(spec: string, length: number): RangeDecision {
  const ranges: ByteRange[] = [];
  let size = 0;
  let p = 0;
  const skipSpaces = () => {
    while (spec[p] === ' ') p++;
  };
  const digits = (): number | undefined => {
    const from = p;
    while (p < spec.length && spec[p] >= '0' && spec[p] <= '9') p++;
    if (p === from) return undefined;
    const n = Number(spec.slice(from, p));
    return Number.isSafeInteger(n) ? n : undefined;
  };
  for (;;) {
    let start = 0;
    let end: number;
    skipSpaces();
    if (spec[p] !== '-') {
      const s = digits();
      if (s === undefined) return UNSATISFIABLE;
      start = s;
      skipSpaces();
      if (spec[p++] !== '-') return UNSATISFIABLE;
      skipSpaces();
      if (spec[p] === ',' || p >= spec.length) end = length;
      else {
        const e = digits();
        if (e === undefined) return UNSATISFIABLE;
        skipSpaces();
        if (spec[p] !== ',' && p < spec.length) return UNSATISFIABLE;
        end = e >= length ? length : e + 1;
      }
    } else {
      p++;
      const suffix = digits();
      if (suffix === undefined) return UNSATISFIABLE;
      skipSpaces();
      if (spec[p] !== ',' && p < spec.length) return UNSATISFIABLE;
      start = suffix < length ? length - suffix : 0;
      end = length;
    }
    if (start < end) {
      ranges.push({ start, end });
      size += end - start;
    } else if (start === 0) return WHOLE;
    if (spec[p++] !== ',') break;
  }
  if (ranges.length === 0) return UNSATISFIABLE;
  if (size > length) return WHOLE;
  return { kind: 'partial', ranges };
}

/** A 206 answer: the headers it sets in place of the whole answer's Content-Length (and,
 * multipart, Content-Type), and its body as the bytes it adds and the slices of the whole
 * between them. */
export interface PartialAnswer {
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly pieces: ReadonlyArray<Buffer | ByteRange>;
}

/** nginx's boundaries: a counter, 20 digits (NGX_ATOMIC_T_LEN). */
let boundaries = Math.floor(Math.random() * 1e9);

export function partialAnswer(ranges: readonly ByteRange[], length: number, contentType: string | undefined): PartialAnswer {
  if (ranges.length === 1) {
    const r = ranges[0];
    return {
      headers: [
        ['Content-Length', String(r.end - r.start)],
        ['Content-Range', `bytes ${r.start}-${r.end - 1}/${length}`],
      ],
      pieces: [r],
    };
  }
  const boundary = String(++boundaries).padStart(20, '0');
  const partHead = `\r\n--${boundary}\r\n${contentType ? `Content-Type: ${contentType}\r\n` : ''}Content-Range: bytes `;
  const pieces: Array<Buffer | ByteRange> = [];
  let total = 0;
  for (const r of ranges) {
    const head = Buffer.from(`${partHead}${r.start}-${r.end - 1}/${length}\r\n\r\n`, 'latin1');
    pieces.push(head, r);
    total += head.length + r.end - r.start;
  }
  const last = Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1');
  pieces.push(last);
  total += last.length;
  return {
    headers: [
      ['Content-Length', String(total)],
      ['Content-Type', `multipart/byteranges; boundary=${boundary}`],
    ],
    pieces,
  };
}

/** 416's Content-Range. */
export const unsatisfiedRange = (length: number): string => `bytes */${length}`;

/** The answer's header list (name, value, ...) with `set`'s in place of their names'. */
export function withHeaders(headers: readonly string[], set: ReadonlyArray<readonly [string, string]>, drop: readonly string[] = []): string[] {
  const replaced = new Set([...set.map(([n]) => n.toLowerCase()), ...drop]);
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) if (!replaced.has(headers[i].toLowerCase())) out.push(headers[i], headers[i + 1]);
  for (const [n, v] of set) out.push(n, v);
  return out;
}
