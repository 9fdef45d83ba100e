// The checks every directive gets from its table entry, in nginx's words and order:
// known, allowed here, block or `;`, argument count, not duplicate. Then its own `apply`.
import { specsOf } from './directives.js';
import { lackingModuleOf } from '../core/modules.js';
import type { AnyLevel, Checker } from './levels.js';
import type { Directive } from './syntax.js';

export function walk(list: readonly Directive[], level: AnyLevel, c: Checker): void {
  declare(list, level);
  for (const d of list) {
    const specs = specsOf(d.name);
    if (!specs.length) {
      const module = lackingModuleOf(d.name);
      c.error(d.origin, `unknown directive "${d.name}"${module ? `: zonal does not implement nginx's ngx_${module.name.replace(/_module$/, '')}_module` : ''}`);
      continue;
    }
    // A name several contexts share (`server`) means the directive of this context.
    const spec = specs.find((s) => s.contexts.includes(level.kind));
    if (!spec) {
      c.error(d.origin, `"${d.name}" directive is not allowed here`);
      continue;
    }
    if (spec.block && !d.block) {
      c.error(d.origin, `directive "${d.name}" has no opening "{"`);
      continue;
    }
    if (!spec.block && d.block) {
      c.error(d.origin, `directive "${d.name}" is not terminated by ";"`);
      continue;
    }
    const [least, most] = spec.args;
    if (d.args.length < least || d.args.length > most) {
      c.error(d.origin, `invalid number of arguments in "${d.name}" directive`);
      continue;
    }
    if (!spec.multiple) {
      if (level.seen.has(d.name)) {
        c.error(d.origin, `"${d.name}" directive is duplicate`);
        continue;
      }
      level.seen.add(d.name);
    }
    spec.apply(d, level, c);
  }
}

/** What a block's directives name for the others (nginx knows a `map`'s variable in the
 * whole configuration, wherever the `map` is), its included files' too. */
function declare(list: readonly Directive[], level: AnyLevel): void {
  for (const d of list) {
    if (d.name === 'include') declare(d.included ?? [], level);
    else specsOf(d.name).find((s) => s.contexts.includes(level.kind))?.declare?.(d, level);
  }
}
