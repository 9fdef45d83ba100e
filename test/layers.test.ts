// The layers of DESIGN.md, checked on the source: the folder a file is in says what it may
// import (src/index.ts, the front door, may import every layer, and nothing imports it), and no module of src/metrics reaches up to status.ts, which builds the tree out
// of the families (an import circle there once tied twelve files together).
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');

/** What each layer may import from src/ besides itself. */
const allowed: Record<string, string[]> = {
  engine: [],
  metrics: ['engine'],
  api: ['metrics', 'engine'],
  transport: ['api', 'metrics', 'engine'],
  server: ['transport', 'api', 'metrics', 'engine'],
  // The embedding adapters (undici upstreams; instrument(), Express, Fastify): the top, over the server's balancer.
  embed: ['server', 'transport', 'api', 'metrics', 'engine'],
  // The package's front door (src/index.ts) exports from every layer.
  'index.ts': ['embed', 'server', 'transport', 'api', 'metrics', 'engine'],
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

const importsOf = (file: string): string[] =>
  [...readFileSync(file, 'utf8').matchAll(/^(?:import|export)\b[^;]*?from\s+'(\.[^']+)'/gms)].map((m) => m[1]);

t.test('every import stays within its layer or below', async (t) => {
  const sources = files(src);
  t.ok(sources.length > 50, `read ${sources.length} source files`);
  const wrong: string[] = [];
  let seen = 0;
  for (const file of sources) {
    const layer = relative(src, file).split('/')[0];
    for (const spec of importsOf(file)) {
      seen++;
      const target = relative(src, resolve(dirname(file), spec));
      const into = target.split('/')[0];
      if (into !== layer && !allowed[layer]?.includes(into)) wrong.push(`${relative(root, file)} -> ${spec}`);
    }
  }
  t.ok(seen > 200, `checked ${seen} relative imports`);
  t.same(wrong, [], 'no import reaches up a layer');
});

t.test('no module of src/metrics imports status.ts', async (t) => {
  const up = files(join(src, 'metrics'))
    .filter((f) => !f.endsWith('/status.ts'))
    .filter((f) => importsOf(f).some((s) => s === './status.js'));
  t.same(up.map((f) => relative(root, f)), []);
});

t.test('no import circles anywhere in src/, type imports included', async (t) => {
  const sources = files(src);
  const graph = new Map<string, string[]>();
  for (const file of sources) {
    const targets = importsOf(file)
      .map((spec) => resolve(dirname(file), spec).replace(/\.js$/, '.ts'))
      .filter((target) => graph.has(target) || sources.includes(target));
    graph.set(file, targets);
  }
  // Tarjan's strongly connected components: a component of more than one file is a circle.
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (v: string) => {
    order.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!order.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, order.get(w)!));
    }
    if (low.get(v) === order.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(relative(root, w));
      } while (w !== v);
      if (component.length > 1) circles.push(component.sort());
    }
  };
  for (const file of sources) if (!order.has(file)) visit(file);
  t.ok(graph.size > 50, `${graph.size} files`);
  t.same(circles, [], 'every import graph of src/ is a tree of layers, without circles');
});

t.test('nothing in src/ imports the front door', async (t) => {
  const index = join(src, 'index.ts');
  const into = files(src).filter((f) => importsOf(f).some((spec) => resolve(dirname(f), spec).replace(/\.js$/, '.ts') === index));
  t.same(into.map((f) => relative(root, f)), []);
});
