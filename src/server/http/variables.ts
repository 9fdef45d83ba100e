// The server's variables: the one evaluator (src/api/variables.ts) over node:http's
// request, for `proxy_set_header` values, `hash` keys and limit keys.
import type { IncomingMessage } from 'node:http';
import * as shared from '../../api/variables.js';

export { binaryAddress, clientAddress, hostOf } from '../../api/variables.js';

/** What a variable may read: the request, its URI, and what the place it is in knows. */
export interface VariableContext extends shared.VariableContext {
  readonly req: IncomingMessage;
}

/** Compiles `text`; the configuration reader has already refused unknown variables. */
export const compileValue: (text: string) => (c: VariableContext) => string = shared.compileValue;

/** A limit key: text, or bytes when it holds `$binary_remote_addr`. */
export const compileKey: (text: string) => (c: VariableContext) => string | Buffer = shared.compileKey;
