// The default access log the command line sets: a module of its own, with no imports,
// because the command line reads it before the first worker is forked.

/** nginx's default access log, `<prefix>/logs/access.log combined`, once the command line
 * knows the prefix (setDefaultAccessLog); through the environment, so that the workers,
 * which node:cluster forks with it, read their configuration with the same default. */
export const DEFAULT_ACCESS_LOG_ENV = 'ZONAL_DEFAULT_ACCESS_LOG';

/** The command line's `-p`: `path` (absolute) is the access log of every place that names
 * none; undefined: none (zonal's default without a prefix). */
export function setDefaultAccessLog(path: string | undefined): void {
  if (path === undefined) delete process.env[DEFAULT_ACCESS_LOG_ENV];
  else process.env[DEFAULT_ACCESS_LOG_ENV] = path;
}
