// Live push (issue 18): the subscribers of a transport's streams, grouped so that one
// timer per (stream, interval) renders the answer once a tick for all of them. A
// subscriber whose last frame is still unsent skips the tick: a slow client holds at most
// one frame, and gets the newest one when it catches up.
import { bodyText } from '../api/index.js';
import type { ApiResponse, ApiStream } from '../api/types.js';
import { internalError, reportError, type ApiServer } from './common.js';

/** One tick's answer, in each form a transport sends it (made once, for all subscribers). */
export class Frame {
  private event: string | undefined;

  private constructor(
    /** The answer was a 200; otherwise it is an error body (the element went away). */
    readonly ok: boolean,
    /** The body, without its final newline: a WebSocket message. */
    readonly text: string,
  ) {}

  static of(response: ApiResponse): Frame {
    let text = bodyText(response);
    if (text.endsWith('\n')) text = text.slice(0, -1);
    return new Frame(response.status === 200, text);
  }

  /** As a Server-Sent Event: every line of the body a `data:` line (EventSource joins them
   * with newlines again), and an error as an `error` event. */
  get sse(): string {
    if (this.event === undefined) {
      const data = this.text.includes('\n') ? this.text.split('\n').join('\ndata: ') : this.text;
      this.event = `${this.ok ? '' : 'event: error\n'}data: ${data}\n\n`;
    }
    return this.event;
  }
}

export interface Subscriber {
  /** What it was last sent is not all out yet: it skips this tick. */
  busy(): boolean;
  send(frame: Frame): void;
}

interface Group {
  readonly name: string;
  readonly next: () => ApiResponse;
  readonly members: Set<Subscriber>;
  timer: ReturnType<typeof setInterval> | undefined;
}

export class Pusher {
  private readonly groups = new Map<string, Group>();
  private readonly memberOf = new Map<Subscriber, Group>();

  constructor(private readonly onError: (err: unknown) => void = reportError) {}

  /** Pushes `stream` to `subscriber` from its next tick on, instead of what it had. */
  subscribe(subscriber: Subscriber, stream: ApiStream): void {
    this.unsubscribe(subscriber);
    const name = `${stream.interval} ${stream.key}`;
    let group = this.groups.get(name);
    if (!group) {
      const g: Group = { name, next: () => stream.next(), members: new Set(), timer: undefined };
      g.timer = setInterval(() => this.tick(g), stream.interval);
      this.groups.set(name, (group = g));
    }
    group.members.add(subscriber);
    this.memberOf.set(subscriber, group);
  }

  /** Stops pushing to `subscriber`; the last one of a group takes its timer with it. */
  unsubscribe(subscriber: Subscriber): void {
    const group = this.memberOf.get(subscriber);
    if (!group) return;
    this.memberOf.delete(subscriber);
    group.members.delete(subscriber);
    if (group.members.size === 0) {
      clearInterval(group.timer);
      this.groups.delete(group.name);
    }
  }

  /** Subscribers now. */
  get subscribers(): number {
    return this.memberOf.size;
  }

  /** Timers now: one per (stream, interval) that has subscribers. */
  get timers(): number {
    return this.groups.size;
  }

  /** Forgets every subscriber and stops every timer (the listener is closing). */
  close(): void {
    for (const g of this.groups.values()) clearInterval(g.timer);
    this.groups.clear();
    this.memberOf.clear();
  }

  private tick(group: Group): void {
    // Nobody ready, nothing rendered: a tick of only slow clients costs a look at each.
    let ready = false;
    for (const s of group.members)
      if (!s.busy()) {
        ready = true;
        break;
      }
    if (!ready) return;
    let response: ApiResponse;
    try {
      response = group.next();
    } catch (err) {
      this.onError(err);
      response = internalError('GET');
    }
    const frame = Frame.of(response);
    // The frame holds its own copy: the body's memory may serve the next answer.
    response.release?.();
    for (const s of group.members) {
      if (s.busy()) continue;
      try {
        s.send(frame);
      } catch (err) {
        // A transport failure on one connection: that subscriber goes, the others stay.
        this.onError(err);
        this.unsubscribe(s);
      }
    }
  }
}

/** What serveApi() gives back, for either listener: the port it took, what it pushes, and
 * a close() that stops the pushes, then the listener (`stop`), once. */
export function apiServer(port: number, pusher: Pusher, stop: () => void): ApiServer {
  let closed = false;
  return {
    port,
    get subscribers() {
      return pusher.subscribers;
    },
    get timers() {
      return pusher.timers;
    },
    close() {
      if (closed) return;
      closed = true;
      pusher.close();
      stop();
    },
  };
}
