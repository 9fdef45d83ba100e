// The configuration's listen addresses, each with the servers behind it in configuration
// order: what the workers' data plane and the primary's admin listeners both serve.
import type { ListenConfig, ServerConfig, VirtualServerConfig } from './config/model.js';

/** What net.Server.listen() takes for a listen: a path for `unix:<path>`, else the host and port. */
export const listenOptions = (listen: Pick<ListenConfig, 'host' | 'port'>): { path: string } | { host: string; port: number } =>
  listen.host.startsWith('unix:') ? { path: listen.host.slice(5) } : { host: listen.host, port: listen.port };

export interface ListenGroup {
  /** The first listen written for the address (its flags are the same in every server),
   * with `ssl` when any server's listen of it has it (nginx's merge). */
  listen: ListenConfig;
  /** `host:port`. */
  readonly key: string;
  readonly servers: VirtualServerConfig[];
}

/** The admin listen addresses (`admin`) or the others, with their servers. */
export function listenGroups(config: ServerConfig, admin: boolean): ListenGroup[] {
  const out = new Map<string, ListenGroup>();
  for (const server of config.http?.servers ?? []) {
    if (server.admin !== admin) continue;
    for (const listen of server.listens) {
      const key = `${listen.host}:${listen.port}`;
      let group = out.get(key);
      if (!group) out.set(key, (group = { listen, key, servers: [] }));
      else if (listen.ssl && !group.listen.ssl) group.listen = { ...group.listen, ssl: true };
      if (!group.servers.includes(server)) group.servers.push(server);
    }
  }
  return [...out.values()];
}
