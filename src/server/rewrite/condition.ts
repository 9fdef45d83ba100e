// The condition of `if (...)`, read as nginx's rewrite module reads it: the parentheses
// are glued to the first and last words (or are words of their own), the left side of a
// comparison is one variable, the right side of `=` a value with variables, of `~` a
// regex (quoted when it holds spaces, `;` or braces).
import type { IfCondition } from '../config/model.js';
import { compileRegex } from '../config/regex.js';
import { checkVariables, type Checked } from '../config/values.js';
import { knownHttpVariable } from '../config/variables.js';

const REGEX_OPERATORS: Readonly<Record<string, { caseless: boolean; negate: boolean }>> = {
  '~': { caseless: false, negate: false },
  '~*': { caseless: true, negate: false },
  '!~': { caseless: false, negate: true },
  '!~*': { caseless: true, negate: true },
};

export function parseIfCondition(args: readonly string[]): Checked<IfCondition> {
  const fail = (error: string): Checked<IfCondition> => ({ error });
  const words = [...args];
  const first = words[0];
  if (!first.startsWith('(')) return fail(`invalid condition "${first}"`);
  if (first === '(') words.shift();
  else words[0] = first.slice(1);
  const last = words[words.length - 1];
  if (last === undefined || !last.endsWith(')')) return fail(`invalid condition "${last ?? first}"`);
  if (last === ')') words.pop();
  else words[words.length - 1] = last.slice(0, -1);
  if (words.length === 0 || words[0] === '') return fail('invalid condition "()"');

  const [left, operator, right] = words;
  if (left.length > 1 && left.startsWith('$')) {
    if (words.length !== 1 && words.length !== 3) return fail(`invalid condition "${left}"`);
    if (!/^\$(\w+|\{\w+\})$/.test(left)) return fail(`invalid variable name in condition "${left}"`);
    const unknown = checkVariables(left, knownHttpVariable);
    if (unknown) return fail(unknown);
    if (words.length === 1) return { value: { kind: 'variable', variable: left } };
    if (operator === '=' || operator === '!=') {
      const error = checkVariables(right, knownHttpVariable);
      if (error) return fail(error);
      return { value: { kind: 'equal', variable: left, value: right, negate: operator === '!=' } };
    }
    const regex = Object.hasOwn(REGEX_OPERATORS, operator) ? REGEX_OPERATORS[operator] : undefined;
    if (!regex) return fail(`unexpected "${operator}" in condition`);
    try {
      return { value: { kind: 'regex', variable: left, regex: compileRegex(right, regex.caseless), negate: regex.negate } };
    } catch (e) {
      return fail(`invalid regular expression "${right}" in condition: ${(e as Error).message}`);
    }
  }
  const file = /^(!?)-(.)$/.exec(left);
  if (file) {
    if (words.length !== 2) return fail(`invalid condition "${left}"`);
    const test = file[2];
    if (test !== 'f' && test !== 'd' && test !== 'e' && test !== 'x') return fail(`unexpected "${left}" in condition`);
    const error = checkVariables(operator, knownHttpVariable);
    if (error) return fail(error);
    return { value: { kind: 'file', test, path: operator, negate: file[1] === '!' } };
  }
  return fail(`invalid condition "${left}"`);
}
