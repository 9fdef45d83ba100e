// The Express 5 app of `npm run bench -- embed` with zonal (express-none.ts plus the
// lines marked `// metrics`): serve() in the primary creates the shared status and serves
// its API, /status/?format=prometheus included; the middleware records each worker's
// connections, server zone and a zone per route (/users/:id).
import cluster from 'node:cluster';
import express from 'express';
import { serve, zonal } from '../../src/embed/express.js'; // metrics

const [port, metricsPort] = process.argv.slice(2).map(Number);

if (cluster.isPrimary) {
  await serve({ workers: 2, port: metricsPort }); // metrics
  for (let i = 0; i < 2; i++) cluster.fork();
} else {
  const app = express();
  app.use(zonal({ zone: 'site' })); // metrics
  app.get('/users/:id', (req, res) => void res.json({ id: req.params.id, name: 'user' }));
  app.listen(port, '127.0.0.1');
}
