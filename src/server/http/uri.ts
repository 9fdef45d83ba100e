// The URI locations are matched against, as nginx makes it from the request target: the
// path without the query, percent-decoded once, repeated slashes merged, `.` and `..`
// segments resolved. A target that is not a path, is badly encoded or climbs above `/`
// has none: nginx answers it with 400.

export function normalizeUri(target: string): string | undefined {
  const q = target.indexOf('?');
  const raw = q < 0 ? target : target.slice(0, q);
  if (raw[0] !== '/') return undefined;
  let decoded = raw;
  if (raw.includes('%')) {
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      return undefined;
    }
    if (decoded.includes('\0')) return undefined;
  }
  // The common case costs one scan: nothing to merge or resolve.
  if (!decoded.includes('//') && !decoded.includes('/.')) return decoded;
  const out: string[] = [];
  const segments = decoded.split('/');
  for (let i = 1; i < segments.length; i++) {
    const s = segments[i];
    if (s === '..') {
      if (out.length === 0) return undefined;
      out.pop();
      if (i === segments.length - 1) out.push('');
    } else if (s === '.') {
      if (i === segments.length - 1) out.push('');
    } else if (s !== '' || i === segments.length - 1) out.push(s);
  }
  return '/' + out.join('/');
}
