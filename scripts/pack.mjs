// npm's `prepack` (npm pack, npm publish): makes what the package ships and nothing
// compiles at install (docs/package.md):
// - prebuilds/<platform>-<arch>/zonal.glibc.node: the addon, one Node-API build for
//   every Node version (binding.gyp defines NAPI_VERSION=8), made with prebuildify and
//   found at run time by node-gyp-build. linux-x64 always (this machine); linux-arm64
//   too when the cross compiler is on PATH (Debian's g++-aarch64-linux-gnu).
//   ZONAL_PREBUILD_ARCHS=x64 (a comma list) limits the builds to those.
// - dist/src: the JavaScript and declarations of src/ only (tsconfig.build.json: no
//   source maps, no bench, no examples), made anew so that nothing stale is shipped.
// - dist/bundle: the zonal command's bundle of it, which bin/zonal runs (scripts/bundle.mjs,
//   without source maps).
// prebuildify builds in build/ and takes the addon away from it: node-gyp-build then
// loads this checkout's prebuild, until the next `npm run build` builds build/ again.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { arch } from 'node:os';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

function run(what, args, env = {}) {
  console.error(`prepack: ${what}`);
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...env } });
  if (r.status !== 0) {
    console.error(`prepack: ${what} failed`);
    process.exit(r.status ?? 1);
  }
}

const onPath = (name) => (process.env.PATH ?? '').split(delimiter).some((dir) => dir && existsSync(join(dir, name)));

// Node's headers: npm's `nodedir`, else those of a Node installed with its headers (the
// Debian and NodeSource packages put them in /usr/include/node); node-gyp would download
// them otherwise.
const nodedir = process.env.npm_config_nodedir || (existsSync('/usr/include/node/node.h') ? '/usr' : undefined);
const gypEnv = nodedir ? { npm_config_nodedir: nodedir } : {};

const crosses = {
  arm64: { prefix: 'aarch64-linux-gnu-', from: 'x64' },
};
const wanted = process.env.ZONAL_PREBUILD_ARCHS ? process.env.ZONAL_PREBUILD_ARCHS.split(',').map((a) => a.trim()) : undefined;
const host = arch();
const builds = [];
for (const [target, cross] of Object.entries(crosses)) {
  if (target === host || (wanted && !wanted.includes(target))) continue;
  if (cross.from !== host || !onPath(`${cross.prefix}g++`)) {
    console.error(`prepack: no linux-${target} prebuild: ${cross.prefix}g++ is not on PATH`);
    continue;
  }
  const tool = (name) => `${cross.prefix}${name}`;
  builds.push({ target, env: { CC: tool('gcc'), CXX: tool('g++'), LINK: tool('g++'), AR: tool('ar') }, strip: tool('strip') });
}
// The host's own last: build/ is left configured for this machine.
if (!wanted || wanted.includes(host)) builds.push({ target: host, env: {}, strip: 'strip' });

rmSync(join(root, 'prebuilds'), { recursive: true, force: true });
const prebuildify = require.resolve('prebuildify/bin.js');
for (const b of builds)
  run(`prebuild linux-${b.target}`, [prebuildify, '--napi', '--strip', '--tag-libc', '--target', process.versions.node, '--arch', b.target, '--strip-bin', b.strip, '--quiet'], { ...gypEnv, ...b.env });

rmSync(join(root, 'dist', 'src'), { recursive: true, force: true });
run('tsc -p tsconfig.build.json', [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json']);
run('bundle', [join(root, 'scripts', 'bundle.mjs')]);
