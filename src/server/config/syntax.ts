// nginx's configuration syntax, knowing nothing of any directive: `name arg...;` and
// `name arg... { ... }`, `#` comments, quoted arguments, escapes. The tree it returns is
// what directives.ts walks; include.ts grafts included files into it.
import type { ConfigError, Origin } from './model.js';

export interface Directive {
  readonly name: string;
  readonly args: readonly string[];
  /** Where the directive's name is. */
  readonly origin: Origin;
  /** The `{ ... }` as written; absent when `;` ends the directive. */
  readonly block?: readonly Directive[];
  /** For a well-formed `include`: the directives of the files it matched, in order. */
  included?: readonly Directive[];
}

export type Parsed = { readonly directives: Directive[]; readonly error?: undefined } | { readonly error: ConfigError };

interface Word {
  readonly value: string;
  readonly line: number;
}

const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\r' || c === '\n';

/** nginx's escapes: only these are replaced; any other backslash stays with its character,
 * so that `"^/a\d+$"` reaches the regex engine as written. */
export function unescape(raw: string): string {
  return raw.replace(/\\([\s\S])/g, (whole, c: string) => {
    if (c === '"' || c === "'" || c === '\\') return c;
    if (c === 'n') return '\n';
    if (c === 't') return '\t';
    if (c === 'r') return '\r';
    return whole;
  });
}

/** The directives of one file, or the first syntax error in it: like nginx, a file is not
 * read past a syntax error, since what follows cannot be trusted to mean anything. */
export function parse(text: string, file: string): Parsed {
  const top: Directive[] = [];
  const blocks: Directive[][] = [top];
  let words: Word[] = [];
  let line = 1;
  let i = 0;
  const fail = (message: string, at = line): Parsed => ({ error: { file, line: at, message } });
  const finish = (block?: Directive[]) => {
    const [name, ...args] = words;
    blocks[blocks.length - 1].push({
      name: name.value,
      args: args.map((w) => w.value),
      origin: { file, line: name.line },
      ...(block ? { block } : {}),
    });
    words = [];
  };

  while (i < text.length) {
    const ch = text[i];
    if (isSpace(ch)) {
      if (ch === '\n') line++;
      i++;
    } else if (ch === '#') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (ch === ';') {
      if (!words.length) return fail('unexpected ";"');
      finish();
      i++;
    } else if (ch === '{') {
      if (!words.length) return fail('unexpected "{"');
      const block: Directive[] = [];
      finish(block);
      blocks.push(block);
      i++;
    } else if (ch === '}') {
      if (words.length || blocks.length === 1) return fail('unexpected "}"');
      blocks.pop();
      i++;
    } else if (ch === '"' || ch === "'") {
      const start = line;
      let j = i + 1;
      while (j < text.length && text[j] !== ch) {
        if (text[j] === '\\' && j + 1 < text.length) j++;
        if (text[j] === '\n') line++;
        j++;
      }
      if (j >= text.length) return fail(`unterminated quoted string, opened with ${ch}`, start);
      words.push({ value: unescape(text.slice(i + 1, j)), line: start });
      i = j + 1;
      // As nginx: `"a"b` is not two words run together but a mistake; a `)` may follow,
      // as the next word, for an `if` condition that ends with a quoted string.
      if (i < text.length && !isSpace(text[i]) && text[i] !== ';' && text[i] !== '{' && text[i] !== ')') return fail(`unexpected "${text[i]}"`);
    } else {
      const start = line;
      let j = i;
      let inVariable = false;
      while (j < text.length) {
        const c = text[j];
        if (c === '\\' && j + 1 < text.length) {
          if (text[j + 1] === '\n') line++;
          j += 2;
          continue;
        }
        // `${name}` is one word: its braces are not a block's.
        if (c === '$' && text[j + 1] === '{') {
          inVariable = true;
          j += 2;
          continue;
        }
        if (c === '}' && inVariable) {
          inVariable = false;
          j++;
          continue;
        }
        if (isSpace(c) || c === ';' || c === '{' || c === '}') break;
        j++;
      }
      words.push({ value: unescape(text.slice(i, j)), line: start });
      i = j;
    }
  }
  // The last line with text, not the empty one after a final newline.
  const last = text.endsWith('\n') ? Math.max(1, line - 1) : line;
  if (words.length) return fail('unexpected end of file, expecting ";" or "}"', last);
  if (blocks.length > 1) return fail('unexpected end of file, expecting "}"', last);
  return { directives: top };
}

/** Every directive of a tree, blocks and included files too, in the order written. */
export function eachDirective(directives: readonly Directive[], visit: (d: Directive) => void): void {
  for (const d of directives) {
    visit(d);
    if (d.block) eachDirective(d.block, visit);
    if (d.included) eachDirective(d.included, visit);
  }
}
