// The local address of a uWebSockets.js connection on a wildcard listener (0.0.0.0, ::).
// The uWS build zonal depends on (20.30) gives a response's remote address but not its
// local one, nor the remote port, nor the socket: the kernel's table of TCP sockets
// (/proc/net/tcp, /proc/net/tcp6) is the one place left that says which of the machine's
// addresses took a connection. A read of it costs up to a millisecond whatever the number
// of sockets (the kernel walks its whole hash table); it is read only when a request needs
// its address (the Host rule, /status/server/address), and never kept: a client may
// connect to another of the machine's addresses at any moment.
import { closeSync, openSync, readSync } from 'node:fs';

const WILDCARDS = new Set(['0.0.0.0', '::']);
/** ESTABLISHED, and CLOSE_WAIT: a client that sent its request and then its FIN. */
const STATES = new Set(['01', '08']);

export const isWildcard = (host: string): boolean => WILDCARDS.has(host);

/** `::ffff:a.b.c.d` as a.b.c.d (as the node:http transport reports an IPv4 client on a
 * dual-stack socket), other IPv6 addresses compressed, so that texts compare equal. */
function canonical(address: string): string {
  if (!address.includes(':')) return address;
  const compressed = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(compressed);
  if (!mapped) return compressed;
  const hi = parseInt(mapped[1], 16);
  const lo = parseInt(mapped[2], 16);
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

/** The address a Host header names (`127.0.0.2:8081`, `[::1]`), canonical; undefined
 * for a name. */
function hostAddress(host: string): string | undefined {
  const m = /^\[([0-9a-fA-F:.]+)\](?::\d+)?$/.exec(host) ?? /^(\d+\.\d+\.\d+\.\d+)(?::\d+)?$/.exec(host);
  if (!m) return undefined;
  try {
    return canonical(m[1]);
  } catch {
    return undefined;
  }
}

/** An address of /proc/net/tcp{,6}: 32-bit words in hex, each in the machine's (little-
 * endian) byte order. */
function procAddress(hex: string): string {
  const bytes: number[] = [];
  for (let w = 0; w < hex.length; w += 8) for (let b = 3; b >= 0; b--) bytes.push(parseInt(hex.slice(w + 2 * b, w + 2 * b + 2), 16));
  if (bytes.length === 4) return bytes.join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] << 8) | bytes[i + 1]).toString(16));
  return canonical(groups.join(':'));
}

export class LocalAddresses {
  private readonly table: string;
  private readonly port: string;
  private fd = -1;
  private readonly buffer = Buffer.alloc(64 * 1024);

  /** A wildcard listener on `host` (`0.0.0.0` or `::`) and `port`. */
  constructor(
    private readonly host: string,
    port: number,
  ) {
    this.table = host === '::' ? '/proc/net/tcp6' : '/proc/net/tcp';
    this.port = port.toString(16).toUpperCase().padStart(4, '0');
  }

  /** The local address of the connection from `client` (uWS's text of it). Without the
   * client's port, a client connected to several of the machine's addresses at once is
   * told apart by its Host header when that names one of them (a browser page rebinding a
   * domain sends the domain, never an address); else, as when the table has no such
   * connection, the answer is the listener's own address. */
  of(client: string, host: string | undefined): string {
    const found = this.lookup(canonical(client));
    if (found.size === 1) return found.values().next().value!;
    const named = host === undefined ? undefined : hostAddress(host);
    return named !== undefined && found.has(named) ? named : this.host;
  }

  /** Lets the table go (the listener closed). */
  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  private lookup(client: string): Set<string> {
    const found = new Set<string>();
    const text = this.read();
    if (text === undefined) return found;
    for (const line of text.split('\n')) {
      // "sl local:port remote:port st ..."
      const f = line.trim().split(/\s+/);
      if (f.length < 4 || !STATES.has(f[3])) continue;
      const [local, localPort] = f[1].split(':');
      if (localPort !== this.port) continue;
      if (procAddress(f[2].split(':')[0]) !== client) continue;
      found.add(procAddress(local));
    }
    return found;
  }

  private read(): string | undefined {
    try {
      if (this.fd < 0) this.fd = openSync(this.table, 'r');
      let size = 0;
      // A table larger than the buffer is read in several pieces from its start.
      for (;;) {
        const n = readSync(this.fd, this.buffer, size, this.buffer.length - size, size);
        if (n === 0) break;
        size += n;
        if (size === this.buffer.length) return this.buffer.toString('latin1', 0, size) + this.rest(size);
      }
      return this.buffer.toString('latin1', 0, size);
    } catch {
      // No /proc (another OS, a sandbox): the listener's address is the best there is.
      return undefined;
    }
  }

  private rest(from: number): string {
    const chunks: string[] = [];
    const chunk = Buffer.alloc(64 * 1024);
    for (let at = from; ; ) {
      const n = readSync(this.fd, chunk, 0, chunk.length, at);
      if (n === 0) return chunks.join('');
      chunks.push(chunk.toString('latin1', 0, n));
      at += n;
    }
  }
}
