// Whether a peer's response may be cached and until when, as nginx decides it: the
// peer's X-Accel-Expires first, then Cache-Control, then Expires; Set-Cookie, `Vary: *`,
// `Cache-Control: no-cache|no-store|private` and a time already past keep it out;
// otherwise proxy_cache_valid for its status.

/** proxy_cache_valid: codes (or any) and a time. */
export interface ValidRule {
  /** Empty: any status. */
  readonly codes: readonly number[];
  readonly ms: number;
}

/** proxy_cache_valid's time for `status`: a rule naming it, else an `any` rule; 0: none. */
export function validFor(rules: readonly ValidRule[], status: number): number {
  for (const r of rules) if (r.codes.includes(status)) return r.ms;
  for (const r of rules) if (r.codes.length === 0) return r.ms;
  return 0;
}

function header(headers: readonly string[], lower: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) if (headers[i].length === lower.length && headers[i].toLowerCase() === lower) return headers[i + 1];
  return undefined;
}

export function headerOf(headers: readonly string[], lower: string): string | undefined {
  return header(headers, lower);
}

const NONE: ReadonlySet<string> = new Set();

/** ms since the epoch until which the response is valid; 0 when it must not be cached.
 * `ignored`: proxy_ignore_headers, whose headers say nothing here. */
export function validUntil(status: number, headers: readonly string[], now: number, rules: readonly ValidRule[], ignored = NONE): number {
  const header = (headers: readonly string[], lower: string) => (ignored.has(lower) ? undefined : headerOf(headers, lower));
  if (header(headers, 'set-cookie') !== undefined) return 0;
  const vary = header(headers, 'vary');
  if (vary !== undefined && vary.split(',').some((v) => v.trim() === '*')) return 0;
  const accel = header(headers, 'x-accel-expires');
  if (accel !== undefined) {
    const v = accel.trim();
    if (v.startsWith('@')) {
      const at = Number(v.slice(1));
      return Number.isInteger(at) && at * 1000 > now ? at * 1000 : 0;
    }
    if (/^\d+$/.test(v)) return Number(v) === 0 ? 0 : now + Number(v) * 1000;
  }
  const cc = header(headers, 'cache-control');
  if (cc !== undefined) {
    const directives = cc.toLowerCase().split(',').map((d) => d.trim());
    if (directives.some((d) => d === 'no-cache' || d === 'no-store' || d === 'private')) return 0;
    for (const name of ['s-maxage=', 'max-age=']) {
      const d = directives.find((x) => x.startsWith(name));
      if (d === undefined) continue;
      const n = Number(d.slice(name.length));
      if (!Number.isInteger(n) || n < 0) continue;
      return n === 0 ? 0 : now + n * 1000;
    }
  }
  const expires = header(headers, 'expires');
  if (expires !== undefined) {
    const at = Date.parse(expires);
    // An unparsable Expires is an expired one (RFC 9111 5.3), as nginx takes it.
    return Number.isFinite(at) && at > now ? at : 0;
  }
  const ms = validFor(rules, status);
  return ms > 0 ? now + ms : 0;
}

/** The request headers a Vary names, lowercase, with the request's values. */
export function varyOf(headers: readonly string[], request: Readonly<Record<string, string | string[] | undefined>>, ignored = NONE): Array<[string, string]> | undefined {
  const vary = ignored.has('vary') ? undefined : header(headers, 'vary');
  if (vary === undefined) return undefined;
  return vary
    .split(',')
    .map((v) => v.trim().toLowerCase())
    .filter((v) => v !== '')
    .map((name) => {
      const v = request[name];
      return [name, Array.isArray(v) ? v.join(', ') : (v ?? '')];
    });
}

/** Whether the request asks for the variant a file holds. */
export function sameVariant(vary: ReadonlyArray<readonly [string, string]> | undefined, request: Readonly<Record<string, string | string[] | undefined>>): boolean {
  if (!vary) return true;
  return vary.every(([name, value]) => {
    const v = request[name];
    return (Array.isArray(v) ? v.join(', ') : (v ?? '')) === value;
  });
}
