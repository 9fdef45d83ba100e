// The Express 5 app of `npm run bench -- embed` without metrics: the baseline, and the
// app OpenTelemetry runs unchanged behind its preload (otel-express.ts). Two cluster
// workers (node:cluster's default scheduling) answering GET /users/:id with a small JSON
// body. Arguments: <port> <metrics port> (the metrics port unused here). Every variant is
// this file plus the lines marked `// metrics`, which the benchmark counts as glue.
import cluster from 'node:cluster';
import express from 'express';

const [port] = process.argv.slice(2).map(Number);

if (cluster.isPrimary) {
  for (let i = 0; i < 2; i++) cluster.fork();
} else {
  const app = express();
  app.get('/users/:id', (req, res) => void res.json({ id: req.params.id, name: 'user' }));
  app.listen(port, '127.0.0.1');
}
