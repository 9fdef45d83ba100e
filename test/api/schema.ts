// A small schema checker for the conformance table: exact member sets and types.

/** 'time' is ISO 8601 in UTC with milliseconds; 'codes' is a responses object;
 * 'numbers' an array of numbers; 'estimate' a number, or null (a percentile of an empty
 * histogram). */
export type Schema = 'number' | 'string' | 'boolean' | 'time' | 'codes' | 'numbers' | 'estimate' | { readonly [key: string]: Schema };

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Every way `value` departs from `schema`, as "path: problem" lines. */
export function check(value: unknown, schema: Schema, path = ''): string[] {
  if (schema === 'number') return typeof value === 'number' && Number.isFinite(value) ? [] : [`${path}: ${JSON.stringify(value)} is not a number`];
  if (schema === 'string') return typeof value === 'string' ? [] : [`${path}: ${JSON.stringify(value)} is not a string`];
  if (schema === 'boolean') return typeof value === 'boolean' ? [] : [`${path}: ${JSON.stringify(value)} is not a boolean`];
  if (schema === 'numbers')
    return Array.isArray(value) && value.every((v) => typeof v === 'number' && Number.isFinite(v)) ? [] : [`${path}: ${JSON.stringify(value)} is not an array of numbers`];
  if (schema === 'estimate') return value === null || (typeof value === 'number' && Number.isFinite(value)) ? [] : [`${path}: ${JSON.stringify(value)} is neither a number nor null`];
  if (schema === 'time') return typeof value === 'string' && ISO.test(value) ? [] : [`${path}: ${JSON.stringify(value)} is not an ISO 8601 time with ms`];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: ${JSON.stringify(value)} is not an object`];
  const obj = value as Record<string, unknown>;
  if (schema === 'codes') {
    return Object.entries(obj).flatMap(([k, v]) =>
      (/^[1-5]\d\d$/.test(k) || k === 'xxx') && typeof v === 'number' && v > 0 ? [] : [`${path}/${k}: not a non-zero response count`],
    );
  }
  const problems: string[] = [];
  for (const key of Object.keys(obj)) if (!(key in schema)) problems.push(`${path}/${key}: not in the spec`);
  for (const [key, sub] of Object.entries(schema)) {
    if (!(key in obj)) problems.push(`${path}/${key}: missing`);
    else problems.push(...check(obj[key], sub, `${path}/${key}`));
  }
  return problems;
}
