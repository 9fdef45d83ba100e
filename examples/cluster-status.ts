// A node:cluster app whose two workers record their own HTTP traffic, while the primary
// serves /status/ on a dedicated uWebSockets.js listener. It sends itself some traffic,
// prints what the API answers, and stops; pass --serve to keep it running instead.
//
//   node dist/examples/cluster-status.js [--serve]
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import { connections, createApi, locationZones, serveApi, serverZones, Status, WORKER_SLOT_ENV } from '../src/index.js';

const WORKERS = 2;
const serve = process.argv.includes('--serve');

if (cluster.isPrimary) {
  // What exists: one server zone for the site, one location zone for /api/.
  const status = Status.create({ http: { serverZones: [{ name: 'site' }], locationZones: ['api'] } }, { workers: WORKERS });
  const api = await serveApi({ host: '127.0.0.1', port: serve ? 8081 : 0, handler: createApi({ status }) });

  let ready = 0;
  let dataPort = 0;
  for (let slot = 0; slot < WORKERS; slot++) {
    const worker = cluster.fork({ [WORKER_SLOT_ENV]: String(slot) });
    worker.on('message', async (m: { port: number }) => {
      dataPort = m.port;
      if (++ready < WORKERS) return;
      if (serve) {
        console.log(`site on http://127.0.0.1:${dataPort}/, status on http://127.0.0.1:${api.port}/status/`);
        return;
      }
      // Some traffic: 20 pages, 5 API calls, 3 misses, over keep-alive connections.
      for (const path of [...Array(20).fill('/'), ...Array(5).fill('/api/items'), '/nope', '/nope', '/nope'])
        await (await fetch(`http://127.0.0.1:${dataPort}${path}`)).text();
      // A worker counts a response once it is written out, which can be just after the
      // client has it: wait (a bounded moment) until every request sent is counted.
      const site = `http://127.0.0.1:${api.port}/status/http/server_zones/site/requests`;
      for (let i = 0; i < 200; i++) {
        const r = (await (await fetch(site)).json()) as { total: number; processing: number };
        if (r.total === 28 && r.processing === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      for (const path of ['/status/http/', '/status/connections'])
        console.log(`GET ${path}\n${await (await fetch(`http://127.0.0.1:${api.port}${path}`)).text()}`);
      api.close();
      for (const w of Object.values(cluster.workers ?? {})) w?.kill();
    });
  }
} else {
  // A worker: it attaches to the primary's zones and records its own traffic.
  const status = Status.attach();
  const conns = connections(status);
  const site = serverZones.recorder(status, 'site');
  const apiZone = locationZones.recorder(status, 'api');

  // A connection is active while it carries a request, idle while it waits for the next.
  const idle = new WeakSet<object>();
  const server = createServer((req, res) => {
    if (idle.delete(req.socket)) conns.busy();
    const zone = req.url?.startsWith('/api/') ? apiZone : undefined;
    site.requestStarted();
    zone?.requestStarted();
    const code = req.url === '/' || zone ? 200 : 404;
    const body = code === 200 ? `hello from worker ${process.env[WORKER_SLOT_ENV]}\n` : 'not found\n';
    res.writeHead(code, { 'Content-Type': 'text/plain' }).end(body);
    // Bytes as the connection saw them, request and response with their headers: what
    // the socket counted since the previous request on this keep-alive connection, once
    // the response is written out. A client may hold its answer a moment before that.
    res.on('finish', () => {
      const socket = req.socket;
      const before = counted.get(socket) ?? { read: 0, written: 0 };
      const received = socket.bytesRead - before.read;
      const sent = socket.bytesWritten - before.written;
      counted.set(socket, { read: socket.bytesRead, written: socket.bytesWritten });
      site.responseSent(code, received, sent);
      zone?.responseSent(code, received, sent);
      if (!socket.destroyed) {
        idle.add(socket);
        conns.idle();
      }
    });
  });
  const counted = new WeakMap<object, { read: number; written: number }>();
  server.on('connection', (socket) => {
    conns.accepted();
    socket.on('close', () => conns.closed(idle.has(socket)));
  });
  server.listen(serve ? 8080 : 0, '127.0.0.1', () => {
    const address = server.address();
    process.send!({ port: typeof address === 'object' && address ? address.port : 0 });
  });
}
