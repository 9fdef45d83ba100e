// The variables of a probe's `test=`: what the peer answered the probe. A probe has no
// client, so these are all it knows.
import { Variables } from '../../api/variables.js';

/** What a probe's response gives its test: an HTTP status and headers, or the bytes a
 * stream peer answered (as latin1 text, one character a byte). */
export interface ProbeResponse {
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string | string[] | undefined>>;
  readonly response?: string;
}

function responseHeader(r: ProbeResponse, name: string): string | undefined {
  const v = r.headers?.[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

export const probeVariables = {
  http: {
    variables: new Variables<ProbeResponse>([
      {
        names: { upstream_status: (r) => (r.status === undefined ? undefined : String(r.status)) },
        prefixes: [['upstream_http_', (n) => { const h = n.replace(/_/g, '-').toLowerCase(); return (r) => responseHeader(r, h); }]],
      },
    ]),
    say: '$upstream_status and $upstream_http_<name>',
  },
  stream: {
    variables: new Variables<ProbeResponse>([{ names: { upstream_probe_response: (r) => r.response } }]),
    say: '$upstream_probe_response',
  },
};
