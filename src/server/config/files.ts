// The files directives name (resolved by the Checker's path(): against the prefix or the
// main file's directory, as nginx resolves each), checked at `zonal -t` when the
// configuration comes from the disk.
import fs from 'node:fs';
import type { Checker } from './levels.js';
import type { Directive } from './syntax.js';

/** A file's text (its bytes, with `null`), or undefined when it cannot be read. */
export function readable(file: string): string | undefined;
export function readable(file: string, encoding: null): Buffer | undefined;
export function readable(file: string, encoding: 'utf8' | null = 'utf8'): string | Buffer | undefined {
  try {
    return fs.readFileSync(file, encoding);
  } catch {
    return undefined;
  }
}

/** Certificates, keys and htpasswd files are read by others at run time; a typo should
 * still fail `zonal -t`, so when reading from the disk they must be readable files now. */
export function checkReadable(file: string, d: Directive, c: Checker): void {
  if (!c.disk) return;
  try {
    if (!fs.statSync(file).isFile()) {
      c.error(d.origin, `"${file}" of the "${d.name}" directive is not a file`);
      return;
    }
    fs.accessSync(file, fs.constants.R_OK);
  } catch (e) {
    c.error(d.origin, `cannot read "${file}" of the "${d.name}" directive (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

/** The file a directive's one argument names (certificates, keys, password and user
 * files: against the main file's directory, as nginx's conf prefix), checked readable. */
export function confFile(d: Directive, c: Checker): string {
  const file = c.path(d.args[0], 'conf');
  checkReadable(file, d, c);
  return file;
}
