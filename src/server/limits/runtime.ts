// The limits of a place at run time: nginx's preaccess phase. limit_req first (it may
// hold the request back by a timer), then limit_conn, whose counts are given back when
// the response ends, however it ends (written out, client abort, upstream error).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConnectionLimiter, HOLD_REFUSED, HOLD_TAKEN, limitRequest, RequestLimiter, type LimitReqDecision, type RequestLimit } from '../../metrics/limits.js';
import type { LimitKey } from '../../engine/index.js';
import type { Status } from '../../metrics/status.js';
import { sendPage } from '../http/pages.js';
import type { HttpContext } from '../http/variables.js';
import { compileKey, connectionKey } from './key.js';
import type { LimitsConfig, LogLevel } from './config.js';
import { errorLogOf, type ErrorLogTarget } from '../log/error-log.js';
import { logForRequest } from '../log/request-error.js';

type Key = (c: HttpContext) => string | Buffer;

/** admit(): the request goes on now. */
export const ADMITTED = 0;
/** admit(): the request was refused and answered. (A number above 0 is a delay.) */
export const ANSWERED = -1;

const BELOW: Record<LogLevel, LogLevel> = { error: 'warn', warn: 'notice', notice: 'info', info: 'info' };

/** To the place's error logs (its `error_log`, else the main context's), in nginx's words. */
function log(level: LogLevel, message: string, req: IncomingMessage, logs: readonly ErrorLogTarget[] | undefined): void {
  logForRequest(errorLogOf(logs), level, message, req);
}

export class PlaceLimits {
  private readonly reqs: Array<{ readonly limiter: RequestLimiter; readonly key: Key }>;
  /** `own`: the key when it is the connection's (kept on the socket). */
  private readonly conns: Array<{ readonly limiter: ConnectionLimiter; readonly key: Key; readonly own: ((req: IncomingMessage) => LimitKey) | undefined }>;
  /** The one limit_req of a place with no limit_conn: decided without the arrays and the
   * context the general case builds, since every request of such a place pays for them. */
  private readonly only: RequestLimiter | undefined;
  /** `only`'s key when it is the connection's own ($binary_remote_addr, $remote_addr):
   * kept on the socket, so that a request evaluates nothing. */
  private readonly onlyKey: ((req: IncomingMessage) => LimitKey) | undefined;
  /** The limit_req zones as the log names them. */
  private readonly names: string;

  constructor(
    private readonly config: LimitsConfig,
    status: Status,
    private readonly serverName: string,
    /** The place's `error_log`s. */
    private readonly errorLogs?: readonly ErrorLogTarget[],
    /** Answers a refusal: the place's error_page (http/content.ts), else nginx's page. */
    private readonly refuse: (req: IncomingMessage, res: ServerResponse, status: number) => void = (req, res, code) => sendPage(res, code, req.method === 'HEAD'),
  ) {
    this.reqs = config.reqs.map((r) => ({
      limiter: status.limitReq(r.zone, { burst: r.burst, ...(r.delay === Infinity ? { nodelay: true } : { delay: r.delay }), dryRun: config.reqDryRun }),
      key: compileKey(r.key),
    }));
    this.conns = config.conns.map((c) => ({
      limiter: status.limitConn(c.zone, { limit: c.limit, dryRun: config.connDryRun }),
      key: compileKey(c.key),
      own: connectionKey(c.key),
    }));
    const one = this.reqs.length === 1 && this.conns.length === 0;
    this.only = one ? this.reqs[0].limiter : undefined;
    this.onlyKey = one ? connectionKey(config.reqs[0].key) : undefined;
    this.names = this.reqs.map((r) => `"${r.limiter.zone}"`).join(', ');
  }

  /** Runs the limits for a request: ADMITTED when it may go on now; ANSWERED when it was
   * refused and answered here with the configured status; otherwise the milliseconds it
   * is held back, after which hold() lets it go on. Nothing is allocated for a request
   * that passes the one limit_req of a place keyed by its connection. */
  admit(req: IncomingMessage, res: ServerResponse, uri: string): number {
    const only = this.only;
    if (only !== undefined) {
      const decision = only.take(this.onlyKey !== undefined ? this.onlyKey(req) : this.reqs[0].key({ req, uri, serverName: this.serverName }));
      return decision.result === 'passed' || decision.result === 'skipped' ? ADMITTED : this.refusedOrDelayed(decision, req, res);
    }
    if (this.reqs.length > 0) {
      const ctx: HttpContext = { req, uri, serverName: this.serverName };
      const limits: RequestLimit[] = this.reqs.map((r) => ({ limiter: r.limiter, key: r.key(ctx) }));
      const decision = limitRequest(limits);
      if (decision.result !== 'passed' && decision.result !== 'skipped') return this.refusedOrDelayed(decision, req, res);
    }
    return this.connections(req, res, uri) ? ADMITTED : ANSWERED;
  }

  /** Holds a request admit() delayed for `delay` ms on a timer, never a wait: the worker
   * serves others meanwhile. Then its limit_conn counts are taken and `next` is called,
   * unless one refused it (answered then) or the client is gone (not served). */
  hold(req: IncomingMessage, res: ServerResponse, uri: string, delay: number, next: () => void): void {
    const timer = setTimeout(() => {
      res.off('close', cancel);
      if (!res.destroyed && this.connections(req, res, uri)) next();
    }, delay);
    const cancel = () => clearTimeout(timer);
    res.once('close', cancel);
  }

  private refusedOrDelayed(decision: LimitReqDecision, req: IncomingMessage, res: ServerResponse): number {
    if (decision.result === 'rejected' || decision.result === 'exhausted') {
      log(this.config.reqLogLevel, `limiting requests${decision.result === 'exhausted' ? ', no room for the key,' : ''} by zone ${this.names}`, req, this.errorLogs);
      this.refuse(req, res, this.config.reqStatus);
      return ANSWERED;
    }
    log(BELOW[this.config.reqLogLevel], `delaying request ${decision.delay} ms by zone ${this.names}`, req, this.errorLogs);
    return decision.delay;
  }

  /** Takes the request's limit_conn counts: false when one refused it (answered then). */
  private connections(req: IncomingMessage, res: ServerResponse, uri: string): boolean {
    const conns = this.conns;
    if (conns.length === 0) return true;
    let ctx: HttpContext | undefined;
    let holding: Holding | undefined;
    for (let i = 0; i < conns.length; i++) {
      const c = conns[i];
      const key = c.own !== undefined ? c.own(req) : c.key((ctx ??= { req, uri, serverName: this.serverName }));
      const r = c.limiter.hold(key);
      if (r === HOLD_TAKEN) {
        (holding ??= new Holding(conns, res.end)).keys[i] = key;
        continue;
      }
      if (r !== HOLD_REFUSED) continue;
      holding?.giveBack();
      log(this.config.connLogLevel, `limiting connections by zone "${c.limiter.zone}"`, req, this.errorLogs);
      this.refuse(req, res, this.config.connStatus);
      return false;
    }
    if (holding === undefined) return true;
    // Given back when the response is ended, as nginx gives it back when it finalizes
    // the request, in the same step as the last write: 'finish' or 'close' come later,
    // after the client may have its answer and sent its next request to another worker,
    // which would find the count still taken. 'close' covers the responses never ended
    // (client abort, a worker's drain). Both are functions made once, finding what to
    // give back on the response.
    const holder = res as Holder;
    holder[HOLDING] = holding;
    holder.end = endGivingBack;
    holder.on('close', closeGivingBack);
    return true;
  }
}

const HOLDING = Symbol('zonal.limit_conn.holding');
type Holder = ServerResponse & { [HOLDING]?: Holding };

/** The limit_conn counts a request holds, each given back once. */
class Holding {
  /** By limit_conn of the place: the key a count was taken for, undefined once given back
   * (or never taken). */
  readonly keys: Array<LimitKey | undefined>;

  constructor(
    private readonly conns: ReadonlyArray<{ readonly limiter: ConnectionLimiter }>,
    /** The response's end() before endGivingBack took its place. */
    readonly end: ServerResponse['end'],
  ) {
    this.keys = new Array<LimitKey | undefined>(conns.length).fill(undefined);
  }

  giveBack(): void {
    for (let i = 0; i < this.keys.length; i++) {
      const key = this.keys[i];
      if (key === undefined) continue;
      this.keys[i] = undefined;
      this.conns[i].limiter.release(key);
    }
  }
}

function endGivingBack(this: Holder): ServerResponse {
  const holding = this[HOLDING]!;
  holding.giveBack();
  return (holding.end as (...args: unknown[]) => ServerResponse).apply(this, arguments as unknown as unknown[]);
}

function closeGivingBack(this: Holder): void {
  this[HOLDING]?.giveBack();
}
