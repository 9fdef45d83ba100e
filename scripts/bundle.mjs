// The zonal command's bundle (dist/bundle/), which bin/zonal runs: the primary's entry
// (dist/src/server/cli.js) and the worker's (dist/src/server/worker.js), each with what it
// imports of dist/src, bundled by esbuild into one CommonJS file. What is imported only
// when a configuration uses it (stream, the cache keeper, runtime metrics) stays a
// function that runs then. Node loads hundreds of modules in about twice the time it loads
// the same code in one file, and its ES module loader costs more again than CommonJS's:
// that load was most of the server's start (issue 32). CommonJS also lets bin/zonal give
// V8 the code it compiled at an earlier start (vm.Script's cachedData), which ES modules
// cannot take in Node 20.
//
// It is made from dist/src as tsc compiled it, so it runs the same JavaScript. Packages
// stay outside (node_modules). Each module keeps its
// own import.meta.url, the URL of its file in dist/src, so that what it finds beside
// itself (the addon, the dashboard page) is found from the bundle too. inputs.json names
// the files it was made of: bin/zonal runs dist/src instead when one of them is newer (a
// `tsc` since).
//
//   node scripts/bundle.mjs [--maps]
//
// --maps: source maps (npm run build), through dist/src's own to the TypeScript; the
// package ships none (prepack).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'bundle');
const maps = process.argv.includes('--maps');
/** The primary's entry (the command) and the worker's, each bundled with its imports. */
const ENTRIES = { zonal: 'dist/src/server/cli.js', worker: 'dist/src/server/worker.js' };

/** The bundle's own URL, set once at its top: each module's import.meta.url is made from it. */
const BUNDLE_URL = '__zonalBundleUrl';

/** import.meta.url as the module's own file in dist/src, from wherever its code lands in
 * dist/bundle (every output file is in that one folder). */
const ownUrl = {
  name: 'own-import-meta-url',
  setup(build) {
    build.onLoad({ filter: /\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes('import.meta.url')) return undefined;
      const own = `new URL(${JSON.stringify(relative(out, args.path))}, ${BUNDLE_URL}).href`;
      return { contents: text.replaceAll('import.meta.url', own), loader: 'js' };
    });
  },
};

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
// Two builds: a process loads only its own.
const inputs = new Set();
for (const [name, entry] of Object.entries(ENTRIES)) {
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: { [name]: entry },
    outdir: out,
    outExtension: { '.js': '.cjs' },
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    // A package imported when used (etcd3, bcryptjs) is required then: V8 code taken from
    // a cache has no `import()` (Node 20 loses vm.Script's importModuleDynamically with it).
    supported: { 'dynamic-import': false },
    // At the top of the module, where `require` is still CommonJS's own.
    banner: { js: `'use strict';\nconst ${BUNDLE_URL} = require('node:url').pathToFileURL(__filename).href;` },
    sourcemap: maps ? 'linked' : false,
    metafile: true,
    logLevel: 'warning',
    plugins: [ownUrl],
  });
  for (const file of Object.keys(result.metafile.inputs)) inputs.add(file);
}
// Written last: its time is the bundle's, which bin/zonal compares with its inputs'.
writeFileSync(join(out, 'inputs.json'), `${JSON.stringify({ cli: 'zonal.cjs', worker: 'worker.cjs', inputs: [...inputs].sort() }, null, 1)}\n`);
