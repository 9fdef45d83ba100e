// The variables a log line may name: the http table (config/variables.ts), which the
// modules that own the variables declare, rendered once a request is over. A variable
// nginx leaves "not found" (a header not sent, no query, no upstream) is undefined, and
// the log writes `-` for it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Variable } from '../../api/variables.js';
import { httpVariables } from '../config/variables.js';
import type { HttpContext } from '../http/variables.js';
import { isAttemptVariable } from '../upstream/variables.js';

export type { UpstreamAttempt } from './upstream-trace.js';

/** What a request leaves for its log line: all the context knows, once it is over. */
export interface LogRecord extends HttpContext {
  readonly res: ServerResponse;
  readonly req: IncomingMessage;
  readonly serverName: string;
  readonly start: number;
  readonly received: number;
  readonly written: number;
  readonly connection: number;
  readonly connectionRequests: number;
  readonly pipelined: boolean;
}

export type LogVariable = Variable<LogRecord>;

/** A log variable by name; undefined for one zonal does not produce. */
export const logVariable = (name: string): LogVariable | undefined => httpVariables.get(name);

/** Whether `-t` lets a format (or an `if=` condition) name it. */
export const knownLogVariable = httpVariables.known;

/** Whether a log that names it needs the proxy to record its attempts. */
export const isUpstreamVariable = isAttemptVariable;
