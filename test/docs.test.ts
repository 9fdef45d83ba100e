// Every code block of README.md and docs/*.md is checked by a rule, and a block that no
// rule takes fails the test (each is reported by file and line). The rules:
//
// - ```ts / ```js: after its import specifiers are turned into the examples' ('zonal' ->
//   '../src/index.js', 'zonal/express' -> '../src/embed/express.js', ...), the block is an
//   examples/*.ts file that a test runs (a test file names it), whole or a contiguous run
//   of its lines. Import lines may differ in how names are grouped into modules (a page
//   imports all from 'zonal'), but not in the names imported. A block preceded by
//   `<!-- sample: fragment of <file> -->` must appear verbatim in that file (which a test
//   runs). A block right after a line linking an examples/ file must be an example. Any other ts block is a whole program: it is written to a file in test/ with the
//   source paths for 'zonal', run under the suite's TypeScript loader, and must exit 0
//   within 30 s.
// - ```nginx: `bin/zonal -t` accepts it, as a whole configuration, or wrapped in the
//   contexts a preceding `<!-- context: http server -->` names. It is checked in a folder
//   that has what samples point at: html/, htpasswd, cert.pem and key.pem.
// - ```sh: a block of `npm run bench -- <name> ...` lines names benchmarks that exist in
//   bench/ (a dry run: a benchmark takes minutes); a block of `bin/zonal` lines is run
//   (`-c <file>`, which would start the server, is run as `-t -c <file>`); a block of curl
//   lines runs with bash -e against one zonal server this test starts on conf/zonal.conf,
//   its ports moved to free ones (the block's 8080, 8081, 8091, 8092 with them), and every
//   curl must succeed. Any other sh block needs `<!-- not run: <reason> -->` naming the
//   test (a test/ path that exists) or the CI step ("CI") that covers it.
// - Any other language (yaml, promql...) needs `<!-- not run: ... -->` too.
// - Untagged, ```json and ```text blocks are outputs, not code: they are left as they are.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { forkNode, selfSigned } from './helpers.js';
import { blocksOf, type Block } from './helpers/markdown.js';
import { checkFile, freePorts, runZonal, Zonal } from './server/zonal.js';

const root = fileURLToPath(new URL('../', import.meta.url));

const SPECIFIERS: Record<string, string> = {
  zonal: '../src/index.js',
  'zonal/express': '../src/embed/express.js',
  'zonal/fastify': '../src/embed/fastify.js',
  'zonal/undici': '../src/embed/undici.js',
};
/** A block's imports of the package turned into the examples' (source tree) paths. */
const toSource = (text: string, prefix = '../') =>
  text.replace(/(from\s+|import\s*\(\s*)'(zonal(?:\/[a-z]+)?)'/g, (m, head: string, spec: string) =>
    SPECIFIERS[spec] ? `${head}'${SPECIFIERS[spec].replace('../', prefix)}'` : m,
  );
const isImport = (line: string) => /^import\s/.test(line);
const importedNames = (lines: string[]) =>
  lines
    .filter(isImport)
    .flatMap((l) => {
      const names = /\{([^}]*)\}/.exec(l)?.[1].split(',') ?? [];
      const dflt = /^import\s+(\w+)/.exec(l)?.[1];
      return [...names.map((n) => n.trim()).filter(Boolean), ...(dflt && dflt !== 'type' ? [`default ${dflt}`] : [])];
    })
    .sort();
/** Lines without the indentation they all share (a fragment may be shown dedented). */
function dedent(lines: string[]): string[] {
  const widths = lines.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length);
  const cut = widths.length ? Math.min(...widths) : 0;
  return lines.map((l) => l.slice(Math.min(cut, l.length - l.trimStart().length)));
}
/** Whether `needle`'s lines are a contiguous run of `hay`'s lines, each as written but
 * for an indentation the whole run shares. */
function contiguous(hay: string[], needle: string[]): boolean {
  if (needle.length === 0) return false;
  const want = dedent(needle);
  for (let i = 0; i + needle.length <= hay.length; i++) {
    const run = dedent(hay.slice(i, i + needle.length));
    if (want.every((l, j) => run[j] === l)) return true;
  }
  return false;
}
const trimLines = (text: string) => {
  const lines = text.split('\n');
  while (lines.length && lines[0].trim() === '') lines.shift();
  while (lines.length && lines[lines.length - 1].trim() === '') lines.pop();
  return lines.map((l) => l.replace(/\s+$/, ''));
};

const testSources = (() => {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      if (e.isDirectory()) walk(`${dir}/${e.name}`);
      else if (e.name.endsWith('.test.ts') && e.name !== 'docs.test.ts') out.push(readFileSync(join(root, dir, e.name), 'utf8'));
    }
  };
  walk('test');
  return out.join('\n');
})();
/** An example some test runs: a test file names it. */
const runByATest = (file: string) => testSources.includes(file.replace(/^examples\//, ''));
const examples = readdirSync(join(root, 'examples'))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => `examples/${f}`);

/** Why a ts block matches an example, or undefined. */
function matchExample(block: Block): string | undefined {
  const mine = trimLines(toSource(block.text));
  for (const ex of examples) {
    const theirs = trimLines(readFileSync(join(root, ex), 'utf8'));
    if (contiguous(theirs, mine)) return ex;
    // The same program, its imports grouped otherwise: the same names, the same body.
    const body = (ls: string[]) => ls.filter((l) => !isImport(l));
    if (
      mine.some(isImport) &&
      contiguous(body(theirs), body(mine)) &&
      importedNames(mine).join() === importedNames(theirs).join()
    )
      return `${ex} (imports grouped otherwise)`;
  }
  return undefined;
}

const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const all = files.flatMap(blocksOf);
const where = (b: Block) => `${b.file}:${b.line}`;

const notRunReason = (b: Block) => /^not run:\s*(.+)$/.exec(b.marker ?? '')?.[1];
/** A reason names a test that exists, or the CI step. */
function reasonHolds(reason: string): boolean {
  const paths = reason.match(/test\/[\w./-]+\.ts/g) ?? [];
  return paths.every((p) => existsSync(join(root, p))) && (paths.length > 0 || /\bCI\b/.test(reason));
}

type Kind = 'output' | 'not-run' | 'example' | 'fragment' | 'program' | 'config' | 'bench' | 'zonal' | 'curl' | 'none';
function kindOf(b: Block): Kind {
  if (b.lang === '' || b.lang === 'json' || b.lang === 'text') return 'output';
  if (notRunReason(b)) return 'not-run';
  if (b.lang === 'ts' || b.lang === 'js' || b.lang === 'typescript') {
    if (b.marker?.startsWith('sample:')) return 'fragment';
    // A block introduced by a link to an example claims to be it: it is checked as one.
    return matchExample(b) || /\]\(\.{0,2}\/?examples\/[\w-]+\.ts\)/.test(b.prev ?? '') ? 'example' : 'program';
  }
  if (b.lang === 'nginx') return 'config';
  if (b.lang === 'sh' || b.lang === 'bash' || b.lang === 'shell') {
    const lines = trimLines(b.text).filter((l) => l.trim() && !l.trim().startsWith('#'));
    if (lines.length && lines.every((l) => /^npm run bench -- \S+/.test(l))) return 'bench';
    if (lines.length && lines.every((l) => /^bin\/zonal\s/.test(l))) return 'zonal';
    if (lines.length && /^curl\s/.test(lines[0])) return 'curl';
  }
  return 'none';
}

const counts: Record<string, Record<string, number>> = {};
for (const b of all) {
  const k = kindOf(b);
  (counts[b.file] ??= {})[k] = ((counts[b.file] ??= {})[k] ?? 0) + 1;
}

t.test('every block matches a rule', async (t) => {
  for (const b of all) t.not(kindOf(b), 'none', `${where(b)}: a \`\`\`${b.lang} block matches no rule (mark it, or make it run)`);
  for (const b of all.filter((b) => kindOf(b) === 'not-run'))
    t.ok(reasonHolds(notRunReason(b)!), `${where(b)}: "not run" names the test (an existing test/ path) or CI step that covers it`);
  t.comment(`blocks per file: ${JSON.stringify(counts)}`);
});

t.test('ts blocks are the examples that tests run', async (t) => {
  for (const b of all.filter((b) => kindOf(b) === 'example')) {
    const ex = matchExample(b);
    t.ok(ex, `${where(b)}: is the example its text links to (${b.prev})`);
    if (ex) t.ok(runByATest(ex.split(' ')[0]), `${where(b)}: is ${ex}, which a test runs`);
  }
  for (const b of all.filter((b) => kindOf(b) === 'fragment')) {
    const file = /^sample: fragment of (\S+)$/.exec(b.marker!)?.[1];
    t.ok(file && existsSync(join(root, file)), `${where(b)}: names its file (${b.marker})`);
    if (!file || !existsSync(join(root, file))) continue;
    t.ok(runByATest(file), `${where(b)}: ${file} is run by a test`);
    t.ok(contiguous(trimLines(readFileSync(join(root, file), 'utf8')), trimLines(toSource(b.text))), `${where(b)}: appears verbatim in ${file}`);
  }
});

t.test('ts programs run', async (t) => {
  const programs = all.filter((b) => kindOf(b) === 'program');
  await Promise.all(
    programs.map(async (b, n) => {
      const path = join(root, 'test', `.docs-sample-${process.pid}-${n}.ts`);
      writeFileSync(path, toSource(b.text));
      try {
        const child = forkNode(path, [], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'], cwd: root });
        let out = '';
        child.stdout!.on('data', (d) => (out += d));
        child.stderr!.on('data', (d) => (out += d));
        const code = await new Promise<number | string | null>((resolve) => {
          const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
          child.on('exit', (c, s) => (clearTimeout(timer), resolve(c ?? s)));
        });
        t.equal(code, 0, `${where(b)}: the program exits 0${code === 0 ? '' : `; it wrote:\n${out}`}`);
      } finally {
        rmSync(path, { force: true });
      }
    }),
  );
});

t.test('nginx blocks pass bin/zonal -t', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-docs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'html'));
  writeFileSync(join(dir, 'htpasswd'), 'ops:{PLAIN}secret\n');
  const { cert, key } = selfSigned('localhost');
  writeFileSync(join(dir, 'cert.pem'), cert);
  writeFileSync(join(dir, 'key.pem'), key);
  const configs = all.filter((b) => kindOf(b) === 'config');
  const results = await Promise.all(
    configs.map(async (b, n) => {
      let text = b.text;
      const context = /^context:\s*(.+)$/.exec(b.marker ?? '')?.[1].trim().split(/\s+/) ?? [];
      for (const c of [...context].reverse()) {
        const head = c === 'server' && context.includes('http') ? 'server { listen 127.0.0.1:1;' : `${c} {`;
        text = `${head}\n${text}\n}`;
      }
      const file = join(dir, `sample-${n}.conf`);
      writeFileSync(file, text);
      return checkFile(file);
    }),
  );
  configs.forEach((b, i) => t.equal(results[i].code, 0, `${where(b)}: bin/zonal -t accepts it${results[i].code === 0 ? '' : `: ${results[i].err}`}`));
});

t.test('sh blocks: benchmarks exist, bin/zonal lines run', async (t) => {
  const HELPERS = new Set(['report', 'processes', 'wrk', 'tcp-load', 'floor', 'etcd']);
  for (const b of all.filter((b) => kindOf(b) === 'bench'))
    for (const m of b.text.matchAll(/^npm run bench -- (\S+)/gm))
      t.ok(existsSync(join(root, 'bench', `${m[1]}.ts`)) && !HELPERS.has(m[1]), `${where(b)}: "${m[1]}" is a benchmark in bench/`);
  for (const b of all.filter((b) => kindOf(b) === 'zonal'))
    for (const line of trimLines(b.text).filter((l) => l.startsWith('bin/zonal'))) {
      const args = line.replace(/#.*$/, '').trim().split(/\s+/).slice(1);
      const run = args[0] === '-c' ? ['-t', ...args] : args;
      const r = await runZonal(run.map((a) => (a.startsWith('conf/') ? join(root, a) : a)));
      t.equal(r.code, 0, `${where(b)}: bin/zonal ${run.join(' ')} exits 0${r.code === 0 ? '' : `: ${r.err}`}`);
    }
});

t.test('curl blocks run against conf/zonal.conf', async (t) => {
  const curls = all.filter((b) => kindOf(b) === 'curl');
  if (!curls.length) return;
  const ports = await freePorts(4);
  const moved: Record<string, string> = { 8080: String(ports[0]), 8081: String(ports[1]), 8091: String(ports[2]), 8092: String(ports[3]) };
  const move = (text: string) => text.replace(/127\.0\.0\.1:(8080|8081|8091|8092)\b/g, (_m, p: string) => `127.0.0.1:${moved[p]}`);
  const conf = move(readFileSync(join(root, 'conf/zonal.conf'), 'utf8')).replace(/\broot html;/g, `root ${join(root, 'conf/html')};`);
  const server = await Zonal.start({ 'zonal.conf': conf });
  t.teardown(() => server.stop());
  for (const b of curls) {
    // A streaming curl (-N) is stopped after 2 s, and must have had events by then.
    const streams = /^curl -N /m.test(b.text);
    const script = `set -e\n${move(b.text)
      .replace(/^curl -N (.*)$/gm, 'curl -sS --max-time 2 -N $1 || [ $? -eq 28 ]')
      .replace(/^curl (?!-sS --max-time 2)/gm, 'curl -sS --fail-with-body --max-time 10 ')}\n`;
    const r = await new Promise<{ code: number; out: string }>((resolve) =>
      execFile('bash', ['-c', script], { cwd: root, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
      ),
    );
    t.equal(r.code, 0, `${where(b)}: every curl succeeds${r.code === 0 ? '' : `; output:\n${r.out}`}`);
    if (streams) t.match(r.out, /^data: /m, `${where(b)}: the stream sent events`);
  }
});

