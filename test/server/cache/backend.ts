// A backend for the cache tests: it counts what reaches it, and answers as each test sets
// it up (status, headers, body, delay), per path.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** ms before the answer. */
  delay?: number;
}

export class CacheBackend {
  /** Requests that reached it, by path (with the query). */
  readonly hits = new Map<string, number>();
  /** The last request's headers, by path. */
  readonly seen = new Map<string, IncomingMessage['headers']>();
  /** What each path answers; a function sees the request. */
  readonly answers = new Map<string, Answer | ((req: IncomingMessage) => Answer)>();
  private server: Server | undefined;

  constructor(readonly port: number) {}

  count(path: string): number {
    return this.hits.get(path) ?? 0;
  }

  get total(): number {
    let n = 0;
    for (const v of this.hits.values()) n += v;
    return n;
  }

  start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const url = req.url ?? '/';
      this.hits.set(url, this.count(url) + 1);
      this.seen.set(url, req.headers);
      req.resume();
      req.on('end', () => {
        const a = this.answers.get(url) ?? this.answers.get(url.replace(/\?.*/, '')) ?? { body: `body of ${url}` };
        const answer = typeof a === 'function' ? a(req) : a;
        const send = () => {
          if (res.destroyed) return;
          res.writeHead(answer.status ?? 200, { 'Content-Type': 'text/plain', ...answer.headers });
          res.end(answer.status === 304 ? undefined : (answer.body ?? `body of ${url}`));
        };
        if (answer.delay) setTimeout(send, answer.delay);
        else send();
      });
    });
    return new Promise((resolve) => this.server!.listen(this.port, '127.0.0.1', () => resolve()));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.server) return resolve();
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }
}
