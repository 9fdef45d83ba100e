// How the conformance table reaches the API: straight through the handler, and through
// each transport on a loopback port.
import type { ApiHandler } from '../../src/api/index.js';

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
      return { status: r.status, headers: Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k.toLowerCase(), v])), body: r.body };
    };
    return Object.assign(get, { close: async () => {} });
  },
};

export const transports: Transport[] = [direct];
