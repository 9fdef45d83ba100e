// npm test: runs the tap suite with TAP output, shows it, and ends with the one line CI
// reads, "N passed, N failed", counting every assertion once (a subtest's own summary
// line is not counted again, unless it failed with no failing assertion inside, as a
// crashed or timed-out test file does).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { Parser } from 'tap-parser';

// A step the suite needs first: resolves when it succeeded; its failure is the suite's, in
// the line CI reads.
function before(what, command, args) {
  return new Promise((resolve) => {
    spawn(command, args, { stdio: 'inherit' }).on('close', (code) => {
      if (code === 0) return resolve();
      console.log(`${what} failed`);
      console.log('0 passed, 1 failed');
      process.exit(1);
    });
  });
}

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
// Two chains at once, each on a core of its own (tsc runs on one): the build, then what
// needs it; and the type check, then tap's own build, which need nothing of it.
await Promise.all([
  (async () => {
    // Plain .mjs fixtures run the built code: build it first.
    await before('build', process.execPath, [tsc, '-p', 'tsconfig.json']);
    // bin/zonal runs the bundle of what was built when it is as new: the tests run the
    // server as users start it.
    await before('bundle', process.execPath, [new URL('bundle.mjs', import.meta.url).pathname, '--maps']);
  })(),
  (async () => {
    // tap runs TypeScript without checking types: check them first, tests included.
    await before('type check', process.execPath, [tsc, '-p', 'tsconfig.test.json']);
    // tap builds its test class from the plugins package.json configures (tsx in place of
    // its ts-node plugin, see test/tsx.mjs), but a run that finds them changed rebuilds it
    // too late for its own test files, which then load both compilers: on a fresh install,
    // every file of the suite. Building first costs some 6 s.
    await before('tap build', 'npx', ['tap', 'build']);
  })(),
]);

let passed = 0;
let failed = 0;

function watch(parser) {
  const open = [];
  parser.on('child', (child) => {
    const tally = { failed: 0 };
    open.push(tally);
    watch(child);
    child.on('assert', (r) => {
      if (!r.ok && !r.skip && !r.todo) tally.failed++;
    });
  });
  parser.on('assert', (result) => {
    if (result.skip || result.todo) return;
    const child = open.shift();
    if (child) {
      if (!result.ok && child.failed === 0) failed++;
      return;
    }
    if (result.ok) passed++;
    else failed++;
  });
}

const parser = new Parser();
watch(parser);
const tap = spawn('npx', ['tap', '--reporter=tap', ...process.argv.slice(2)], { stdio: ['inherit', 'pipe', 'inherit'] });
tap.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  parser.write(chunk);
});
tap.on('close', (code) => {
  parser.end();
  if (code !== 0 && failed === 0) failed = 1;
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(code === 0 && failed === 0 && passed > 0 ? 0 : 1);
});
