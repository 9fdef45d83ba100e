// The README's three apps (examples/http-app.ts, express-app.ts, fastify-app.ts), run as
// written on ports the test picks: each has at most three lines of zonal, and its
// primary's API shows exactly the traffic the test sent to both workers.
import { forkNode } from '../helpers.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { eventually, freePorts } from '../server/zonal.js';

const getJson = async (url: string) => (await fetch(url)).json() as Promise<any>;

for (const [file, path, routed] of [
  ['http-app.ts', '/', false],
  ['express-app.ts', '/users/7', true],
  ['fastify-app.ts', '/users/7', true],
] as const) {
  t.test(file, async (t) => {
    const script = fileURLToPath(new URL(`../../examples/${file}`, import.meta.url));
    const source = readFileSync(script, 'utf8');
    const glue = source.split('\n').filter((l) => /\/\/ zonal: \d\/3$/.test(l));
    t.equal(glue.length, 3, 'three lines of zonal, marked');
    t.notOk(/zonal: [4-9]/.test(source), 'and no fourth');

    const [port, apiPort] = await freePorts(2);
    const child = forkNode(script, [], { env: { ...process.env, PORT: String(port), ZONAL_PORT: String(apiPort) }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    t.teardown(() => {
      child.kill('SIGTERM');
    });
    t.ok(await eventually(async () => (out.match(/^worker \d+ on /gm) ?? []).length === 2, 20_000), `both workers listen: ${out}`);

    // Fresh connections, so that both workers serve some.
    const n = 10;
    for (let i = 0; i < n; i++) {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { connection: 'close' } });
      t.equal(res.status, 200);
      await res.text();
    }
    t.ok(
      await eventually(async () => (await getJson(`http://127.0.0.1:${apiPort}/status/http/server_zones/app/requests`)).total === n, 5000),
      'the primary shows every request',
    );
    const zone = await getJson(`http://127.0.0.1:${apiPort}/status/http/server_zones/app`);
    t.same(zone.responses, { 200: n });
    t.equal(zone.requests.processing, 0);
    t.ok(zone.data.received > 0 && zone.data.sent > 0, 'bytes both ways');
    const conns = await getJson(`http://127.0.0.1:${apiPort}/status/connections`);
    t.equal(conns.accepted, n, 'one connection per request');
    if (routed) t.same((await getJson(`http://127.0.0.1:${apiPort}/status/http/location_zones/`))['/users/:id']?.responses, { 200: n }, 'the route zone');
    const workers = await getJson(`http://127.0.0.1:${apiPort}/status/workers`);
    t.equal(Object.keys(workers).length, 2, 'both workers show their runtime');
  });
}
