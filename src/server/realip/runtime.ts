// realip at run time (ngx_http_realip_handler): a request from a trusted address gives
// its client's address in a header (or its PROXY protocol header), and that address is
// the request's `$remote_addr` from then on, for access rules, limits, ip_hash and geo.
import type { IncomingMessage } from 'node:http';
import type { Inherited } from '../config/model.js';
import { header, realAddressOf, setRealAddress } from '../http/variables.js';
import { forwardedAddress, trustedSet } from './forwarded.js';
import { proxyProtocolOf } from '../http/proxy-protocol.js';

/** Finds a request's client address, once: a place's realip, when it has one. */
export type Realip = (req: IncomingMessage) => void;

export function realipOf(block: Inherited): { realip?: Realip } {
  const config = block.realip;
  if (!config) return {};
  const trusted = trustedSet(config.from, config.origin);
  const { header: name, recursive } = config;
  return {
    realip: (req) => {
      if (realAddressOf(req)) return;
      const proxied = name === 'proxy_protocol' ? proxyProtocolOf(req.socket) : undefined;
      const value = proxied ? proxied.address : name === 'proxy_protocol' ? undefined : header(req, name);
      if (value === undefined) return;
      // A Unix-domain client has no address: only `unix:` trusts it.
      const found = forwardedAddress(req.socket.remoteAddress, value, trusted, recursive);
      // The PROXY protocol's port is the client's (nginx).
      if (found) setRealAddress(req, proxied ? { address: found.address, port: proxied.port } : found);
    },
  };
}
