// The limits of a place at run time: nginx's preaccess phase. limit_req first (it may
// hold the request back by a timer), then limit_conn, whose counts are given back when
// the response ends, however it ends (written out, client abort, upstream error).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConnectionLimiter, limitRequest, RequestLimiter, type LimitRelease, type RequestLimit } from '../../metrics/limits.js';
import type { Status } from '../../metrics/status.js';
import { clientAddress } from '../../api/variables.js';
import { sendPage } from '../http/pages.js';
import { compileKey, type VariableContext } from '../http/variables.js';
import type { LimitsConfig, LogLevel } from './config.js';

type Key = (c: VariableContext) => string | Buffer;

/** zonal's log shows notice and above (nginx's `info` is below it). */
const SHOWN: Record<LogLevel, boolean> = { info: false, notice: true, warn: true, error: true };
const BELOW: Record<LogLevel, LogLevel> = { error: 'warn', warn: 'notice', notice: 'info', info: 'info' };

function log(level: LogLevel, message: string, req: IncomingMessage): void {
  if (!SHOWN[level]) return;
  const request = `${req.method} ${req.url} HTTP/${req.httpVersion}`;
  process.stderr.write(`zonal: [${level}] ${message}, client: ${clientAddress(req)}, request: "${request}", host: "${req.headers.host ?? ''}"\n`);
}

export class PlaceLimits {
  private readonly reqs: Array<{ readonly limiter: RequestLimiter; readonly key: Key }>;
  private readonly conns: Array<{ readonly limiter: ConnectionLimiter; readonly key: Key }>;

  constructor(
    private readonly config: LimitsConfig,
    status: Status,
    private readonly serverName: string,
  ) {
    this.reqs = config.reqs.map((r) => ({
      limiter: status.limitReq(r.zone, { burst: r.burst, ...(r.delay === Infinity ? { nodelay: true } : { delay: r.delay }), dryRun: config.reqDryRun }),
      key: compileKey(r.key),
    }));
    this.conns = config.conns.map((c) => ({
      limiter: status.limitConn(c.zone, { limit: c.limit, dryRun: config.connDryRun }),
      key: compileKey(c.key),
    }));
  }

  /** Runs the limits for a request: `next` when it may go on (at once, or after its
   * delay); otherwise it is answered here with the configured status. */
  admit(req: IncomingMessage, res: ServerResponse, uri: string, next: () => void): void {
    const ctx: VariableContext = { req, uri, serverName: this.serverName };
    if (this.reqs.length === 0) return this.connections(ctx, res, next);
    const limits: RequestLimit[] = this.reqs.map((r) => ({ limiter: r.limiter, key: r.key(ctx) }));
    const decision = limitRequest(limits);
    const names = () => this.reqs.map((r) => `"${r.limiter.zone}"`).join(', ');
    if (decision.result === 'rejected' || decision.result === 'exhausted') {
      log(this.config.reqLogLevel, `limiting requests${decision.result === 'exhausted' ? ', no room for the key,' : ''} by zone ${names()}`, req);
      return sendPage(res, this.config.reqStatus, req.method === 'HEAD');
    }
    if (decision.result !== 'delayed') return this.connections(ctx, res, next);
    log(BELOW[this.config.reqLogLevel], `delaying request ${decision.delay} ms by zone ${names()}`, req);
    // A timer, never a wait: the worker serves others meanwhile. A client gone by then
    // is not served.
    const timer = setTimeout(() => {
      res.off('close', cancel);
      if (!res.destroyed) this.connections(ctx, res, next);
    }, decision.delay);
    const cancel = () => clearTimeout(timer);
    res.once('close', cancel);
  }

  private connections(ctx: VariableContext, res: ServerResponse, next: () => void): void {
    if (this.conns.length === 0) return next();
    const held: LimitRelease[] = [];
    for (const c of this.conns) {
      const release = c.limiter.acquire(c.key(ctx));
      if (release) {
        held.push(release);
        continue;
      }
      for (const r of held) r();
      log(this.config.connLogLevel, `limiting connections by zone "${c.limiter.zone}"`, ctx.req);
      return sendPage(res, this.config.connStatus, ctx.req.method === 'HEAD');
    }
    // Given back when the response is ended, as nginx gives it back when it finalizes
    // the request, in the same step as the last write: 'finish' or 'close' come later,
    // after the client may have its answer and sent its next request to another worker,
    // which would find the count still taken. 'close' covers the responses never ended
    // (client abort, a worker's drain).
    const release = () => {
      for (const r of held.splice(0)) r();
    };
    const end = res.end;
    res.end = function (this: ServerResponse, ...args: Parameters<ServerResponse['end']>) {
      release();
      return end.apply(this, args);
    } as ServerResponse['end'];
    res.once('close', release);
    next();
  }
}
