// Starts the API on either transport, on 127.0.0.1 with a port the system picks, so one
// table of requests can run against both. For 'http' a node:http server mounts
// apiListener without `next`: paths no API mount matches get the JSON 404, as on uWS.
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { serveApi, type ApiHandler } from '../../src/transport/uws.js';
import { apiListener } from '../../src/transport/http.js';

export type TransportKind = 'uws' | 'http';
export const transports: readonly TransportKind[] = ['uws', 'http'];

export interface RunningTransport {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  url: string;
  port: number;
  /** Stops listening and closes open connections (keep-alive ones included). */
  close(): Promise<void>;
}

const host = '127.0.0.1';

/** `onError` receives what the handler throws (default: a process warning). */
export async function startTransport(kind: TransportKind, handler: ApiHandler, onError?: (err: unknown) => void): Promise<RunningTransport> {
  if (kind === 'uws') {
    const server = await serveApi({ host, port: 0, handler, ...(onError ? { onError } : {}) });
    return { url: `http://${host}:${server.port}`, port: server.port, close: async () => server.close() };
  }
  const listener = apiListener(handler, onError ? { onError } : {});
  const server = createServer((req, res) => listener(req, res));
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
