// The PROXY protocol header a `listen ... proxy_protocol` connection begins with (HAProxy's
// specification): version 1, a text line of at most 107 bytes, or version 2, a binary
// header of 16 bytes and the length it gives. The header is taken off the connection
// and what follows it is left for the session; its source address and port are the
// client's.
import type { Socket } from 'node:net';

const V2_SIGNATURE = Buffer.from('\r\n\r\n\0\r\nQUIT\n', 'latin1');
const V1_PREFIX = Buffer.from('PROXY ', 'latin1');
/** The longest version 1 line, CRLF included. */
const V1_MAX = 107;
/** nginx's proxy_protocol_timeout. */
const TIMEOUT_MS = 30_000;

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const port = (p: string) => /^\d{1,5}$/.test(p) && Number(p) <= 65535;
const ipv4 = (a: string) => IPV4.test(a) && a.split('.').every((o) => Number(o) <= 255);
const ipv6 = (a: string) => /^[0-9A-Fa-f:.]+$/.test(a) && a.includes(':');

/** The header's length in `buf`, 0 when more bytes are needed, -1 when it is not one. */
export function proxyHeaderLength(buf: Buffer): number {
  const v2 = buf.subarray(0, 12);
  if (V2_SIGNATURE.subarray(0, v2.length).equals(v2)) {
    if (buf.length < 16) return 0;
    // Version 2, command LOCAL (0) or PROXY (1).
    if (buf[12] >> 4 !== 2 || (buf[12] & 0x0f) > 1) return -1;
    const length = 16 + buf.readUInt16BE(14);
    return buf.length >= length ? length : 0;
  }
  const v1 = buf.subarray(0, 6);
  if (!V1_PREFIX.subarray(0, v1.length).equals(v1)) return -1;
  const end = buf.indexOf('\r\n', 0, 'latin1');
  if (end < 0) return buf.length >= V1_MAX ? -1 : 0;
  if (end + 2 > V1_MAX) return -1;
  const words = buf.toString('latin1', 6, end).split(' ');
  if (words[0] === 'UNKNOWN') return end + 2;
  if (words.length !== 5) return -1;
  const [family, source, destination, sourcePort, destinationPort] = words;
  const address = family === 'TCP4' ? ipv4 : family === 'TCP6' ? ipv6 : undefined;
  if (!address || !address(source) || !address(destination) || !port(sourcePort) || !port(destinationPort)) return -1;
  return end + 2;
}

/** The client a header of `length` bytes names; none for UNKNOWN, LOCAL, a family other
 * than TCP/UDP over IPv4/IPv6, or a v2 address block too short for its family. */
export interface ProxySource {
  readonly address: string;
  readonly port: number;
}

/** IPv6 as node and nginx print it (compressed, lower case): URL parsing normalizes it.
 * The v1 check lets through some text that is no address ("1:::2"): kept as written, it
 * matches no rule but `all`. */
function canonical6(a: string): string {
  // URL would write an embedded IPv4 in hex (::ffff:102:304), as neither node nor nginx does.
  if (a.includes('.')) return a.toLowerCase();
  try {
    return new URL(`http://[${a}]/`).hostname.slice(1, -1);
  } catch {
    return a;
  }
}

export function proxyHeaderSource(buf: Buffer, length: number): ProxySource | undefined {
  if (buf[0] === V2_SIGNATURE[0]) {
    if ((buf[12] & 0x0f) !== 1) return undefined;
    const family = buf[13] >> 4;
    const block = length - 16;
    if (family === 1 && block >= 12) return { address: [...buf.subarray(16, 20)].join('.'), port: buf.readUInt16BE(24) };
    if (family === 2 && block >= 36) {
      const words: string[] = [];
      for (let i = 0; i < 8; i++) words.push(buf.readUInt16BE(16 + 2 * i).toString(16));
      return { address: canonical6(words.join(':')), port: buf.readUInt16BE(48) };
    }
    return undefined;
  }
  const words = buf.toString('latin1', 6, length - 2).split(' ');
  if (words[0] === 'TCP4') return { address: words[1], port: Number(words[3]) };
  if (words[0] === 'TCP6') return { address: canonical6(words[1]), port: Number(words[3]) };
  return undefined;
}

/** Reads the header from a paused socket: `done(true, bytes, source)` with the rest of
 * what was read put back, or `done(false, bytes)` for a malformed, oversized or late header. */
export function readProxyHeader(socket: Socket, done: (ok: boolean, bytes: number, source?: ProxySource) => void): void {
  let buf: Buffer = Buffer.alloc(0);
  let finished = false;
  const finish = (ok: boolean, length: number) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('end', onEnd);
    socket.pause();
    if (ok && buf.length > length) socket.unshift(buf.subarray(length));
    if (ok) done(true, length, proxyHeaderSource(buf, length));
    else done(false, buf.length);
  };
  const onData = (chunk: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    const length = proxyHeaderLength(buf);
    if (length !== 0) finish(length > 0, length);
  };
  const onEnd = () => finish(false, 0);
  const timer = setTimeout(() => finish(false, 0), TIMEOUT_MS);
  socket.on('data', onData);
  socket.once('end', onEnd);
  socket.resume();
}

/** The version 1 header nginx's `proxy_protocol on` sends a peer: the client's connection
 * as its socket sees it (source, then the address it came to); UNKNOWN for a connection
 * of no IP family (a unix socket). */
export function proxyHeaderV1(client: Pick<Socket, 'remoteAddress' | 'remotePort' | 'localAddress' | 'localPort' | 'remoteFamily'>): string {
  const unmapped = (a: string) => (a.startsWith('::ffff:') && ipv4(a.slice(7)) ? a.slice(7) : a);
  const source = client.remoteAddress && unmapped(client.remoteAddress);
  const destination = client.localAddress && unmapped(client.localAddress);
  if (!source || !destination || client.remotePort === undefined || client.localPort === undefined) return 'PROXY UNKNOWN\r\n';
  const v4 = ipv4(source) && ipv4(destination);
  const family = v4 ? 'TCP4' : 'TCP6';
  return `PROXY ${family} ${source} ${destination} ${client.remotePort} ${client.localPort}\r\n`;
}
