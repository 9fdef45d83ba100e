// Three zonal instances against one etcd cluster (issue 34): what the config_store tests
// share. Each instance has two workers, an `api` location on its data plane (its writes
// go through a worker to the primary) and an admin listener (the primary's own API), a
// proxied location in front of a real backend, and its cache file in a folder that
// outlives it, so that a restart starts from it.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EtcdCluster } from '../../helpers/etcd.js';
import { freePorts, getJson, Zonal } from '../zonal.js';

export interface Instance {
  zonal: Zonal;
  readonly data: number;
  readonly admin: number;
  readonly cache: string;
}

/** A backend that answers its port. */
export async function backend(): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => res.end(String((server.address() as { port: number }).port)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port };
}

export const config = (etcd: EtcdCluster, prefix: string, i: { data: number; admin: number; cache: string }, upstream: number, timeout = '1s') => `
worker_processes 2;
config_store etcd://${etcd.endpoints}${prefix} timeout=${timeout} cache=${i.cache};
http {
    upstream u {
        zone u 4m;
        server 127.0.0.1:${upstream};
    }
    server {
        listen 127.0.0.1:${i.data};
        location /api/ { api /; }
        location / { proxy_pass http://u; }
    }
    server {
        listen 127.0.0.1:${i.admin} admin;
        location / { api /; }
    }
}
`;

export class Fleet {
  readonly instances: Instance[] = [];
  private constructor(
    readonly etcd: EtcdCluster,
    readonly prefix: string,
    readonly dir: string,
    readonly upstream: number,
  ) {}

  static async start(etcd: EtcdCluster, prefix: string, upstream: number, n = 3, timeout = '1s'): Promise<Fleet> {
    const fleet = new Fleet(etcd, prefix, mkdtempSync(join(tmpdir(), 'zonal-fleet-')), upstream);
    const ports = await freePorts(2 * n);
    for (let k = 0; k < n; k++) {
      const spec = { data: ports[2 * k], admin: ports[2 * k + 1], cache: join(fleet.dir, `cache-${k}.json`) };
      fleet.instances.push({ ...spec, zonal: await Zonal.start({ 'zonal.conf': config(etcd, prefix, spec, upstream, timeout) }) });
    }
    fleet.timeout = timeout;
    return fleet;
  }

  private timeout = '1s';

  /** Stops instance `k` and starts it again with the same ports and cache file. */
  async stopInstance(k: number): Promise<void> {
    await this.instances[k].zonal.stop();
  }

  async startInstance(k: number): Promise<void> {
    const i = this.instances[k];
    i.zonal = await Zonal.start({ 'zonal.conf': config(this.etcd, this.prefix, i, this.upstream, this.timeout) });
  }

  async stop(): Promise<void> {
    await Promise.all(this.instances.map((i) => i.zonal.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The peers instance `i` shows, through its data plane (a worker). */
export async function servers(i: Instance): Promise<Record<string, unknown>> {
  const got = await getJson(`http://127.0.0.1:${i.data}/api/config/http/upstreams/u/servers`);
  return got.body;
}

/** A /config write on instance `i`: through its data plane (`plane`, a worker forwards it
 * to its primary) or its admin listener (the primary answers). */
export async function write(
  i: Instance,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  via: 'plane' | 'admin' = 'plane',
): Promise<{ status: number; body: any; etag: string | null }> {
  const base = via === 'plane' ? `http://127.0.0.1:${i.data}/api` : `http://127.0.0.1:${i.admin}`;
  const res = await fetch(`${base}/config/http/upstreams/u/${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed, etag: res.headers.get('etag') };
}

/** /status/config_store of instance `i`, read through a worker. */
export async function storeStatus(i: Instance): Promise<any> {
  return (await getJson(`http://127.0.0.1:${i.data}/api/status/config_store`)).body;
}

/** Polls until `probe` holds; the milliseconds it took, or -1 after `ms`. */
export async function until(probe: () => Promise<boolean>, ms = 5000): Promise<number> {
  const start = performance.now();
  for (let n = 0; n < 100_000; n++) {
    if (await probe()) return performance.now() - start;
    if (performance.now() - start > ms) return -1;
    await new Promise((r) => setTimeout(r, 2));
  }
  return -1;
}

export function percentile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
