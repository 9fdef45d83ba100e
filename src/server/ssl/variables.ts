// The variables of nginx's ssl module, as node's TLS socket tells them: empty on a plain
// connection. ($ssl_session_id is left out: node gives the session only as its encoded
// ticket, not the id nginx prints.)
import type { TLSSocket } from 'node:tls';
import type { VariableTable } from '../../api/variables.js';
import type { HttpContext } from '../http/variables.js';

/** The TLS socket of an https request, undefined for plain http. */
const tls = (c: HttpContext) => ((c.req.socket as { encrypted?: boolean }).encrypted ? (c.req.socket as TLSSocket & { servername?: string | false }) : undefined);

export const sslVariables: VariableTable<HttpContext> = {
  names: {
    ssl_protocol: (c) => tls(c)?.getProtocol() ?? undefined,
    ssl_cipher: (c) => tls(c)?.getCipher()?.name,
    ssl_server_name: (c) => tls(c)?.servername || undefined,
    ssl_session_reused: (c) => {
      const socket = tls(c);
      return socket ? (socket.isSessionReused() ? 'r' : '.') : '';
    },
  },
};
