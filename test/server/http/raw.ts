// A raw HTTP/1.x client for the tests of parsing: bytes as written, what came back as
// text, every wait bounded.
import { connect, type Socket } from 'node:net';

/** What the server sent on one connection. */
export interface Exchange {
  readonly text: string;
  /** The server closed the connection (rather than the wait ending). */
  readonly closed: boolean;
}

/** The complete responses in `text` (heads and Content-Length bodies): their count. */
export function responses(text: string): number {
  let n = 0;
  let at = 0;
  for (;;) {
    const end = text.indexOf('\r\n\r\n', at);
    if (end < 0) return n;
    const head = text.slice(at, end);
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    const next = end + 4 + (length ? Number(length[1]) : 0);
    if (next > text.length) return n;
    n++;
    at = next;
  }
}

/**
 * Sends `data` (a string or several pieces, each written after `gap` ms) on a new
 * connection to 127.0.0.1:`port`, and reads until the server closes, `count` responses
 * are in, or `ms` pass.
 */
export function exchange(port: number, data: string | readonly string[], opts: { count?: number; ms?: number; gap?: number; end?: boolean } = {}): Promise<Exchange> {
  const pieces = typeof data === 'string' ? [data] : data;
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let text = '';
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => finish(false), opts.ms ?? 3000);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      text += d;
      if (opts.count !== undefined && responses(text) >= opts.count) finish(false);
    });
    socket.on('close', () => finish(true));
    socket.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? finish(true) : reject(e)));
    socket.on('connect', async () => {
      for (let i = 0; i < pieces.length; i++) {
        if (i > 0 && opts.gap) await new Promise((r) => setTimeout(r, opts.gap));
        if (!socket.destroyed) socket.write(pieces[i]);
      }
      if (opts.end) socket.end();
    });
  });
}

/** The status codes of the responses in `text`, in order. */
export const statuses = (text: string): number[] => [...text.matchAll(/^HTTP\/1\.[01] (\d{3})/gm)].map((m) => Number(m[1]));
