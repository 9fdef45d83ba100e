// The server's log: nginx's levels, one line each on standard error, written by the primary.

export type Log = (level: 'notice' | 'warn' | 'error' | 'emerg', message: string) => void;

export const stderrLog: Log = (level, message) => process.stderr.write(`zonal: [${level}] ${message}\n`);
