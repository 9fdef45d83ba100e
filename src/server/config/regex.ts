// nginx hands regexes to PCRE; zonal to V8. The PCRE spellings configurations use most
// are rewritten to their JS equivalents so that a regex copied from an nginx
// configuration means the same here.

/** `(?P<name>...)` -> `(?<name>...)`, `(?P=name)` -> `\k<name>`, a leading `(?i)` -> the
 * `i` flag, `\Q...\E` -> the text escaped, `\p{...}` -> the `u` flag. Throws a
 * SyntaxError when the result does not compile. */
export function compileRegex(source: string, caseless: boolean): RegExp {
  let flags = caseless ? 'i' : '';
  let body = source;
  if (body.startsWith('(?i)')) {
    body = body.slice(4);
    flags = 'i';
  }
  body = body.replace(/\(\?P<(?=[A-Za-z_])/g, '(?<').replace(/\(\?P=([A-Za-z_]\w*)\)/g, '\\k<$1>');
  // `\Q...\E`: the text between as it is.
  body = body.replace(/\\Q([\s\S]*?)(?:\\E|$)/g, (_, text: string) => text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&'));
  // A Unicode property (`\p{N}`) is known to V8 only in its Unicode mode.
  if (/\\[pP]\{/.test(body)) flags += 'u';
  return new RegExp(body, flags);
}
