// The fenced code blocks of the project's markdown pages: docs.test.ts checks every one of
// them, and a test that runs a page's sample (a scrape configuration, a query) reads it from
// the page, so that the page shows exactly what the test runs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface Block {
  file: string;
  line: number;
  lang: string;
  text: string;
  marker?: string;
  /** The line before the block (after blank lines). */
  prev?: string;
}

/** The fenced blocks of a markdown file (fences may be indented, as in a list), each with
 * the HTML comment right before it, if any. */
export function blocksOf(file: string): Block[] {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const indent = open[1].length;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]); i++) body.push(lines[i].slice(Math.min(indent, lines[i].length - lines[i].trimStart().length)));
    let p = start - 1;
    while (p >= 0 && lines[p].trim() === '') p--;
    const comment = p >= 0 ? /^\s*<!--\s*(.*?)\s*-->\s*$/.exec(lines[p]) : null;
    blocks.push({ file, line: start + 1, lang: open[2], text: body.join('\n'), marker: comment?.[1], prev: p >= 0 ? lines[p] : undefined });
  }
  return blocks;
}
