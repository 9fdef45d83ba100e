// The variables of nginx's proxy module.
import type { VariableTable } from '../../api/variables.js';
import { clientAddress, header, type HttpContext } from '../http/variables.js';

export const proxyVariables: VariableTable<HttpContext> = {
  names: {
    /** The upstream's name, or the host and port of `proxy_pass`. */
    proxy_host: (c) => c.proxyHost,
    proxy_port: (c) => c.proxyPort,
    /** X-Forwarded-For as the client sent it, with the client's address after. */
    proxy_add_x_forwarded_for: (c) => {
      const prior = header(c.req, 'x-forwarded-for');
      return prior ? `${prior}, ${clientAddress(c.req)}` : clientAddress(c.req);
    },
  },
};
