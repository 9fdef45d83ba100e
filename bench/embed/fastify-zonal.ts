// The Fastify 5 app of `npm run bench -- embed` with zonal (fastify-none.ts plus the
// lines marked `// metrics`): serve() in the primary creates the shared status and serves
// its API, /status/?format=prometheus included; the plugin records each worker's
// connections, server zone and a zone per route (/users/:id).
import cluster from 'node:cluster';
import Fastify from 'fastify';
import { serve, zonal } from '../../src/embed/fastify.js'; // metrics

const [port, metricsPort] = process.argv.slice(2).map(Number);

if (cluster.isPrimary) {
  await serve({ workers: 2, port: metricsPort }); // metrics
  for (let i = 0; i < 2; i++) cluster.fork();
} else {
  const app = Fastify();
  await app.register(zonal, { zone: 'site' }); // metrics
  app.get('/users/:id', async (req) => ({ id: (req.params as { id: string }).id, name: 'user' }));
  await app.listen({ port, host: '127.0.0.1' });
}
