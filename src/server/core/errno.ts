// A system error as nginx writes it after a failed call: `(2: No such file or directory)`,
// the number and the C library's text (strerror), from the code node gives (`ENOENT`).
import os from 'node:os';

/** glibc's strerror() of the errors a file's lookup meets. */
const STRERROR: Readonly<Record<string, string>> = {
  ENOENT: 'No such file or directory',
  ENOTDIR: 'Not a directory',
  EACCES: 'Permission denied',
  EPERM: 'Operation not permitted',
  ENAMETOOLONG: 'File name too long',
  ELOOP: 'Too many levels of symbolic links',
  EIO: 'Input/output error',
};

/** `2: No such file or directory` for `ENOENT`. */
export function systemError(code: string): string {
  const errno = (os.constants.errno as Record<string, number | undefined>)[code];
  const text = STRERROR[code] ?? code;
  return errno === undefined ? text : `${errno}: ${text}`;
}
