// The Express 5 app of `npm run bench -- embed` with prom-client and express-prom-bundle
// (express-none.ts plus the lines marked `// metrics`), in prom-client's cluster mode: each
// worker records into its registry (a histogram by method, normalised path and status
// code; `includePath` maps /users/42 to /users/#val), and the primary's AggregatorRegistry
// asks every worker for its metrics over IPC at each scrape and sums them. autoregister is
// off: a worker's own /metrics would show one worker's half.
import cluster from 'node:cluster';
import { createServer } from 'node:http'; // metrics
import express from 'express';
import promBundle from 'express-prom-bundle'; // metrics
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
  const app = express();
  app.use(promBundle({ includeMethod: true, includePath: true, autoregister: false })); // metrics
  app.get('/users/:id', (req, res) => void res.json({ id: req.params.id, name: 'user' }));
  app.listen(port, '127.0.0.1');
}
