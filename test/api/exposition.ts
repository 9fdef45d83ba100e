// A strict reader of the Prometheus text exposition format (0.0.4), for machines without
// promtool: what a Prometheus server would refuse, and what DESIGN.md asks besides
// (every family has HELP and TYPE; every counter is named ..._total).
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

/** Every problem in `text`; [] when a Prometheus server would take all of it. */
export function checkExposition(text: string): string[] {
  const problems: string[] = [];
  const help = new Set<string>();
  const type = new Map<string, string>();
  const done = new Set<string>();
  const series = new Set<string>();
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
    if (s.name !== current) problems.push(`${s.name}: a sample outside its family's lines`);
    if (!type.has(s.name)) problems.push(`${s.name}: no TYPE before its samples`);
    if (!help.has(s.name)) problems.push(`${s.name}: no HELP`);
    if (type.get(s.name) === 'counter' && !s.name.endsWith('_total')) problems.push(`${s.name}: a counter not named ..._total`);
    if (series.has(s.series)) problems.push(`${s.series}: twice`);
    series.add(s.series);
  }
  return problems;
}
