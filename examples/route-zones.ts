// Route zones made at run time: a node:cluster app whose two workers count each route in
// a location zone of its own, made the first time either worker serves the route, with
// no route declared in the primary; at most 3 of them, the rest in the zone "routes".
// It sends itself some traffic on fresh connections (so that both workers serve), prints
// /status/http/location_zones/, and stops.
//
//   node dist/examples/route-zones.js
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import { bodyText, createApi } from '../src/api/index.js';
import { locationZones } from '../src/metrics/http-zones.js';
import { Status } from '../src/metrics/status.js';
import { WORKER_SLOT_ENV } from '../src/engine/index.js';

const WORKERS = 2;

if (cluster.isPrimary) {
  // The primary declares the group, not its zones: up to 3 route zones, then "routes".
  const status = Status.create({ http: { locationZoneGroups: [{ name: 'routes', count: 3 }] } }, { workers: WORKERS });
  let ready = 0;
  for (let slot = 0; slot < WORKERS; slot++) {
    const worker = cluster.fork({ [WORKER_SLOT_ENV]: String(slot) });
    worker.on('message', async (m: { port: number }) => {
      if (++ready < WORKERS) return;
      const paths = ['/users/1', '/users/2', '/orders/7', '/items', '/items', '/items', '/cart', '/cart', '/nope'];
      for (const path of paths) await (await fetch(`http://127.0.0.1:${m.port}${path}`, { headers: { connection: 'close' } })).text();
      const api = createApi({ status });
      console.log(bodyText(api({ method: 'GET', path: '/status/http/location_zones/', query: '', address: '127.0.0.1' })!));
      for (const w of Object.values(cluster.workers ?? {})) w?.kill();
    });
  }
} else {
  // A worker: the group's recorder per route, the route as a router would name it.
  const routes = locationZones.group(Status.attach(), 'routes');
  const table: Array<[RegExp, string]> = [
    [/^\/users\/\d+$/, '/users/:id'],
    [/^\/orders\/\d+$/, '/orders/:id'],
    [/^\/items$/, '/items'],
    [/^\/cart$/, '/cart'],
  ];
  const server = createServer((req, res) => {
    const route = table.find(([re]) => re.test(req.url ?? ''))?.[1];
    const code = route ? 200 : 404;
    const body = route ? `${route}\n` : 'not found\n';
    // Made at the route's first request in any worker; "routes" once 3 are made.
    const zone = route ? routes.recorder(route) : undefined;
    zone?.requestStarted();
    // Counted before the answer goes out (this example counts body bytes only).
    zone?.responseSent(code, 0, Buffer.byteLength(body));
    res.writeHead(code, { 'Content-Type': 'text/plain' }).end(body);
  });
  // Both workers listen on one port (node:cluster shares it): the primary needs one.
  server.listen(0, '127.0.0.1');
  server.once('listening', () => {
    const port = (server.address() as { port: number }).port;
    process.send!({ port });
  });
}
