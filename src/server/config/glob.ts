// The globs of `include`: `*`, `?` and `[...]` in any component of an absolute path, as
// glob(3) matches them for nginx (a wildcard does not match a leading dot; results sorted).
// Node 20 has no fs.glob, and a snapshot of files must match the same way as the disk.
import fs from 'node:fs';
import path from 'node:path';

export const hasGlob = (pattern: string): boolean => /[*?[]/.test(pattern);

/** One path component's pattern as an anchored regex. */
function componentRegex(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const close = pattern.indexOf(']', i + 2);
      if (close < 0) {
        out += '\\[';
        continue;
      }
      let set = pattern.slice(i + 1, close);
      const negated = set[0] === '!' || set[0] === '^';
      if (negated) set = set.slice(1);
      out += `[${negated ? '^' : ''}${set.replace(/[\\\]^]/g, '\\$&')}]`;
      i = close;
    } else out += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}

function matcher(pattern: string): (name: string) => boolean {
  if (!hasGlob(pattern)) return (name) => name === pattern;
  const re = componentRegex(pattern);
  const dotAllowed = pattern.startsWith('.');
  return (name) => (dotAllowed || !name.startsWith('.')) && re.test(name);
}

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The regular files on disk that an absolute pattern matches, sorted. */
export function globDisk(pattern: string): string[] {
  const [, ...parts] = pattern.split('/');
  let found = ['/'];
  parts.forEach((part, index) => {
    const last = index === parts.length - 1;
    const next: string[] = [];
    for (const dir of found) {
      if (!hasGlob(part)) {
        next.push(path.join(dir, part));
        continue;
      }
      let names: string[];
      try {
        names = fs.readdirSync(dir);
      } catch {
        continue;
      }
      const match = matcher(part);
      for (const name of names) if (match(name)) next.push(path.join(dir, name));
    }
    found = next.filter((p) => {
      try {
        const stat = fs.statSync(p);
        return last ? stat.isFile() : stat.isDirectory();
      } catch {
        return false;
      }
    });
  });
  return found.sort(byCodePoint);
}

/** The keys of a snapshot (absolute paths) that an absolute pattern matches, sorted. */
export function globKeys(pattern: string, keys: Iterable<string>): string[] {
  const parts = pattern.split('/').map(matcher);
  const out: string[] = [];
  for (const key of keys) {
    const names = key.split('/');
    if (names.length === parts.length && names.every((name, i) => parts[i](name))) out.push(key);
  }
  return out.sort(byCodePoint);
}
