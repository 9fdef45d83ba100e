// Reading the status tree the way clients do: through the real API handler.
import { bodyText, createApi } from '../../src/api/index.js';
import type { Status } from '../../src/metrics/status.js';

export function apiOf(status: Status) {
  const api = createApi({ status });
  const call = (path: string, query = '') => {
    const r = api({ method: 'GET', path, query, address: '127.0.0.1' });
    if (!r) throw new Error(`the API does not answer ${path}`);
    return r;
  };
  return {
    call,
    /** The status code and the parsed JSON body. */
    get(path: string): { status: number; body: any } {
      const r = call(path);
      return { status: r.status, body: JSON.parse(bodyText(r)) };
    },
    /** The body of `format=prometheus`. */
    text(path: string): string {
      const r = call(path, 'format=prometheus');
      if (r.status !== 200) throw new Error(`${path}?format=prometheus answered ${r.status}: ${bodyText(r)}`);
      return bodyText(r);
    },
  };
}

/** Every leaf of a JSON value as "a/b/c: type", in document order: compared with
 * t.same, it checks member names, their order, and types at once. */
export function shape(value: unknown, prefix = ''): string[] {
  if (value !== null && typeof value === 'object' && !Array.isArray(value))
    return Object.entries(value).flatMap(([k, v]) => shape(v, prefix ? `${prefix}/${k}` : k));
  return [`${prefix}: ${Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value}`];
}

/** The lines of a text body that are samples (not HELP/TYPE comments). */
export function samples(text: string): string[] {
  return text.split('\n').filter((l) => l && !l.startsWith('#'));
}
