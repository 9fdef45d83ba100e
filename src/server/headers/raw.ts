// Header values as nginx sends them: their bytes, whatever they are. node:http refuses a
// value with a control character (but tab) or a character above 0xff, and throws where the
// head is set; nginx answers `add_header X-URI $uri` for `/%02` with the byte 0x02 in the
// value, and for `/%E2%82%AC` with the three bytes of the euro sign.
import type { ServerResponse } from 'node:http';
import { wireBytes } from '../core/bytes.js';

/** What node:http's checkInvalidHeaderChar refuses among one-byte characters. */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/** Whether node:http refuses a value wireBytes made (node:http writes a head one byte per
 * character). */
const refusedByNode = (value: string): boolean => CONTROL.test(value);

/** `value` for the head of `res` as nginx would send it: what to set, or undefined when it
 * goes apart (appendRawHeader) or not at all: CR, LF or NUL would end the header line. */
export function sendable(res: ServerResponse | undefined, name: string, value: string): string | undefined {
  const v = wireBytes(value);
  if (!refusedByNode(v)) return v;
  if (res && !/[\r\n\0]/.test(v)) appendRawHeader(res, name, v);
  return undefined;
}

const RAW = Symbol('header lines node:http refuses');

/** Node 20's ServerResponse: the head it made, before it is sent. */
type Raw = ServerResponse & { [RAW]?: string[]; _header: string | null };

/** Adds a header whose value node:http refuses: its line goes into the head node:http
 * makes at writeHead (which its implicit head goes through too), before the empty line
 * that ends it. A response without such a header keeps node's writeHead untouched. */
function appendRawHeader(res: ServerResponse, name: string, value: string): void {
  const r = res as Raw;
  const line = `${name}: ${value}\r\n`;
  if (r[RAW]) {
    r[RAW].push(line);
    return;
  }
  r[RAW] = [line];
  const writeHead = res.writeHead;
  res.writeHead = function (this: Raw, ...args: unknown[]) {
    const out = Reflect.apply(writeHead, this, args) as Raw;
    const lines = this[RAW];
    if (lines && this._header?.endsWith('\r\n\r\n')) {
      this._header = this._header.slice(0, -2) + lines.join('') + '\r\n';
      this[RAW] = undefined;
    }
    return out;
  } as ServerResponse['writeHead'];
}
