// One line per framework, through a cluster app of two workers (test/fixtures/
// framework-app.ts) whose primary serves the API: node:http's instrument(), the Express
// middleware and the Fastify plugin each count connections, the server zone and route
// zones made at run time by the workers, with the exact bytes the client's keep-alive
// sockets moved, response times, and a discarded request.
import { request, Agent } from 'node:http';
import type { Socket } from 'node:net';
import t from 'tap';
import { start } from '../helpers.js';
import { eventually, freePorts } from '../server/zonal.js';

/** GETs `paths` over `agent`'s keep-alive sockets, one at a time; a dropped request
 * resolves with status 0. */
async function send(port: number, agent: Agent, paths: string[], sockets: Set<Socket>): Promise<number[]> {
  const codes: number[] = [];
  for (const path of paths)
    codes.push(
      await new Promise<number>((resolve) => {
        const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('socket', (s) => sockets.add(s));
        req.on('error', () => resolve(0));
        req.end();
      }),
    );
  return codes;
}

const getJson = async (url: string) => (await fetch(url)).json() as Promise<any>;

for (const framework of ['node', 'express', 'fastify'] as const) {
  t.test(`${framework}: one line records connections, the server zone and route zones`, async (t) => {
    const [port] = await freePorts(1);
    const routeCap = framework === 'node' ? 3 : 100;
    const app = start('framework-app.ts', [framework, String(port), String(routeCap)]);
    t.teardown(() => {
      app.proc.kill('SIGTERM');
      return app.exit(10_000).catch(() => app.proc.kill('SIGKILL'));
    });
    const apiPort = Number((await app.line(/^api \d+/)).split(' ')[1]);
    await app.line(/^workers listening/);
    const status = (path: string) => getJson(`http://127.0.0.1:${apiPort}/status/${path}`);

    const sockets = new Set<Socket>();
    const agent = new Agent({ keepAlive: true, maxSockets: 2 });
    const paths = [...Array.from({ length: 12 }, (_, i) => `/users/${i % 4}`), '/teapot', '/teapot', '/nowhere'];
    const codes = await Promise.all([send(port, agent, paths.slice(0, 8), sockets), send(port, agent, paths.slice(8), sockets)]);
    t.same(codes.flat().sort(), [...Array(12).fill(200), 404, 418, 418].sort(), 'the app answered');
    // A request whose socket the app destroys: discarded, its connection closed.
    const dropped = await send(port, agent, ['/drop'], sockets);
    t.same(dropped, [0], 'the dropped request got no answer');
    const read = () => [...sockets].reduce((a, s) => a + s.bytesRead, 0);
    const written = () => [...sockets].reduce((a, s) => a + s.bytesWritten, 0);
    const clientSent = written();
    const clientGot = read();
    agent.destroy();

    const total = paths.length + 1;
    t.ok(
      await eventually(async () => {
        const z = (await status('http/server_zones/site')) as any;
        return z.requests?.total === total && z.requests.processing === 0;
      }, 10_000),
      'the server zone counted every request, none left processing',
    );
    const site = await status('http/server_zones/site');
    t.same(site.requests, { total, processing: 0, discarded: 1 }, 'requests, with the dropped one discarded');
    t.same(site.responses, { 200: 12, 404: 1, 418: 2 }, 'responses by code');
    t.same(site.data, { received: clientSent, sent: clientGot }, `exact bytes: the client wrote ${clientSent} and read ${clientGot} on its sockets`);
    const buckets = site.histograms?.response_time;
    t.ok(buckets && Object.values(buckets.buckets ?? buckets).length > 0, 'a response time histogram');

    const routes = await status('http/location_zones');
    if (framework === 'node') {
      // node:http has no router: this app names zones by path, and the cap of 3 holds.
      const made = Object.keys(routes).filter((k) => k !== 'routes');
      t.equal(made.length, 3, `three zones made (${made.join(', ')}), the cap`);
      const counted = Object.values(routes as Record<string, any>).reduce((a, z) => a + z.requests.total, 0);
      t.equal(counted, total, 'every request in a route zone, the ones past the cap in "routes"');
      t.ok(routes.routes.requests.total > 0, 'the overflow zone counted the rest');
    } else {
      t.same(routes['/users/:id']?.requests, { total: 12, discarded: 0 }, 'the route zone is the route, not the path');
      t.same(routes['/users/:id']?.responses, { 200: 12 });
      t.same(routes['/teapot']?.responses, { 418: 2 });
      t.same(routes['/drop']?.requests, { total: 1, discarded: 1 }, 'a dropped request counts as discarded in its route');
      t.notOk(Object.keys(routes).some((k) => k.includes('nowhere')), 'a request no route took makes no zone');
      t.notOk(Object.keys(routes).some((k) => k.startsWith('/status') || k.startsWith('/config')), 'nor does the API');
      // The API mounted in the worker answers the same tree.
      const viaWorker = await getJson(`http://127.0.0.1:${port}/status/http/server_zones/site/responses`);
      t.same(viaWorker, { 200: 12, 404: 1, 418: 2 }, 'the API mounted in the app answers too');
    }
    const conns = await status('connections');
    t.equal(conns.accepted, sockets.size + (framework === 'node' ? 0 : 1), `connections accepted (${conns.accepted})`);
    t.ok(await eventually(async () => (await status('connections')).active + (await status('connections')).idle <= (framework === 'node' ? 0 : 1), 5000), 'the closed connections are neither active nor idle');
    const workers = await status('workers');
    t.equal(Object.keys(workers).length, 2, 'both workers sample their runtime');
  });
}

t.test("apiListener is Express middleware as it is: app.use(apiListener(handler)) serves, and passes other paths on", async (t) => {
  const { default: express } = await import('express');
  const { Status } = await import('../../src/metrics/status.js');
  const { createApi } = await import('../../src/api/index.js');
  const { apiListener } = await import('../../src/transport/http.js');
  const status = Status.create({ http: { serverZones: [{ name: 'site' }] } }, { workers: 1, writer: true, instance: `mw${process.pid}` });
  t.teardown(() => status.remove());
  const listener = apiListener(createApi({ status }));
  t.equal(listener.length, 3, 'a function of three parameters: Express takes one of four for an error handler');
  const app = express();
  app.use(listener);
  app.get('/hello', (_req, res) => void res.send('hi'));
  const [port] = await freePorts(1);
  const server = app.listen(port, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const zone = await getJson(`http://127.0.0.1:${port}/status/http/server_zones/site/requests`);
  t.same(zone, { total: 0, processing: 0, discarded: 0 }, 'the API answers through Express');
  t.equal(await (await fetch(`http://127.0.0.1:${port}/hello`)).text(), 'hi', 'other paths reach the app');
});
