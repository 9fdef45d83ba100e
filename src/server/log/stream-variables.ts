// The variables of a stream log line (ngx_stream_core_module's and the upstream's), as
// nginx renders them once a session is over; `-` for one not found.
import { hostname } from 'node:os';
import { clock, seconds } from './variables.js';

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
}

export type StreamVariable = (r: StreamRecord) => string | undefined;

const unmapped = (a: string | undefined) => (a && a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a);
const HOSTNAME = hostname();
const peers = (r: StreamRecord, each: (i: number) => string) => (r.peers.length ? r.peers.map((_, i) => each(i)).join(', ') : undefined);
const last = (r: StreamRecord, i: number) => i === r.peers.length - 1;

const TABLE: Readonly<Record<string, StreamVariable>> = {
  remote_addr: (r) => unmapped(r.remoteAddress),
  remote_port: (r) => (r.remotePort === undefined ? undefined : String(r.remotePort)),
  server_addr: (r) => unmapped(r.localAddress),
  server_port: (r) => (r.localPort === undefined ? undefined : String(r.localPort)),
  protocol: () => 'TCP',
  status: (r) => String(r.status),
  bytes_received: (r) => String(r.received),
  bytes_sent: (r) => String(r.sent),
  session_time: (r) => seconds(r.sessionMs),
  connection: (r) => String(r.connection),
  hostname: () => HOSTNAME,
  pid: () => String(process.pid),
  msec: () => (Date.now() / 1000).toFixed(3),
  time_local: () => clock().local,
  time_iso8601: () => clock().iso,
  upstream_addr: (r) => peers(r, (i) => r.peers[i]),
  // A peer that failed sent and received nothing.
  upstream_bytes_received: (r) => peers(r, (i) => (last(r, i) ? String(r.peerReceived) : '0')),
  upstream_bytes_sent: (r) => peers(r, (i) => (last(r, i) ? String(r.peerSent) : '0')),
  upstream_connect_time: (r) => peers(r, (i) => (last(r, i) && r.connectMs >= 0 ? seconds(r.connectMs) : '-')),
};

/** A stream log variable by name; undefined for one zonal does not produce. */
export function streamLogVariable(name: string): StreamVariable | undefined {
  return Object.hasOwn(TABLE, name) ? TABLE[name] : undefined;
}

export const knownStreamLogVariable = (name: string): boolean => streamLogVariable(name) !== undefined;
