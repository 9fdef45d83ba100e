// `test=` of upstream_probe: a condition on the probe's response. As in Angie, a text
// with variables that fails when it comes out empty or "0"; and, since zonal has no
// `map` to turn a status into such a flag, also a comparison in the words of nginx's
// `if`: `<text> = <text>`, `!=`, `~ <regex>`, `!~` (`test=$upstream_status=200` needs
// quotes around it in the file when written with spaces: "test=$upstream_status = 200").
//
// Variables go through the server's one evaluator (src/api/variables.ts): the response's
// $upstream_status and $upstream_http_<name>; a probe has no client, so the request's
// variables are refused.
import { compileValue, variable, type VariableContext } from '../../api/variables.js';

/** What a probe's response gives its test. */
export interface ProbeResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

export type ProbeTest = (r: ProbeResponse) => boolean;

type Template = (r: ProbeResponse) => string;

const VARIABLE = /\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g;
const PROBE_VARIABLES = (name: string) => name === 'upstream_status' || name.startsWith('upstream_http_');

function template(text: string): { value: Template } | { error: string } {
  for (const m of text.matchAll(VARIABLE)) {
    const name = m[1] ?? m[2];
    if (!PROBE_VARIABLES(name) || !variable(name))
      return { error: `unknown "${name}" variable: a probe's test knows $upstream_status and $upstream_http_<name>` };
  }
  const value = compileValue(text);
  const request = { headers: {} };
  return { value: (r) => value({ req: request, uri: '/', upstream: r } satisfies VariableContext) };
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
