// ngx_stream_ssl_preread_module: the client's TLS ClientHello read before the proxy, and
// left where it is for the peer, which terminates TLS itself: its server name (SNI), the
// protocol versions and the ALPN protocols it offers become $ssl_preread_server_name,
// $ssl_preread_protocol and $ssl_preread_alpn_protocols, so that `proxy_pass` (or a map)
// can route by them.
import type { VariableTable } from '../../api/variables.js';
import type { ClientHello } from '../ssl/client-hello.js';
import type { StreamRecord } from './variables.js';

declare module './variables.js' {
  interface StreamRecord {
    /** The ClientHello `ssl_preread` read. */
    readonly preread?: ClientHello;
  }
}

export const sslPrereadVariables: VariableTable<StreamRecord> = {
  names: {
    ssl_preread_server_name: (r) => r.preread?.serverName ?? '',
    ssl_preread_protocol: (r) => r.preread?.protocol ?? '',
    ssl_preread_alpn_protocols: (r) => r.preread?.alpn ?? '',
  },
};
