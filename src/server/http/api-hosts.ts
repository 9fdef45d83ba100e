// Which Host headers a server's API locations answer: the names the server block itself
// accepts. A page that rebinds its own domain to this machine sends that domain as Host,
// which is none of them.
import type { ApiRequest } from '../../api/types.js';
import { LOOPBACK_NAMES, splitHost } from '../../api/origin.js';
import type { VirtualServerConfig } from '../config/model.js';
import { isLoopback } from '../inet.js';
import { ServerNames } from './server-names.js';

const WILDCARDS = new Set(['0.0.0.0', '::', '*']);

/** An address as it appears in a Host header: IPv6 in brackets. */
const hostForm = (address: string) => (address.includes(':') ? `[${address.toLowerCase()}]` : address);

/**
 * The Host rule of one server's API locations. A name is accepted when the server's
 * `server_name` matches it, when it is an address the server listens on (or the local
 * address that took the connection, for wildcard listeners), or, on a loopback
 * listener, when it is `localhost`, `127.0.0.1` or `[::1]`; with a port, that port must be
 * one it listens on. Admin listeners check every request. A data-plane server checks only
 * writes: its reads are answered for any Host that reaches it, as nginx's default server
 * answers Hosts no server_name matches.
 */
export function apiHostRule(server: VirtualServerConfig): (host: string, request: ApiRequest, write: boolean) => boolean {
  const names = new ServerNames([server], server.listens[0] ?? { host: '0.0.0.0', port: 0 });
  const ports = new Set(server.listens.map((l) => l.port));
  const addresses = new Set(server.listens.filter((l) => !WILDCARDS.has(l.host)).map((l) => hostForm(l.host)));
  const loopbackListener = server.listens.some((l) => isLoopback(l.host));
  return (host, request, write) => {
    if (!server.admin && !write) return true;
    const h = splitHost(host);
    if (h === undefined) return false;
    if (h.port !== undefined && !ports.has(h.port)) return false;
    if (names.find(h.name) !== undefined || addresses.has(h.name)) return true;
    if (request.address && h.name === hostForm(request.address)) return true;
    return (loopbackListener || isLoopback(request.address)) && LOOPBACK_NAMES.has(h.name);
  };
}
