// How the conformance table reaches the API: straight through the handler, and through
// each transport on a loopback port.
import { Agent, request } from 'node:http';
import { bodyText, type ApiHandler } from '../../src/api/index.js';
import { startTransport, type TransportKind } from '../transport/harness.js';

export interface Reply {
  status: number;
  /** Lower-case header names. */
  headers: Record<string, string>;
  body: string;
}

export interface Fetch {
  (path: string, query?: string, method?: string): Promise<Reply>;
  close(): Promise<void>;
}

export interface Transport {
  readonly name: string;
  start(handler: ApiHandler): Promise<Fetch>;
}

const direct: Transport = {
  name: 'handler',
  async start(handler) {
    const get = async (path: string, query = '', method = 'GET'): Promise<Reply> => {
      const r = handler({ method, path, query, address: '127.0.0.1' });
      if (!r) return { status: 404, headers: {}, body: '' };
      return { status: r.status, headers: Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k.toLowerCase(), v])), body: bodyText(r) };
    };
    return Object.assign(get, { close: async () => {} });
  },
};

/** A transport on a loopback port, asked over HTTP/1.1 keep-alive connections. */
function overHttp(kind: TransportKind): Transport {
  return {
    name: kind,
    async start(handler) {
      const server = await startTransport(kind, handler);
      const agent = new Agent({ keepAlive: true, maxSockets: 4 });
      const get = (path: string, query = '', method = 'GET') =>
        new Promise<Reply>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port: server.port, path: query ? `${path}?${query}` : path, method, agent, timeout: 10_000 }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (d) => (body += d));
            res.on('end', () => {
              const headers: Record<string, string> = {};
              for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers[k] = v;
              resolve({ status: res.statusCode ?? 0, headers, body });
            });
          });
          req.on('timeout', () => req.destroy(new Error(`${kind}: ${method} ${path} timed out`)));
          req.on('error', reject);
          req.end();
        });
      return Object.assign(get, {
        close: async () => {
          agent.destroy();
          await server.close();
        },
      });
    },
  };
}

export const transports: Transport[] = [direct, overHttp('uws'), overHttp('http')];
