// `test=` of upstream_probe: a condition on the probe's response. As in Angie, a text
// with variables that fails when it comes out empty or "0"; and, since zonal has no
// `map` to turn a status into such a flag, also a comparison in the words of nginx's
// `if`: `<text> = <text>`, `!=`, `~ <regex>`, `!~` (`test=$upstream_status=200` needs
// quotes around it in the file when written with spaces: "test=$upstream_status = 200").
//
// Variables: $upstream_status, $upstream_http_<header> of the response, and the request
// variables that make sense without a client ($proxy_host, ...) evaluate to nothing else.

/** What a probe's response gives its test. */
export interface ProbeResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

export type ProbeTest = (r: ProbeResponse) => boolean;

type Part = string | ((r: ProbeResponse) => string);
type Template = (r: ProbeResponse) => string;

const VARIABLE = /\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g;

function variable(name: string): ((r: ProbeResponse) => string) | undefined {
  if (name === 'upstream_status') return (r) => String(r.status);
  if (name.startsWith('upstream_http_')) {
    const header = name.slice('upstream_http_'.length).replace(/_/g, '-').toLowerCase();
    return (r) => {
      const v = r.headers[header];
      return Array.isArray(v) ? v.join(', ') : (v ?? '');
    };
  }
  return undefined;
}

function template(text: string): { value: Template } | { error: string } {
  const parts: Part[] = [];
  let last = 0;
  for (const m of text.matchAll(VARIABLE)) {
    if (m.index > last) parts.push(text.slice(last, m.index));
    const name = m[1] ?? m[2];
    const v = variable(name);
    if (!v) return { error: `unknown "${name}" variable: a probe's test knows $upstream_status and $upstream_http_<name>` };
    parts.push(v);
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  if (parts.every((p) => typeof p === 'string')) {
    const fixed = parts.join('');
    return { value: () => fixed };
  }
  return { value: (r) => parts.map((p) => (typeof p === 'string' ? p : p(r))).join('') };
}

export function compileTest(text: string): { value: ProbeTest; error?: undefined } | { error: string } {
  const m = /^(.*?)\s*(!=|!~\*?|~\*?|=)\s*(.*)$/s.exec(text);
  if (!m || m[1] === '') {
    const t = template(text);
    if ('error' in t) return t;
    return { value: (r) => ((s) => s !== '' && s !== '0')(t.value(r)) };
  }
  const [, left, op, right] = m;
  const l = template(left);
  if ('error' in l) return l;
  if (op.includes('~')) {
    let regex: RegExp;
    try {
      regex = new RegExp(right, op.endsWith('*') ? 'i' : '');
    } catch (e) {
      return { error: `invalid regular expression "${right}": ${(e as Error).message}` };
    }
    const negate = op.startsWith('!');
    return { value: (r) => regex.test(l.value(r)) !== negate };
  }
  const rt = template(right);
  if ('error' in rt) return rt;
  const negate = op === '!=';
  return { value: (r) => (l.value(r) === rt.value(r)) !== negate };
}
