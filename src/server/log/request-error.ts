// A message of the error log about a request, in nginx's words: the connection's number
// first, the client, the server (when the response is known: its virtual server), the
// request line and the Host after the message.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connectionNumber } from '../core/connection.js';
import { clientAddress, requestLine, serverNameOf } from '../http/variables.js';
import type { ErrorLog, Level } from './error-log.js';

export function logForRequest(errorLog: ErrorLog, level: Level, message: string, req: IncomingMessage, res?: ServerResponse): void {
  if (!errorLog.enabled(level)) return;
  const name = res && serverNameOf(res);
  const server = name === undefined ? '' : `, server: ${name}`;
  errorLog.log(level, `${message}, client: ${clientAddress(req)}${server}, request: "${requestLine(req)}", host: "${req.headers.host ?? ''}"`, connectionNumber(req.socket));
}
