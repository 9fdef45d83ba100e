// A strict reader of the Prometheus text exposition format (0.0.4), for machines without
// promtool: what a Prometheus server would refuse, and what DESIGN.md asks besides
// (every family has HELP and TYPE; every counter is named ..._total). A histogram's
// samples are its family's name with _bucket (labelled `le`, cumulative, ending with
// +Inf equal to _count), _sum and _count.
import { execFileSync } from 'node:child_process';

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const VALUE = /^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Inf|NaN)$/;

/** The sample's name, labels and value, or why the line is not one. */
function parseSample(line: string): { name: string; series: string; value: string } | string {
  const m = /^([^{\s]+)(\{.*\})?\s+(\S+)(?:\s+-?\d+)?$/.exec(line);
  if (!m) return `not a sample: ${line}`;
  const [, name, labels = '', value] = m;
  if (!NAME.test(name)) return `bad metric name: ${name}`;
  if (!VALUE.test(value)) return `bad value: ${line}`;
  if (labels) {
    const body = labels.slice(1, -1);
    const re = /([^=,\s]+)="((?:[^"\\]|\\[\\"n])*)"(,|$)/y;
    const seen = new Set<string>();
    let at = 0;
    while (at < body.length) {
      re.lastIndex = at;
      const l = re.exec(body);
      if (!l) return `bad labels: ${line}`;
      if (!LABEL.test(l[1])) return `bad label name ${l[1]}: ${line}`;
      if (seen.has(l[1])) return `label ${l[1]} twice: ${line}`;
      seen.add(l[1]);
      at = re.lastIndex;
    }
  }
  return { name, series: name + labels, value };
}

/** The family a sample belongs to: a histogram's _bucket, _sum and _count are its own. */
function familyOf(name: string, type: Map<string, string>): string {
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  return m && type.get(m[1]) === 'histogram' ? m[1] : name;
}

/** Every problem in `text`; [] when a Prometheus server would take all of it. */
export function checkExposition(text: string): string[] {
  const problems: string[] = [];
  const help = new Set<string>();
  const type = new Map<string, string>();
  const done = new Set<string>();
  const series = new Set<string>();
  // Per histogram series (its labels but `le`): the last cumulative count and bound.
  const buckets = new Map<string, { le: number; count: number }>();
  let current = '';
  if (text.length && !text.endsWith('\n')) problems.push('the last line has no newline');
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
    if (meta) {
      const [, kind, name, rest = ''] = meta;
      if (!NAME.test(name)) problems.push(`bad metric name: ${name}`);
      if (name !== current) {
        if (done.has(name)) problems.push(`${name}: its lines are not together`);
        if (current) done.add(current);
        current = name;
      }
      if (kind === 'HELP') {
        if (help.has(name)) problems.push(`${name}: HELP twice`);
        help.add(name);
      } else {
        if (type.has(name)) problems.push(`${name}: TYPE twice`);
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) problems.push(`${name}: bad TYPE ${rest}`);
        type.set(name, rest);
      }
      continue;
    }
    if (line.startsWith('#')) continue;
    const s = parseSample(line);
    if (typeof s === 'string') {
      problems.push(s);
      continue;
    }
    const family = familyOf(s.name, type);
    if (family !== current) problems.push(`${s.name}: a sample outside its family's lines`);
    if (!type.has(family)) problems.push(`${s.name}: no TYPE before its samples`);
    if (!help.has(family)) problems.push(`${s.name}: no HELP`);
    if (family !== s.name) {
      const le = /[{,]le="([^"]*)"/.exec(s.series);
      const key = family + s.series.slice(s.name.length).replace(/,?le="[^"]*"/, '').replace('{,', '{').replace('{}', '');
      if (s.name.endsWith('_bucket')) {
        const bound = le ? (le[1] === '+Inf' ? Infinity : Number(le[1])) : NaN;
        const last = buckets.get(key) ?? { le: -Infinity, count: 0 };
        if (Number.isNaN(bound)) problems.push(`${s.series}: a bucket without a numeric le`);
        else if (bound <= last.le) problems.push(`${s.series}: buckets not in ascending le`);
        if (Number(s.value) < last.count) problems.push(`${s.series}: buckets not cumulative`);
        buckets.set(key, { le: bound, count: Number(s.value) });
      } else if (s.name.endsWith('_count')) {
        const last = buckets.get(key);
        if (!last || last.le !== Infinity) problems.push(`${s.series}: no +Inf bucket before _count`);
        else if (last.count !== Number(s.value)) problems.push(`${s.series}: _count differs from the +Inf bucket`);
      }
    }
    if (type.get(s.name) === 'counter' && !s.name.endsWith('_total')) problems.push(`${s.name}: a counter not named ..._total`);
    if (series.has(s.series)) problems.push(`${s.series}: twice`);
    series.add(s.series);
  }
  return problems;
}

/** What Debian's `promtool check metrics` says of `text`: '' when it accepts it, 'absent'
 * when promtool is not installed, else its complaints. */
export function promtool(text: string): string {
  try {
    execFileSync('promtool', ['check', 'metrics'], { input: text, stdio: ['pipe', 'pipe', 'pipe'] });
    return '';
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: Buffer; stdout?: Buffer };
    if (err.code === 'ENOENT') return 'absent';
    return `${err.stdout ?? ''}${err.stderr ?? ''}`;
  }
}
