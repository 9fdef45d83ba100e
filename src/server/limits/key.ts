// A limit key: a value of the http variables (config/variables.ts) kept as text, or as
// bytes when it holds `$binary_remote_addr` (its 4 or 16 bytes as they are, the text
// around it in UTF-8); the connection's own keys are kept on its socket.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { compileValue } from '../config/variables.js';
import { binaryRemoteAddress, clientAddress, realAddressOf, type HttpContext } from '../http/variables.js';

const REMOTE_ADDR = Symbol('zonal.remote_addr');
type KeyedSocket = Socket & { [REMOTE_ADDR]?: Buffer };

/** `$remote_addr` as a limit key: its UTF-8 bytes, the key its text would be, kept on the
 * socket as `$binary_remote_addr` is. */
function remoteAddressKey(req: IncomingMessage): Buffer {
  const real = realAddressOf(req);
  if (real) return Buffer.from(real.address);
  const socket = req.socket as KeyedSocket;
  return (socket[REMOTE_ADDR] ??= Buffer.from(clientAddress(req)));
}

/** A key that is the connection's alone (`$binary_remote_addr` or `$remote_addr` written
 * alone, nginx's usual keys): a function of the request, with nothing else to evaluate;
 * undefined for every other key. */
export function connectionKey(text: string): ((req: IncomingMessage) => Buffer) | undefined {
  const name = /^\$(?:\{(\w+)\}|(\w+))$/.exec(text);
  const variable = name?.[1] ?? name?.[2];
  return variable === 'binary_remote_addr' ? binaryRemoteAddress : variable === 'remote_addr' ? remoteAddressKey : undefined;
}

const BINARY = /\$\{binary_remote_addr\}|\$binary_remote_addr(?![A-Za-z0-9_])/;

/** A limit key: text, or bytes when it holds `$binary_remote_addr`. */
export function compileKey(text: string): (c: HttpContext) => string | Buffer {
  const own = connectionKey(text);
  if (own) return (c) => own(c.req);
  if (!BINARY.test(text)) return compileValue(text);
  const around = text.split(new RegExp(BINARY.source, 'g')).map(compileValue);
  return (c) => {
    const address = binaryRemoteAddress(c.req);
    const chunks: Buffer[] = [];
    around.forEach((value, i) => {
      if (i > 0) chunks.push(address);
      chunks.push(Buffer.from(value(c)));
    });
    return Buffer.concat(chunks);
  };
}
