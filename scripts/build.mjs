// npm run build, and npm's `prepare` (which npm runs after every `npm install` or `npm ci`
// in this checkout): the addon (node-gyp, incremental: a stale build/ from before a change
// to native/ is brought up to date) and the TypeScript of src/, bench/ and examples/ into
// dist/ (tsconfig.json, with source maps), which `npm start`, the fixtures and the
// benchmarks run; then the zonal command's bundle of it (scripts/bundle.mjs, with source
// maps), which bin/zonal runs. When npm runs `prepare` for `npm pack` or `npm publish`, prepack has
// just made what is shipped (scripts/pack.mjs), and nothing is done here.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

if (process.env.npm_lifecycle_event === 'prepare' && ['pack', 'publish'].includes(process.env.npm_command)) process.exit(0);

function run(what, args) {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`build: ${what} failed`);
    process.exit(r.status ?? 1);
  }
}

// node-gyp takes Node's headers from npm's `nodedir` (npm passes it on as
// npm_config_nodedir); without it, node-gyp would download them.
const gyp = require.resolve('node-gyp/bin/node-gyp.js');
if (!existsSync(join(root, 'build', 'Makefile'))) run('node-gyp configure', [gyp, 'configure']);
run('node-gyp build', [gyp, 'build']);
run('tsc', [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json']);
run('bundle', [join(root, 'scripts', 'bundle.mjs'), '--maps']);
