// `test=` of upstream_probe: a condition on the probe's response. As in Angie, a text
// with variables that fails when it comes out empty or "0"; and, since zonal has no
// `map` to turn a status into such a flag, also a comparison in the words of nginx's
// `if`: `<text> = <text>`, `!=`, `~ <regex>`, `!~` (`test=$upstream_status=200` needs
// quotes around it in the file when written with spaces: "test=$upstream_status = 200").
//
// Variables go through the server's one evaluator (src/api/variables.ts): an HTTP
// probe's response gives $upstream_status and $upstream_http_<name>, a stream probe's
// answer $upstream_probe_response (Angie's); a probe has no client, so the request's
// variables are refused.
import { compileValue, variable, type VariableContext } from '../../api/variables.js';

/** What a probe's response gives its test: an HTTP status and headers, or the bytes a
 * stream peer answered (as latin1 text, one character a byte). */
export interface ProbeResponse {
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string | string[] | undefined>>;
  readonly response?: string;
}

export type ProbeTest = (r: ProbeResponse) => boolean;

type Template = (r: ProbeResponse) => string;

const VARIABLE = /\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g;
const PROBE_VARIABLES = {
  http: { known: (name: string) => name === 'upstream_status' || name.startsWith('upstream_http_'), say: '$upstream_status and $upstream_http_<name>' },
  stream: { known: (name: string) => name === 'upstream_probe_response', say: '$upstream_probe_response' },
};

function template(text: string, protocol: keyof typeof PROBE_VARIABLES): { value: Template } | { error: string } {
  const known = PROBE_VARIABLES[protocol];
  for (const m of text.matchAll(VARIABLE)) {
    const name = m[1] ?? m[2];
    if (!known.known(name) || !variable(name)) return { error: `unknown "${name}" variable: a ${protocol} probe's test knows ${known.say}` };
  }
  const value = compileValue(text);
  const request = { headers: {} };
  return {
    value: (r) =>
      value({
        req: request,
        uri: '/',
        ...(r.status !== undefined ? { upstream: { status: r.status, headers: r.headers ?? {} } } : {}),
        ...(r.response !== undefined ? { probeResponse: r.response } : {}),
      } satisfies VariableContext),
  };
}

export function compileTest(text: string, protocol: 'http' | 'stream' = 'http'): { value: ProbeTest; error?: undefined } | { error: string } {
  const m = /^(.*?)\s*(!=|!~\*?|~\*?|=)\s*(.*)$/s.exec(text);
  if (!m || m[1] === '') {
    const t = template(text, protocol);
    if ('error' in t) return t;
    return { value: (r) => ((s) => s !== '' && s !== '0')(t.value(r)) };
  }
  const [, left, op, right] = m;
  const l = template(left, protocol);
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
  const rt = template(right, protocol);
  if ('error' in rt) return rt;
  const negate = op === '!=';
  return { value: (r) => (l.value(r) === rt.value(r)) !== negate };
}
