// ngx_stream_ssl_preread_module: the client's TLS ClientHello read before the proxy, and
// left where it is for the peer, which terminates TLS itself: its server name (SNI), the
// protocol versions and the ALPN protocols it offers become $ssl_preread_server_name,
// $ssl_preread_protocol and $ssl_preread_alpn_protocols, so that `proxy_pass` (or a map)
// can route by them.
import type { Socket } from 'node:net';
import type { VariableTable } from '../../api/variables.js';
import type { StreamRecord } from './variables.js';

declare module './variables.js' {
  interface StreamRecord {
    /** The ClientHello `ssl_preread` read. */
    readonly preread?: ClientHello;
  }
}

/** What a ClientHello says, as nginx's variables render it. */
export interface ClientHello {
  /** The SNI host name; '' without one. */
  readonly serverName: string;
  /** The highest version offered: "TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1", "SSLv3"; ''. */
  readonly protocol: string;
  /** The ALPN protocols, comma-separated as nginx joins them; ''. */
  readonly alpn: string;
}

const VERSIONS: Record<number, string> = { 0x0300: 'SSLv3', 0x0301: 'TLSv1', 0x0302: 'TLSv1.1', 0x0303: 'TLSv1.2', 0x0304: 'TLSv1.3' };

/** The record layer's payloads of `data` while they are handshake records: the
 * handshake's bytes so far, and whether the first record is no handshake at all. */
function handshakeBytes(data: Buffer): { bytes: Buffer; complete: boolean } | 'not tls' {
  const parts: Buffer[] = [];
  let at = 0;
  while (at + 5 <= data.length) {
    if (data[at] !== 0x16 || data[at + 1] !== 0x03) return at === 0 ? 'not tls' : { bytes: Buffer.concat(parts), complete: true };
    const length = data.readUInt16BE(at + 3);
    const end = Math.min(data.length, at + 5 + length);
    parts.push(data.subarray(at + 5, end));
    at += 5 + length;
  }
  if (data.length > 0 && data[0] !== 0x16) return 'not tls';
  const bytes = Buffer.concat(parts);
  // The ClientHello's own length says when it is all there.
  const complete = bytes.length >= 4 && bytes.length >= 4 + bytes.readUIntBE(1, 3);
  return { bytes, complete };
}

/**
 * Parses the ClientHello at the start of `data`: the hello, undefined when more bytes
 * are needed, or null when it is not a ClientHello (the variables stay empty and the
 * session goes on, as nginx's).
 */
export function parseClientHello(data: Buffer): ClientHello | undefined | null {
  const h = handshakeBytes(data);
  if (h === 'not tls') return null;
  if (!h.complete) return undefined;
  const b = h.bytes;
  if (b[0] !== 0x01) return null;
  const end = Math.min(b.length, 4 + b.readUIntBE(1, 3));
  try {
    let p = 4;
    let version = b.readUInt16BE(p);
    p += 2 + 32;
    p += 1 + b[p]; // session id
    p += 2 + b.readUInt16BE(p); // cipher suites
    p += 1 + b[p]; // compression methods
    let serverName = '';
    let alpn = '';
    if (p + 2 <= end) {
      const extensionsEnd = Math.min(end, p + 2 + b.readUInt16BE(p));
      p += 2;
      while (p + 4 <= extensionsEnd) {
        const type = b.readUInt16BE(p);
        const length = b.readUInt16BE(p + 2);
        const body = b.subarray(p + 4, Math.min(extensionsEnd, p + 4 + length));
        p += 4 + length;
        if (type === 0 && body.length >= 5 && body[2] === 0) serverName = body.toString('latin1', 5, 5 + body.readUInt16BE(3)).toLowerCase();
        else if (type === 16 && body.length >= 2) {
          const names: string[] = [];
          for (let q = 2; q < body.length; q += 1 + body[q]) names.push(body.toString('latin1', q + 1, q + 1 + body[q]));
          alpn = names.join(',');
        } else if (type === 43 && body.length >= 1) {
          // supported_versions: the highest one offered (GREASE values are no version).
          for (let q = 1; q + 1 < body.length && q <= body[0]; q += 2) {
            const v = body.readUInt16BE(q);
            if (VERSIONS[v] !== undefined && v > version) version = v;
          }
        }
      }
    }
    return { serverName, protocol: VERSIONS[version] ?? '', alpn };
  } catch {
    return null;
  }
}

/**
 * Reads from `socket` (paused) until its ClientHello is whole, then puts what it read
 * back for the proxy and calls `done` with it (null: none, not TLS or cut short). Gives
 * up after `timeout` ms or `bufferSize` bytes (nginx: the session ends; `done(false)`).
 */
export function prereadClientHello(socket: Socket, timeout: number, bufferSize: number, done: (hello: ClientHello | null | false) => void): void {
  let data: Buffer = Buffer.alloc(0);
  let over = false;
  const finish = (result: ClientHello | null | false) => {
    if (over) return;
    over = true;
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('end', onEnd);
    socket.pause();
    if (data.length > 0) socket.unshift(data);
    done(result);
  };
  const onData = (chunk: Buffer) => {
    data = data.length === 0 ? chunk : Buffer.concat([data, chunk]);
    const hello = parseClientHello(data);
    if (hello !== undefined) finish(hello);
    else if (data.length >= bufferSize) finish(false);
  };
  const onEnd = () => finish(null);
  const timer = setTimeout(() => finish(false), timeout);
  socket.on('data', onData);
  socket.once('end', onEnd);
  socket.resume();
}

export const sslPrereadVariables: VariableTable<StreamRecord> = {
  names: {
    ssl_preread_server_name: (r) => r.preread?.serverName ?? '',
    ssl_preread_protocol: (r) => r.preread?.protocol ?? '',
    ssl_preread_alpn_protocols: (r) => r.preread?.alpn ?? '',
  },
};
