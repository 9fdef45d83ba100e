// A node:http app on two cluster workers, instrumented by zonal in three lines (marked):
// the primary serves the status of every worker, and each worker records its traffic,
// connections and exact bytes in the server zone "app" (node:http has no router: give
// instrument() a `route` function to have route zones).
//
//   node dist/examples/http-app.js        then: curl 127.0.0.1:3000/
//                                         and:  curl 127.0.0.1:9100/status/http/
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import { instrument, serve } from '../src/index.js'; // zonal: 1/3

const port = Number(process.env.PORT ?? 3000);

if (cluster.isPrimary) {
  await serve({ workers: 2, port: Number(process.env.ZONAL_PORT ?? 9100) }); // zonal: 2/3
  for (let i = 0; i < 2; i++) cluster.fork();
} else {
  const server = createServer((_req, res) => res.end('hello\n'));
  instrument(server); // zonal: 3/3
  server.listen(port, '127.0.0.1', () => console.log(`worker ${process.pid} on 127.0.0.1:${port}`));
}
