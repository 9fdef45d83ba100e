// The client's TLS ClientHello, read off a connection before anything takes it and left
// where it is: for stream's ssl_preread (the peer terminates TLS) and, on the `ssl`
// listens of http and stream, for what node's TLS does not tell of a handshake it makes:
// the cipher suites the client offered ($ssl_ciphers) and its TLS 1.3 ticket, by which a
// session cache finds its session (resumedId).
import type { Socket } from 'node:net';
import { CIPHER_SUITES } from './cipher-suites.js';

/** What a ClientHello says, as nginx's variables render it. */
export interface ClientHello {
  /** The SNI host name; '' without one. */
  readonly serverName: string;
  /** The highest version offered: "TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1", "SSLv3"; ''. */
  readonly protocol: string;
  /** The ALPN protocols, comma-separated as nginx joins them; ''. */
  readonly alpn: string;
  /** The cipher suites offered, two bytes each, in the client's order. */
  readonly ciphers: Buffer;
  /** The session id field (in TLS 1.3 a random one, for middleboxes). */
  readonly sessionId: Buffer;
  /** The first identity of the pre_shared_key extension: a TLS 1.3 ticket. */
  readonly psk?: Buffer;
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
    const sessionId = b.subarray(p + 1, p + 1 + b[p]);
    p += 1 + sessionId.length;
    const ciphers = b.subarray(p + 2, Math.min(end, p + 2 + b.readUInt16BE(p)));
    p += 2 + ciphers.length;
    p += 1 + b[p]; // compression methods
    let serverName = '';
    let alpn = '';
    let psk: Buffer | undefined;
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
        } else if (type === 41 && body.length >= 4) {
          // pre_shared_key: its first identity (TLS 1.3's ticket).
          const length = body.readUInt16BE(2);
          if (4 + length <= body.length) psk = Buffer.from(body.subarray(4, 4 + length));
        }
      }
    }
    return { serverName, protocol: VERSIONS[version] ?? '', alpn, ciphers: Buffer.from(ciphers), sessionId: Buffer.from(sessionId), ...(psk ? { psk } : {}) };
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

/** More than any ClientHello OpenSSL takes (its limit is about 128 KiB): past it, node's
 * TLS is left to refuse the handshake. */
const HELLO_MAX = 256 * 1024;

const HELLO = Symbol('zonal.clientHello');
type Greeted = Socket & { [HELLO]?: ClientHello };

/** The ClientHello read off a connection of an `ssl` listen (its raw socket). */
export const clientHelloOf = (socket: Socket | undefined): ClientHello | undefined => (socket as Greeted | undefined)?.[HELLO];

/** `$ssl_ciphers`: the suites the client offered as nginx lists them, OpenSSL's names
 * and `0x` with the hex of the ones OpenSSL does not know (GREASE values among them). */
export function cipherNames(ciphers: Buffer): string {
  const names: string[] = [];
  for (let i = 0; i + 1 < ciphers.length; i += 2) {
    const code = ciphers.readUInt16BE(i);
    names.push(CIPHER_SUITES.get(code) ?? `0x${ciphers.toString('hex', i, i + 2)}`);
  }
  return names.join(':');
}

/** The TLS 1.3 tickets of the connections being accepted, by their hellos' session id. */
const tickets = new Map<string, Buffer>();

/**
 * The id a session cache finds a client's session by, given the session id node's TLS
 * read in its hello (`resumeSession`). In TLS 1.3 that id is random and the session is
 * named by the ticket: with ssl_session_tickets off, OpenSSL's ticket is the session's id
 * in the cache (a stateful ticket), which the connection's hello, read before, tells.
 */
export const resumedId = (helloSessionId: Buffer): Buffer => tickets.get(helloSessionId.toString('hex')) ?? helloSessionId;

/**
 * A connection of an `ssl` listen (paused on connect): its ClientHello is read and kept on
 * it, then it is handed to `server`, whose TLS reads the hello again from the socket's
 * buffer. A connection that is no TLS or whose hello is too large is handed over as it is
 * (the handshake fails there); `late` takes one that sends no whole hello in `timeout` ms.
 */
export function acceptTls(server: { emit(event: 'connection', socket: Socket): boolean }, socket: Socket, timeout: number, late: (socket: Socket) => void): void {
  prereadClientHello(socket, timeout, HELLO_MAX, (hello) => {
    if (hello === false && socket.readableLength < HELLO_MAX) return late(socket);
    if (hello) {
      (socket as Greeted)[HELLO] = hello;
      if (hello.psk && hello.sessionId.length > 0) {
        const key = hello.sessionId.toString('hex');
        tickets.set(key, hello.psk);
        socket.once('close', () => tickets.delete(key));
      }
    }
    server.emit('connection', socket);
  });
}
