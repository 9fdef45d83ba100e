// The Fastify 5 app of `npm run bench -- embed` without metrics: the baseline, and the
// app OpenTelemetry runs unchanged behind its preload (otel-fastify.ts). Two cluster
// workers (node:cluster's default scheduling) answering GET /users/:id with a small JSON
// body. Arguments: <port> <metrics port> (the metrics port unused here). Every variant is
// this file plus the lines marked `// metrics`, which the benchmark counts as glue.
import cluster from 'node:cluster';
import Fastify from 'fastify';

const [port] = process.argv.slice(2).map(Number);

if (cluster.isPrimary) {
  for (let i = 0; i < 2; i++) cluster.fork();
} else {
  const app = Fastify();
  app.get('/users/:id', async (req) => ({ id: (req.params as { id: string }).id, name: 'user' }));
  await app.listen({ port, host: '127.0.0.1' });
}
