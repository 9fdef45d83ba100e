// What the stream tests run on loopback: echo backends (plain or TLS, optionally
// delaying their first byte), and a client that sends bytes and reads what comes back.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, connect as connectTls, type TLSSocket } from 'node:tls';

/** An echo backend: every byte it reads it writes back; its end follows the client's.
 * `greeting`: written first, `delayMs` after the connection came. */
export class EchoBackend {
  connections = 0;
  handshakes = 0;
  resumed = 0;
  /** Bytes it read from all its connections. */
  bytes = 0;
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();

  constructor(
    readonly port: number,
    private readonly options: { delayMs?: number; greeting?: string; tls?: { cert: string; key: string }; host?: string } = {},
  ) {}

  start(): Promise<void> {
    const serve = (s: Socket) => {
      this.connections++;
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => {});
      const echo = () => {
        if (this.options.greeting !== undefined) s.write(this.options.greeting);
        s.on('data', (d: Buffer) => (this.bytes += d.length));
        s.pipe(s);
      };
      if (this.options.delayMs) {
        s.pause();
        setTimeout(echo, this.options.delayMs);
      } else echo();
    };
    const tls = this.options.tls;
    const server = tls ? createTlsServer({ cert: tls.cert, key: tls.key, allowHalfOpen: true }, serve) : createServer({ allowHalfOpen: true }, serve);
    if (tls)
      server.on('secureConnection', (s: TLSSocket) => {
        this.handshakes++;
        if (s.isSessionReused()) this.resumed++;
      });
    this.server = server;
    return new Promise((resolve) => server.listen(this.port, this.options.host ?? '127.0.0.1', () => resolve()));
  }

  stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }
}

export interface Exchange {
  /** What came back before the connection closed. */
  readonly received: Buffer;
  /** The server closed without a byte or an end of its own (destroyed). */
  readonly ms: number;
}

/** Connects, writes `data` (in pieces of `piece` bytes), ends once `expect` bytes came
 * back (or at once when 0), and resolves when the connection closes. Bounded by `ms`. */
export function exchange(port: number, data: Buffer | string, options: { expect?: number; piece?: number; ms?: number; socket?: Socket } = {}): Promise<Exchange> {
  const payload = typeof data === 'string' ? Buffer.from(data) : data;
  const expect = options.expect ?? payload.length;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const s = options.socket ?? connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const chunks: Buffer[] = [];
    let got = 0;
    let ended = false;
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`exchange on ${port} not over in ${options.ms ?? 10_000} ms (${got} of ${expect} bytes back)`));
    }, options.ms ?? 10_000);
    const endIfDone = () => {
      if (!ended && got >= expect) {
        ended = true;
        s.end();
      }
    };
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      got += d.length;
      endIfDone();
    });
    s.on('end', () => s.end());
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ received: Buffer.concat(chunks), ms: performance.now() - started });
    });
    const piece = options.piece ?? payload.length;
    for (let i = 0; i < payload.length; i += Math.max(1, piece)) s.write(payload.subarray(i, i + piece));
    endIfDone();
  });
}

/** A TLS client connection to `port`, resolved once its handshake is done, with the
 * session it was given (TLS 1.3 sends tickets after the handshake: awaited up to 1 s). */
export function tlsClient(port: number, session?: Buffer): Promise<{ socket: TLSSocket; reused: boolean; session: Promise<Buffer | undefined> }> {
  return new Promise((resolve, reject) => {
    const socket = connectTls({ port, host: '127.0.0.1', rejectUnauthorized: false, ...(session ? { session } : {}) });
    const ticket = new Promise<Buffer | undefined>((r) => {
      const timer = setTimeout(() => r(undefined), 1000);
      // Resolved a turn later: a write made inside node's 'session' callback (it runs
      // within the TLS read) is never sent.
      socket.once('session', (s: Buffer) => (clearTimeout(timer), setImmediate(() => r(s))));
    });
    socket.once('secureConnect', () => resolve({ socket, reused: socket.isSessionReused(), session: ticket }));
    socket.once('error', reject);
  });
}
