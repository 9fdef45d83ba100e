// `listen ... proxy_protocol` in http: the PROXY protocol header (stream/proxy-protocol.ts
// reads it) is taken off each connection before node:http sees the connection, and its
// source is kept on the socket: `$proxy_protocol_addr`, `$proxy_protocol_port`, and the
// address realip's `real_ip_header proxy_protocol` reads.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { readProxyHeader, type ProxySource } from '../stream/proxy-protocol.js';

const SOURCE = Symbol('zonal.proxy_protocol');
type Proxied = Socket & { [SOURCE]?: ProxySource };

/** The client the connection's PROXY protocol header names; none without one (or UNKNOWN). */
export const proxyProtocolOf = (socket: Socket | undefined): ProxySource | undefined => (socket as Proxied | undefined)?.[SOURCE];

/** A connection of a `proxy_protocol` listen (paused on connect): handed to `server` once
 * its header is read; closed, as nginx closes it, when the header is broken or late. */
export function acceptProxied(server: Server, socket: Socket): void {
  readProxyHeader(socket, (ok, _bytes, source) => {
    if (!ok) return void socket.destroy();
    if (source) (socket as Proxied)[SOURCE] = source;
    // What came after the header, put back by the reader: node:http's parser reads the
    // socket's handle itself, so it is given what is already read as node gives an
    // upgrade's head.
    const rest = socket.read() as Buffer | null;
    server.emit('connection', socket);
    if (rest) socket.emit('data', rest);
    socket.resume();
  });
}
