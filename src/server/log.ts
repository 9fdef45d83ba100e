// The server's log: nginx's levels, one line each in nginx's format, to the main
// context's `error_log` files (standard error until a configuration names others). The
// log module itself is src/server/log/.
import { mainErrorLog, type Level } from './log/error-log.js';

export type Log = (level: Level, message: string) => void;

/** The process's own messages (the primary's, a worker's): the main context's logs. */
export const serverLog: Log = (level, message) => mainErrorLog().log(level, message);

/** The name the primary and the command line have always used. */
export const stderrLog: Log = serverLog;
