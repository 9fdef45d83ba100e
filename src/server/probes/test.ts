// `test=` of upstream_probe: a condition on the probe's response. As in Angie, a text
// with variables that fails when it comes out empty or "0"; and, since zonal has no
// `map` to turn a status into such a flag, also a comparison in the words of nginx's
// `if`: `<text> = <text>`, `!=`, `~ <regex>`, `!~` (`test=$upstream_status=200` needs
// quotes around it in the file when written with spaces: "test=$upstream_status = 200").
//
// Variables are the probe's own (variables.ts), evaluated as every value is: an HTTP
// probe's response gives $upstream_status and $upstream_http_<name>, a stream probe's
// answer $upstream_probe_response (Angie's); a probe has no client, so the request's
// variables are refused.
import { namesIn } from '../../api/variables.js';
import { probeVariables, type ProbeResponse } from './variables.js';

export type { ProbeResponse } from './variables.js';

export type ProbeTest = (r: ProbeResponse) => boolean;

type Template = (r: ProbeResponse) => string;

function template(text: string, protocol: keyof typeof probeVariables): { value: Template } | { error: string } {
  const table = probeVariables[protocol];
  const unknown = namesIn(text).find((name) => !table.variables.known(name));
  if (unknown !== undefined) return { error: `unknown "${unknown}" variable: a ${protocol} probe's test knows ${table.say}` };
  return { value: table.variables.compile(text) };
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
