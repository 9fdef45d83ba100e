// A message of the error log about a request, in nginx's words: the connection's number
// first, the client, the request line and the Host after the message.
import type { IncomingMessage } from 'node:http';
import { connectionNumber } from '../core/connection.js';
import { clientAddress, requestLine } from '../http/variables.js';
import type { ErrorLog, Level } from './error-log.js';

export function logForRequest(errorLog: ErrorLog, level: Level, message: string, req: IncomingMessage): void {
  if (!errorLog.enabled(level)) return;
  errorLog.log(level, `${message}, client: ${clientAddress(req)}, request: "${requestLine(req)}", host: "${req.headers.host ?? ''}"`, connectionNumber(req.socket));
}
