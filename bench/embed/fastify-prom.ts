// The Fastify 5 app of `npm run bench -- embed` with prom-client and fastify-metrics
// (fastify-none.ts plus the lines marked `// metrics`), in prom-client's cluster mode: each
// worker records into its registry (fastify-metrics' defaults: route metrics by method,
// route and status code, a histogram and a summary, and prom-client's default metrics),
// and the primary's AggregatorRegistry asks every worker for its metrics over IPC at each
// scrape and sums them. The worker's own /metrics endpoint is off: it would show one
// worker's half.
import cluster from 'node:cluster';
import { createServer } from 'node:http'; // metrics
import Fastify from 'fastify';
import metricsPlugin from 'fastify-metrics'; // metrics
import { AggregatorRegistry } from 'prom-client'; // metrics

const [port, metricsPort] = process.argv.slice(2).map(Number);

// Built in every process, as prom-client's cluster example does: a worker answers the
// primary's requests for its metrics only once it has one.
const registry = new AggregatorRegistry(); // metrics

if (cluster.isPrimary) {
  createServer(async (_req, res) => { // metrics
    try { // metrics
      const text = await registry.clusterMetrics(); // metrics
      res.writeHead(200, { 'Content-Type': registry.contentType }).end(text); // metrics
    } catch (e) { // metrics
      res.writeHead(500).end(String(e)); // metrics
    } // metrics
  }).listen(metricsPort, '127.0.0.1'); // metrics
  for (let i = 0; i < 2; i++) cluster.fork();
} else {
  const app = Fastify();
  await app.register(metricsPlugin.default, { endpoint: null }); // metrics
  app.get('/users/:id', async (req) => ({ id: (req.params as { id: string }).id, name: 'user' }));
  await app.listen({ port, host: '127.0.0.1' });
}
