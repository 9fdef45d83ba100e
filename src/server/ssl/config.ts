// The ssl module's directives (ngx_http_ssl_module), composed into the loader's table by
// config/directives.ts:
//
//   ssl_certificate <file>; ssl_certificate_key <file>;   server
//   ssl_handshake_timeout <time>;                           server
import { define, milliseconds, type DirectiveSpec } from '../config/spec.js';
import { confFile } from '../config/files.js';

export const sslDirectives: Readonly<Record<string, DirectiveSpec>> = {
  ssl_certificate: define({
    contexts: ['server'],
    args: [1, 1],
    apply(d, server, c) {
      server.sslCertificate = confFile(d, c);
    },
  }),

  ssl_certificate_key: define({
    contexts: ['server'],
    args: [1, 1],
    apply(d, server, c) {
      server.sslCertificateKey = confFile(d, c);
    },
  }),

  // How long a TLS handshake may take (nginx 1.25's directive, default 60s): a client that
  // stalls it is counted in `ssl.timedout`.
  ssl_handshake_timeout: define({
    contexts: ['server'],
    args: [1, 1],
    apply(d, server, c) {
      const ms = milliseconds(d.args[0]);
      if (ms === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
      else server.sslHandshakeTimeout = ms;
    },
  }),
};
