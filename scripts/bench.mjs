// npm run bench -- <name> [args...]: compiles with tsc and bundles the command (so dist/
// is never stale) and runs dist/bench/<name>.js with the remaining args, exiting with its
// code. Without a known name it lists the benchmarks and exits 2.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// Modules under bench/ that other benchmarks import rather than benchmarks themselves.
const HELPERS = new Set(['report', 'processes', 'wrk', 'tcp-load', 'floor', 'etcd']);

function benchmarks() {
  return readdirSync(join(root, 'bench'))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => f.slice(0, -'.ts'.length))
    .filter((name) => !HELPERS.has(name))
    .sort();
}

function run(args) {
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (result.error) throw result.error;
  // A child killed by a signal has no exit code: report it as the shell would.
  return result.status ?? 128 + (constants.signals[result.signal] ?? 0);
}

const [name, ...rest] = process.argv.slice(2);
const available = benchmarks();
if (!name || !available.includes(name)) {
  if (name) console.error(`unknown benchmark "${name}"`);
  console.error(`usage: npm run bench -- <name> [args...]\navailable: ${available.join(', ') || '(none)'}`);
  process.exit(2);
}

// tsc's own script, run with this node: npx would add its start-up time and warnings.
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const compiled = run([tsc, '-p', 'tsconfig.json']);
if (compiled !== 0) {
  console.error('tsc failed: not running the benchmark on stale output');
  process.exit(compiled);
}
// ...and the bundle bin/zonal runs (scripts/bundle.mjs): after tsc, bin/zonal would run
// dist/src, which starts slower than what `npm run build` and the package make.
const bundled = run([join('scripts', 'bundle.mjs'), '--maps']);
if (bundled !== 0) {
  console.error('bundle failed: not running the benchmark on stale output');
  process.exit(bundled);
}
process.exit(run([join('dist', 'bench', `${name}.js`), ...rest]));
