// A raw HTTP/1.1 client over one net.Socket, to see the exact bytes a transport sends
// (fetch hides HEAD bodies, duplicate headers and connection reuse). Every wait is bounded.
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  statusLine: string;
  status: number;
  /** Header lines in order, names as sent. */
  headerList: Array<[string, string]>;
  /** Lower-case name to value (the last one when repeated). */
  headers: Record<string, string>;
  body: Buffer;
}

export class RawClient {
  private buf = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  closed = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => {});
  }

  /** A client over a socket already connecting (one with its own options: localAddress). */
  static wrap(socket: Socket): RawClient {
    return new RawClient(socket);
  }

  static connect(port: number, host = '127.0.0.1', ms = 5000): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, host);
      const timer = setTimeout(() => (socket.destroy(), reject(new Error(`no connection to ${host}:${port} within ${ms} ms`))), ms);
      socket.once('connect', () => (clearTimeout(timer), resolve(new RawClient(socket))));
      socket.once('error', (err) => (clearTimeout(timer), reject(err)));
    });
  }

  private wake() {
    this.waiters.splice(0).forEach((w) => w());
  }

  /** Writes and resolves once the bytes are handed to the kernel. */
  send(data: string | Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(data, (err) => (err ? reject(err) : resolve())));
  }

  private until<T>(what: string, ms: number, probe: () => T | undefined): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms; have ${JSON.stringify(this.buf.toString('latin1').slice(0, 300))}`)), ms);
      const check = () => {
        let v: T | undefined;
        try {
          v = probe();
        } catch (err) {
          clearTimeout(timer);
          reject(err);
          return;
        }
        if (v !== undefined) {
          clearTimeout(timer);
          resolve(v);
        } else if (this.closed) {
          clearTimeout(timer);
          reject(new Error(`connection closed before ${what}; have ${JSON.stringify(this.buf.toString('latin1').slice(0, 300))}`));
        } else this.waiters.push(check);
      };
      check();
    });
  }

  /** Reads one response; `head` when it answers a HEAD request (no body follows). */
  read(opts: { head?: boolean } = {}, ms = 5000): Promise<RawResponse> {
    return this.until('response', ms, () => {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const lines = this.buf.subarray(0, end).toString('latin1').split('\r\n');
      const statusLine = lines.shift()!;
      const headerList = lines.map((l): [string, string] => {
        const colon = l.indexOf(':');
        return [l.slice(0, colon), l.slice(colon + 1).trim()];
      });
      const headers = Object.fromEntries(headerList.map(([k, v]) => [k.toLowerCase(), v]));
      if (headers['transfer-encoding']) throw new Error('chunked responses are not expected');
      const length = opts.head ? 0 : Number(headers['content-length'] ?? 0);
      if (this.buf.length < end + 4 + length) return undefined;
      const body = Buffer.from(this.buf.subarray(end + 4, end + 4 + length));
      this.buf = this.buf.subarray(end + 4 + length);
      return { statusLine, status: Number(statusLine.split(' ')[1]), headerList, headers, body };
    });
  }

  /** Bytes received and not yet read as a response. */
  pending(): Buffer {
    return this.buf;
  }

  /** Resolves when the server has closed the connection. */
  waitClosed(ms = 5000): Promise<void> {
    return this.until('close', ms, () => (this.closed ? true : undefined)).then(() => undefined);
  }

  destroy() {
    this.socket.destroy();
  }
}

/** A request's bytes. */
export function request(method: string, target: string, headers: Record<string, string | number> = {}, body?: string | Buffer): Buffer {
  const head = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  if (body !== undefined && !Object.keys(headers).some((k) => /^(content-length|transfer-encoding)$/i.test(k)))
    head.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return Buffer.concat([Buffer.from(head.join('\r\n') + '\r\n\r\n', 'latin1'), body === undefined ? Buffer.alloc(0) : Buffer.from(body)]);
}
