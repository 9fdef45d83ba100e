// The variables of nginx's realip module: the connection's own address and port, what
// `$remote_addr` and `$remote_port` were before realip changed them.
import { unmapped, type VariableTable } from '../../api/variables.js';
import type { HttpContext } from '../http/variables.js';

export const realipVariables: VariableTable<HttpContext> = {
  names: {
    realip_remote_addr: (c) => unmapped(c.req.socket.remoteAddress ?? ''),
    realip_remote_port: (c) => String(c.req.socket.remotePort ?? ''),
  },
};
