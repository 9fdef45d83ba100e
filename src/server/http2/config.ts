// ngx_http_v2_module, as far as zonal goes with it: its data plane is node:http, HTTP/1.1.
//
//   http2 on|off;                  http, server (nginx 1.25.1)
//   listen ... http2;              the listen's parameter (nginx before 1.25.1)
//
// Both are accepted with one warning: an HTTPS listener offers `http/1.1` alone in ALPN,
// and HTTP/1.1 is what a client that offers h2 and http/1.1 (every browser, curl) goes on
// with, so the configuration runs unchanged and no client meets a difference it can break
// on. HTTP/3 is refused (listen's `quic`, the `http3` directives): a client that was told
// to use it would find no UDP listener at all.
import type { Checker } from '../config/levels.js';
import type { Origin } from '../config/model.js';
import { define, onOff, type DirectiveSpec } from '../config/spec.js';

/** The one warning for HTTP/2, at the first place that asks for it. */
export function warnHttp2(at: Origin, c: Checker): void {
  c.warn(at, 'zonal serves HTTP/1.1: clients that offer h2 use HTTP/1.1 ("http2" ignored)');
}

/** The message for listen's HTTP/3 parameters. */
export const HTTP3_REFUSED = (param: string) => `invalid parameter "${param}": zonal serves HTTP/1.1 over TCP, HTTP/3 (QUIC) is not implemented`;

export const http2Directives: Readonly<Record<string, DirectiveSpec>> = {
  http2: define({
    contexts: ['http', 'server'],
    args: [1, 1],
    apply(d, _level, c) {
      if (onOff(d, c)) warnHttp2(d.origin, c);
    },
  }),
};
