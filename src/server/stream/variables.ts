// The variables of the stream modules (ngx_stream_core_module's and the upstream's), as
// nginx renders them once a session is over (its log line); `-` there for one not found.
import { hostname } from 'node:os';
import type { VariableTable } from '../../api/variables.js';
import { unmapped } from '../../api/variables.js';
import { clock, msec, seconds } from '../core/time.js';

/** What a session leaves for its log line. */
export interface StreamRecord {
  readonly remoteAddress?: string;
  readonly remotePort?: number;
  readonly localAddress?: string;
  readonly localPort?: number;
  /** 200, or what ended it before the proxy (400, 403, 502, 503). */
  readonly status: number;
  /** Bytes from and to the client. */
  readonly received: number;
  readonly sent: number;
  /** Milliseconds from the accept to the end. */
  readonly sessionMs: number;
  readonly connection: number;
  /** Every peer tried, in order. */
  readonly peers: readonly string[];
  /** The last peer's bytes and times (ms; -1 for one not reached). */
  readonly peerReceived: number;
  readonly peerSent: number;
  readonly connectMs: number;
  /** The session itself, which every record of it names: what the values of its `map`
   * and `geo` variables are kept on. */
  readonly session?: object;
  /** $1..$9: the groups of a `map`'s regex, where its value is evaluated. */
  readonly captures?: readonly string[];
  // `preread` (ssl-preread.ts) and `tls` (ssl/variables.ts): their modules'.
  /** The addresses of a PROXY protocol header the session began with. */
  readonly proxyProtocol?: { readonly address: string; readonly port: number };
}

const address = (a: string | undefined) => (a === undefined ? undefined : unmapped(a));
const HOSTNAME = hostname();
const peers = (r: StreamRecord, each: (i: number) => string) => (r.peers.length ? r.peers.map((_, i) => each(i)).join(', ') : undefined);
const last = (r: StreamRecord, i: number) => i === r.peers.length - 1;

export const streamCoreVariables: VariableTable<StreamRecord> = {
  names: {
    ...Object.fromEntries(Array.from({ length: 9 }, (_, i) => [String(i + 1), (r: StreamRecord) => r.captures?.[i]])),
    remote_addr: (r) => address(r.remoteAddress),
    proxy_protocol_addr: (r) => r.proxyProtocol && unmapped(r.proxyProtocol.address),
    proxy_protocol_port: (r) => r.proxyProtocol && String(r.proxyProtocol.port),
    remote_port: (r) => (r.remotePort === undefined ? undefined : String(r.remotePort)),
    server_addr: (r) => address(r.localAddress),
    server_port: (r) => (r.localPort === undefined ? undefined : String(r.localPort)),
    protocol: () => 'TCP',
    status: (r) => String(r.status),
    bytes_received: (r) => String(r.received),
    bytes_sent: (r) => String(r.sent),
    session_time: (r) => seconds(r.sessionMs),
    connection: (r) => String(r.connection),
    hostname: () => HOSTNAME,
    pid: () => String(process.pid),
    msec,
    time_local: () => clock().local,
    time_iso8601: () => clock().iso,
    upstream_addr: (r) => peers(r, (i) => r.peers[i]),
    // A peer that failed sent and received nothing.
    upstream_bytes_received: (r) => peers(r, (i) => (last(r, i) ? String(r.peerReceived) : '0')),
    upstream_bytes_sent: (r) => peers(r, (i) => (last(r, i) ? String(r.peerSent) : '0')),
    upstream_connect_time: (r) => peers(r, (i) => (last(r, i) && r.connectMs >= 0 ? seconds(r.connectMs) : '-')),
  },
};
