// Outgoing calls as an upstream: the two workers of a node:cluster app call a backend
// service with fetch('http://backend/...') through zonal's balancer; the primary serves
// the API, marks a peer down through /config, and prints what /status shows of the peers.
//
//   node dist/examples/undici-upstream.js
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetch } from 'undici';
import { createApi } from '../src/api/index.js';
import { upstreamDispatcher } from '../src/embed/undici.js';
import { WORKER_SLOT_ENV } from '../src/engine/index.js';
import { Status } from '../src/metrics/status.js';
import { apiListener } from '../src/transport/http.js';

const WORKERS = 2;

/** Listens on `host` (any free port) and says where. */
const listen = (server: ReturnType<typeof createServer>, host: string) =>
  new Promise<string>((resolve) => server.listen(0, host, () => resolve(`${host}:${(server.address() as AddressInfo).port}`)));

if (cluster.isPrimary) {
  // The service's two instances (here in this process): each says which it is.
  const instances = ['127.0.0.2', '127.0.0.3'].map((host) => createServer((_req, res) => res.end(`hello from ${host}\n`)));
  const [a, b] = await Promise.all(instances.map((server, i) => listen(server, `127.0.0.${i + 2}`)));
  // The upstream `backend`, a weight of 3 on the first: workers balance their calls over it.
  const status = Status.create({ http: { upstreams: [{ name: 'backend', peers: [{ server: a, weight: 3 }, { server: b }] }] } }, { workers: WORKERS });
  const admin = createServer(apiListener(createApi({ status })));
  const api = `http://${await listen(admin, '127.0.0.1')}`;

  const workers = Array.from({ length: WORKERS }, (_, slot) => cluster.fork({ [WORKER_SLOT_ENV]: String(slot) }));
  /** The next message of each worker. */
  const heard = () => Promise.all(workers.map((w) => new Promise((message) => w.once('message', message))));
  /** Each worker makes `calls` calls; resolves when all are done. */
  const round = (calls: number) => {
    const done = heard();
    for (const w of workers) w.send(calls);
    return done;
  };
  await heard(); // ready

  await round(8);
  // The first instance goes down for maintenance: the next calls avoid it at once.
  const patched = await fetch(`${api}/config/http/upstreams/backend/servers/${a}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ down: true }),
  });
  console.log('PATCH', patched.status, await patched.text());
  await round(4);

  const peers = (await (await fetch(`${api}/status/http/upstreams/backend/peers`)).json()) as Record<string, { state: string; selected: { total: number }; responses: object; data: object }>;
  for (const [name, p] of Object.entries(peers))
    console.log(name, JSON.stringify({ state: p.state, selected: p.selected.total, responses: p.responses, data: p.data }));
  for (const w of workers) w.kill();
  for (const server of [...instances, admin]) server.close();
} else {
  // A worker: attached to the primary's zones, one dispatcher for the upstream.
  const status = Status.attach();
  const dispatcher = upstreamDispatcher(status, 'backend');
  process.on('message', async (calls: number) => {
    for (let i = 0; i < calls; i++) await (await fetch('http://backend/hello', { dispatcher })).text();
    process.send!('done');
  });
  process.send!('ready');
}
