// Clients of the live push (issue 18): Server-Sent Events over node:http, WebSockets over
// `ws`, each collecting what it receives, with bounded waits.
import { Agent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import WebSocket from 'ws';

/** Resolves once `check()` holds; fails after `ms`. Checks every few milliseconds, as a
 * server-side count (subscribers, timers) has no event to wait on. */
export async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  for (let i = 0; i < 100_000; i++) {
    if (check()) return;
    if (Date.now() > end) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

/** Things that arrive, and a way to wait for the n-th. */
class Inbox<T> {
  readonly items: T[] = [];
  private waiters: Array<() => void> = [];
  ended = false;

  push(item: T): void {
    this.items.push(item);
    this.wake();
  }

  end(): void {
    this.ended = true;
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Resolves once `n` items have come; fails after `ms` or when the source ended first. */
  async count(n: number, ms = 10_000): Promise<T[]> {
    const end = Date.now() + ms;
    while (this.items.length < n) {
      if (this.ended) throw new Error(`ended after ${this.items.length} of ${n}`);
      const left = end - Date.now();
      if (left <= 0) throw new Error(`timed out after ${ms} ms with ${this.items.length} of ${n}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
    return this.items;
  }
}

export interface ServerEvent {
  event: string;
  data: string;
}

export class EventSourceClient {
  readonly events = new Inbox<ServerEvent>();
  private buffer = '';
  private readonly pending: string[] = [];

  private constructor(
    readonly response: IncomingMessage,
    /** Set when the answer was not a stream: the body. */
    readonly body: Promise<string>,
  ) {}

  get status(): number {
    return this.response.statusCode ?? 0;
  }

  get headers(): IncomingHttpHeaders {
    return this.response.headers;
  }

  /** JSON of every `data` event so far. */
  json(): unknown[] {
    return this.events.items.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data));
  }

  static open(url: string, options: { agent?: Agent; accept?: string; paused?: boolean } = {}): Promise<EventSourceClient> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(url, { headers: { accept: options.accept ?? 'text/event-stream' }, ...(options.agent ? { agent: options.agent } : {}) }, (res) => {
        const streaming = /^text\/event-stream/.test(res.headers['content-type'] ?? '');
        let text = '';
        let done: (s: string) => void = () => {};
        const body = new Promise<string>((r) => (done = r));
        const client = new EventSourceClient(res, body);
        res.setEncoding('utf8');
        if (options.paused) res.pause();
        res.on('data', (chunk: string) => (streaming ? client.feed(chunk) : (text += chunk)));
        res.on('end', () => done(text));
        res.on('close', () => {
          done(text);
          client.events.end();
        });
        res.on('error', () => {});
        resolve(client);
      });
      req.on('error', reject);
      req.end();
    });
  }

  private feed(chunk: string): void {
    // Chunks wait in a list until one ends an event: appending each to one string and
    // searching it whole again made reading a 2 MB event quadratic, and on a slow machine
    // the test process fell seconds behind the streams it was measuring.
    const before = this.pending.length ? this.pending[this.pending.length - 1] : this.buffer;
    const ends = chunk.includes('\n\n') || (before.endsWith('\n') && chunk.startsWith('\n'));
    if (!ends) {
      this.pending.push(chunk);
      return;
    }
    this.buffer += this.pending.join('') + chunk;
    this.pending.length = 0;
    for (let i = this.buffer.indexOf('\n\n'); i >= 0; i = this.buffer.indexOf('\n\n')) {
      const block = this.buffer.slice(0, i);
      this.buffer = this.buffer.slice(i + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length) this.events.push({ event, data: data.join('\n') });
    }
  }

  resume(): void {
    this.response.resume();
  }

  close(): void {
    this.response.destroy();
  }
}

export class SocketClient {
  readonly messages = new Inbox<any>();
  closed = false;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => this.messages.push(JSON.parse(data.toString())));
    ws.on('close', () => {
      this.closed = true;
      this.messages.end();
    });
    ws.on('error', () => {});
  }

  static open(url: string): Promise<SocketClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const client = new SocketClient(ws);
      ws.once('open', () => resolve(client));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode, body })));
      });
      ws.once('error', reject);
    });
  }

  send(value: unknown): void {
    this.ws.send(typeof value === 'string' ? value : JSON.stringify(value));
  }

  /** Waits for the first message after the `seen`-th that `match` accepts. */
  async next(seen: number, match: (m: any) => boolean, ms = 10_000): Promise<any> {
    const end = Date.now() + ms;
    for (let n = seen + 1; n < seen + 10_000; n++) {
      const items = await this.messages.count(n, Math.max(1, end - Date.now()));
      if (match(items[n - 1])) return items[n - 1];
    }
    throw new Error('no matching message');
  }

  close(): void {
    this.ws.close();
  }
}
