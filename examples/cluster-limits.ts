// nginx's limit_req and limit_conn for any node:cluster app, exact across its workers
// without Redis or IPC: the primary creates the limit zones, two node:http workers take
// decisions on them, and the primary serves /status/ on uWebSockets.js. It sends itself
// a burst, prints what the client saw and what the API counted, and stops; pass --serve
// to keep it running instead.
//
//   node dist/examples/cluster-limits.js [--serve]
import cluster from 'node:cluster';
import { createServer, request } from 'node:http';
import { createApi, repairLimitSlot, serveApi, Status, WORKER_SLOT_ENV } from '../src/index.js';

const WORKERS = 2;
const serve = process.argv.includes('--serve');

if (cluster.isPrimary) {
  // The zones: 10 requests a second per client address, and what is in progress per address.
  const status = Status.create({ http: { limitReqs: [{ name: 'perip', rate: 10 }], limitConns: [{ name: 'inflight' }] } }, { workers: WORKERS });
  const api = await serveApi({ host: '127.0.0.1', port: serve ? 8081 : 0, handler: createApi({ status }) });
  let ready = 0;
  for (let slot = 0; slot < WORKERS; slot++) {
    const worker = cluster.fork({ [WORKER_SLOT_ENV]: String(slot) });
    // A worker that dies with requests in progress would hold their counts forever: give
    // them back before its slot is used again.
    worker.on('exit', () => repairLimitSlot(status, slot));
    worker.on('message', async (m: { port: number }) => {
      if (++ready < WORKERS) return;
      if (serve) return console.log(`site on http://127.0.0.1:${m.port}/, status on http://127.0.0.1:${api.port}/status/`);
      // 12 requests at once, each on its own connection, so both workers take some:
      // one passes, five wait in the burst (100 ms apart), six are refused.
      const codes = await Promise.all(Array.from({ length: 12 }, () => get(m.port)));
      const tally: Record<number, number> = {};
      for (const c of codes) tally[c] = (tally[c] ?? 0) + 1;
      console.log(`client: ${JSON.stringify(tally)}`);
      for (const path of ['/status/http/limit_reqs/', '/status/http/limit_conns/'])
        console.log(`GET ${path}\n${await (await fetch(`http://127.0.0.1:${api.port}${path}`)).text()}`);
      api.close();
      for (const w of Object.values(cluster.workers ?? {})) w?.kill();
    });
  }
} else {
  const status = Status.attach();
  const perip = status.limitReq('perip', { burst: 5 });
  const inflight = status.limitConn('inflight', { limit: 20 });

  const server = createServer((req, res) => {
    const address = req.socket.remoteAddress ?? '';
    const decision = perip.take(address);
    if (decision.result === 'rejected' || decision.result === 'exhausted') return void res.writeHead(503).end('slow down\n');
    const release = inflight.acquire(address);
    if (!release) return void res.writeHead(503).end('too many at once\n');
    // Given back as the response ends (the client may send its next request the moment it
    // has this one), or when the client goes away first. Calling it twice is harmless.
    res.once('close', release);
    // A delayed request waits on a timer; the worker serves others meanwhile.
    setTimeout(() => {
      release();
      res.end(`hello from worker ${process.env[WORKER_SLOT_ENV]}\n`);
    }, decision.delay);
  });
  server.listen(serve ? 8080 : 0, '127.0.0.1', () => {
    const address = server.address();
    process.send!({ port: typeof address === 'object' && address ? address.port : 0 });
  });
}

function get(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    })
      .on('error', reject)
      .end();
  });
}
