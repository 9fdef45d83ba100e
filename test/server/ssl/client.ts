// A TLS client for the tests: one HTTP/1.0 request on a new connection (node's tls.connect,
// a certificate of its own if given), the raw answer parsed, and what the handshake was.
import { connect, type ConnectionOptions } from 'node:tls';

export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly reused: boolean;
  readonly session?: Buffer;
  readonly protocol: string | null;
}

export interface Ask extends ConnectionOptions {
  readonly port: number;
  readonly host?: string;
  readonly path?: string;
}

/** GET `path` with `Host: host` (the SNI by default); rejects when the handshake fails. */
export function get(ask: Ask): Promise<Answer> {
  const { port, host, path = '/', ...options } = ask;
  return new Promise((resolve, reject) => {
    let session: Buffer | undefined;
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...options }, () => {
      socket.write(`GET ${path} HTTP/1.0\r\nHost: ${host ?? options.servername ?? 'localhost'}\r\n\r\n`);
    });
    socket.on('session', (s: Buffer) => (session = s));
    let raw = '';
    const timer = setTimeout(() => socket.destroy(new Error('no answer within 5 s')), 5000);
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (raw += d));
    socket.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.on('end', () => {
      clearTimeout(timer);
      const [head, ...rest] = raw.split('\r\n\r\n');
      const [line, ...fields] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const f of fields) {
        const colon = f.indexOf(':');
        headers[f.slice(0, colon).toLowerCase()] = f.slice(colon + 1).trim();
      }
      resolve({ status: Number(line.split(' ')[1]), headers, body: rest.join('\r\n\r\n'), reused: socket.isSessionReused(), ...(session ? { session } : {}), protocol: socket.getProtocol() });
      socket.destroy();
    });
  });
}
