// The server's variables: the one evaluator (src/api/variables.ts) over node:http's
// request, for `proxy_set_header` values, `hash` keys and limit keys.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import * as shared from '../../api/variables.js';

export { binaryAddress, clientAddress, hostOf } from '../../api/variables.js';

/** What a variable may read: the request, its URI, and what the place it is in knows. */
export interface VariableContext extends shared.VariableContext {
  readonly req: IncomingMessage;
}

/** Compiles `text`; the configuration reader has already refused unknown variables. */
export const compileValue: (text: string) => (c: VariableContext) => string = shared.compileValue;

const BINARY_REMOTE_ADDR = Symbol('zonal.binary_remote_addr');
const REMOTE_ADDR = Symbol('zonal.remote_addr');
type KeyedSocket = Socket & { [BINARY_REMOTE_ADDR]?: Buffer; [REMOTE_ADDR]?: Buffer };

/** `$binary_remote_addr` of the request's connection, made on its first request and kept
 * on the socket: a connection's peer does not change, and the bytes (4 or 16) would
 * otherwise be parsed out of the address text and allocated for every request of a
 * keep-alive connection. The native calls only read a key's bytes, so one Buffer serves
 * them all. */
export function binaryRemoteAddress(req: IncomingMessage): Buffer {
  const socket = req.socket as KeyedSocket;
  return (socket[BINARY_REMOTE_ADDR] ??= shared.binaryAddress(shared.clientAddress(req)));
}

/** `$remote_addr` as a limit key: its UTF-8 bytes, the key its text would be, kept on the
 * socket as `$binary_remote_addr` is. */
function remoteAddressKey(req: IncomingMessage): Buffer {
  const socket = req.socket as KeyedSocket;
  return (socket[REMOTE_ADDR] ??= Buffer.from(shared.clientAddress(req)));
}

/** A key that is the connection's alone (`$binary_remote_addr` or `$remote_addr` written
 * alone, nginx's usual keys): a function of the request, with nothing else to evaluate;
 * undefined for every other key. */
export function connectionKey(text: string): ((req: IncomingMessage) => Buffer) | undefined {
  const name = /^\$(?:\{(\w+)\}|(\w+))$/.exec(text);
  const variable = name?.[1] ?? name?.[2];
  return variable === 'binary_remote_addr' ? binaryRemoteAddress : variable === 'remote_addr' ? remoteAddressKey : undefined;
}

/** A limit key: text, or bytes when it holds `$binary_remote_addr`. */
export function compileKey(text: string): (c: VariableContext) => string | Buffer {
  const own = connectionKey(text);
  return own ? (c) => own(c.req) : shared.compileKey(text);
}
