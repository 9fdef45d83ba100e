// What the upstream tests run on loopback: an HTTP backend that counts what it served,
// and a client that opens a new connection for each request, so that both workers of
// the server under test take requests.
import { createServer, request, type Server } from 'node:http';

/** Answers `ok <port>`; a path starting /bad has its connection destroyed unanswered
 * (the proxy's `error`). Counts requests by path. */
export class CountingBackend {
  requests = 0;
  readonly paths = new Map<string, number>();
  private server: Server | undefined;

  constructor(readonly port: number) {}

  start(): Promise<void> {
    const server = createServer((req, res) => {
      this.requests++;
      const path = req.url ?? '';
      this.paths.set(path, (this.paths.get(path) ?? 0) + 1);
      if (path.startsWith('/bad')) return void req.socket.destroy();
      res.end(`ok ${this.port}`);
    });
    this.server = server;
    return new Promise((resolve) => server.listen(this.port, '127.0.0.1', () => resolve()));
  }

  stop(): Promise<void> {
    this.server!.closeAllConnections();
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }
}

/** One GET on a connection of its own: its status and body. Bounded by 10 s. */
export function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} on ${port}: no answer in 10 s`)));
    req.on('error', reject);
    req.end();
  });
}

/** `n` GETs, `parallel` at a time: their statuses, counted. */
export async function many(port: number, path: string, n: number, parallel = 4): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  let next = 0;
  const run = async () => {
    while (next < n) {
      next++;
      const { status } = await get(port, path);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: parallel }, run));
  return statuses;
}
