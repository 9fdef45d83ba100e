// A Fastify 5 app on two cluster workers, instrumented by zonal in three lines (marked):
// the primary serves the status of every worker, and each worker records its traffic,
// connections, exact bytes and a zone per route (/users/:id).
//
//   node dist/examples/fastify-app.js     then: curl 127.0.0.1:3000/users/7
//                                         and:  curl 127.0.0.1:9100/status/http/
import cluster from 'node:cluster';
import Fastify from 'fastify';
import { serve, zonal } from '../src/embed/fastify.js'; // zonal: 1/3

const port = Number(process.env.PORT ?? 3000);

if (cluster.isPrimary) {
  await serve({ workers: 2, port: Number(process.env.ZONAL_PORT ?? 9100) }); // zonal: 2/3
  for (let i = 0; i < 2; i++) cluster.fork();
} else {
  const app = Fastify();
  await app.register(zonal); // zonal: 3/3
  app.get('/users/:id', async (req) => ({ id: (req.params as { id: string }).id }));
  await app.listen({ port, host: '127.0.0.1' });
  console.log(`worker ${process.pid} on 127.0.0.1:${port}`);
}
