// A worker's HTTP data plane: a node:http or node:https server per listen address, the
// virtual servers behind each, and the exact accounting of connections and zones.
//
// Connections: `accepted` and `active` on accept; a connection is idle from the end of a
// response until its next request; `dropped` when the server closes it before any
// request reached a location (a malformed request, a request timeout, a failed TLS
// handshake, a shutdown). Zones: a request counts in its server's zone from its headers
// on, and in the zone of the location that answers it; its bytes are what the socket
// read and wrote for it, headers included (after TLS decryption, as nginx counts).
import { createServer as createHttpServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { Server as NetServer, type Socket } from 'node:net';
import { createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';
import { connections, type Connections } from '../../metrics/connections.js';
import type { HttpZone } from '../../metrics/http-zones.js';
import type { Status } from '../../metrics/status.js';
import type { ServerConfig, VirtualServerConfig } from '../config/model.js';
import { listenGroups } from '../listens.js';
import { auditLine } from '../audit.js';
import type { ToPrimary } from '../messages.js';
import { errorPage, sendPage, sendRedirect } from './pages.js';
import { ServerNames } from './server-names.js';
import type { ConditionContext } from './conditions.js';
import { runIfs, Site, type Place, type Route } from './site.js';
import { enter, refuse, serveContent } from './content.js';
import { UpstreamRuntime } from './upstream.js';
import { normalizeUri } from './uri.js';
import { ADMITTED, ANSWERED } from '../limits/runtime.js';
import { Roster } from '../roster.js';

/** One client connection's accounting. */
interface Conn {
  /** Requests that reached a virtual server. */
  requests: number;
  /** Requests whose response is not finished (more than one when pipelined). */
  inflight: number;
  idle: boolean;
  /** The server closed it: counted as dropped when no request came. */
  closedByServer: boolean;
  /** Socket byte counts at the end of the previous request. */
  read: number;
  written: number;
  /** A TLS handshake not counted yet: its server's zone is a request's (a group's), so it
   * counts in its first request's zone, or in `zone` (the group's own) if none comes. */
  handshake?: { readonly zone?: HttpZone; readonly reused: boolean };
}

/** Where a connection's accounting is kept: on its socket (for TLS, on both sockets). */
const CONN = Symbol('zonal.conn');
/** How long a draining worker leaves idle connections open for a last request. */
const DRAIN_IDLE_MS = 1000;
type Counted = Socket & { [CONN]?: Conn };

/** socket.bytesWritten without its cost: the getter copies the write queue into a new
 * array on every call; this is the same sum (checked for TCP and TLS sockets). */
function bytesWritten(socket: Socket): number {
  return (socket as Socket & { _bytesDispatched: number })._bytesDispatched + socket.writableLength;
}

export interface PlaneOptions {
  readonly status: Status;
  /** TLS session ticket keys shared by all workers, so that a session resumes in any. */
  readonly ticketKeys?: Buffer;
}

export class HttpPlane {
  private readonly status: Status;
  private readonly conns: Connections;
  private readonly servers: Server[] = [];
  private readonly live = new Roster<Conn>();
  private readonly sites = new Map<VirtualServerConfig, Site>();
  private readonly recorders = new Map<string, HttpZone>();
  private readonly upstreams = new Map<string, UpstreamRuntime>();
  private draining = false;
  /** Responses that take their time (proxied, API, files), until they close: a drain
   * makes those whose head is not written yet say `Connection: close`. */
  private readonly pending = new Roster<ServerResponse>();
  /** Draining, and the idle connections were closed: the others close after their response. */
  private swept = false;

  constructor(
    private readonly config: ServerConfig,
    private readonly options: PlaneOptions,
  ) {
    this.status = options.status;
    this.conns = connections(this.status);
    const catalog = this.status.catalog().http?.upstreams ?? [];
    for (const u of config.http?.upstreams ?? []) {
      const entry = catalog.find((c) => c.name === u.name);
      if (!entry) throw new Error(`the status has no upstream "${u.name}"`);
      this.upstreams.set(u.name, new UpstreamRuntime(this.status, u, entry));
    }
  }

  private site(server: VirtualServerConfig): Site {
    let s = this.sites.get(server);
    if (!s) this.sites.set(server, (s = new Site(server, { status: this.status, record: true, recorders: this.recorders, upstreams: this.upstreams, audit: sendAudit })));
    return s;
  }

  /** Listens on every data address; resolves once all listen. */
  async listen(): Promise<void> {
    for (const { listen, servers } of listenGroups(this.config, false)) {
      const names = new ServerNames(servers, listen);
      const sites = new Map(servers.map((s) => [s, this.site(s)]));
      const server = listen.ssl ? this.httpsServer(names) : createHttpServer();
      // nginx looks up server names only when there is a choice: reading the Host header
      // makes node:http build the headers object.
      const only = servers.length === 1 ? this.site(servers[0]) : undefined;
      server.on('request', (req: IncomingMessage, res: ServerResponse) => this.request(req, res, only ?? sites.get(names.select(req.headers.host))!));
      server.on('connection', (socket: Socket) => this.accept(socket));
      server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.clientError(err, socket));
      this.servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(listen.port, listen.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    }
  }

  private httpsServer(names: ServerNames): Server {
    const contexts = new Map<VirtualServerConfig, SecureContext>();
    const contextOf = (s: VirtualServerConfig) => {
      let c = contexts.get(s);
      if (!c) contexts.set(s, (c = createSecureContext({ cert: readFileSync(s.ssl!.certificate), key: readFileSync(s.ssl!.key) })));
      return c;
    };
    const fallback = names.select(undefined);
    const server = createHttpsServer({
      cert: readFileSync(fallback.ssl!.certificate),
      key: readFileSync(fallback.ssl!.key),
      handshakeTimeout: fallback.ssl!.handshakeTimeout,
      ...(this.options.ticketKeys ? { ticketKeys: this.options.ticketKeys } : {}),
      SNICallback: (servername, cb) => {
        try {
          cb(null, contextOf(names.selectServername(servername)));
        } catch (e) {
          cb(e as Error, undefined);
        }
      },
    });
    // The zone a handshake counts in: the server its SNI names, else the default one; when
    // that server's zone is a request's (a group's), its first request's, or the group's
    // own for one that fails or sends none.
    const siteOf = (socket: TLSSocket) => this.site(names.selectServername((socket as TLSSocket & { servername?: string | false }).servername || undefined));
    const zoneOf = (socket: TLSSocket) => {
      const site = siteOf(socket);
      return site.zone ?? site.groupZone;
    };
    const raw = (socket: TLSSocket) => ((socket as TLSSocket & { _parent?: Socket })._parent ?? socket) as Counted;
    server.on('secureConnection', (socket: TLSSocket) => {
      const conn = raw(socket)[CONN];
      (socket as Counted)[CONN] = conn;
      const site = siteOf(socket);
      if (site.zoneOf && conn) conn.handshake = { zone: site.groupZone, reused: socket.isSessionReused() };
      else site.zone?.sslHandshaked(socket.isSessionReused());
    });
    server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: TLSSocket) => {
      const conn = raw(socket)[CONN];
      if (conn) conn.closedByServer = true;
      const zone = zoneOf(socket);
      if (err.code === 'ERR_TLS_HANDSHAKE_TIMEOUT') zone?.sslTimedOut();
      else zone?.sslFailed();
    });
    return server;
  }

  private accept(socket: Counted): void {
    const conn: Conn = { requests: 0, inflight: 0, idle: false, closedByServer: false, read: 0, written: 0 };
    socket[CONN] = conn;
    const entry = this.live.add(conn);
    this.conns.accepted();
    socket.once('close', () => {
      this.live.delete(entry);
      if (conn.handshake) conn.handshake.zone?.sslHandshaked(conn.handshake.reused);
      if (conn.requests === 0 && conn.closedByServer) this.conns.dropped();
      else this.conns.closed(conn.idle);
    });
    if (this.draining) {
      conn.closedByServer = true;
      socket.destroy();
    }
  }

  /** What node:http does by default, and the connection marked as closed by the server. */
  private clientError(err: NodeJS.ErrnoException, socket: Counted): void {
    const conn = socket[CONN];
    // No state: a TLS socket whose handshake failed (node:https passes tlsClientError on
    // here), with nothing to answer in.
    if (!conn || err.code === 'ECONNRESET' || err.code === 'EPIPE' || !socket.writable) {
      socket.destroy();
      return;
    }
    if (conn.inflight === 0) conn.closedByServer = true;
    const code = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const body = errorPage(code);
    socket.end(`HTTP/1.1 ${code} ${STATUS_CODES[code]}\r\nContent-Type: text/html\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    socket.destroySoon();
  }

  private request(req: IncomingMessage, res: ServerResponse, site: Site): void {
    const socket = req.socket;
    const conn = (socket as Counted)[CONN];
    if (conn) {
      if (conn.idle) {
        conn.idle = false;
        this.conns.busy();
      }
      conn.requests++;
      conn.inflight++;
    }
    if (this.draining) res.shouldKeepAlive = false;
    // The response time histograms' start, the request's headers in: read only for a
    // server whose zones have histograms (0 otherwise: nothing is timed).
    const started = site.timed ? performance.now() : 0;
    const uri = normalizeUri(req.url ?? '/');
    // A group's zone is the one the request's key names ($uri as normalised).
    const zone = site.zoneOf ? site.zoneOf({ req, uri: uri ?? '', serverName: site.config.names[0] ?? '' }) : site.zone;
    if (conn?.handshake) {
      (zone ?? conn.handshake.zone)?.sslHandshaked(conn.handshake.reused);
      conn.handshake = undefined;
    }
    zone?.requestStarted();
    enter(res, site);
    const head = req.method === 'HEAD';
    if (uri === undefined) {
      sendPage(res, 400, head);
      this.answered(socket, conn, res, zone, undefined, started);
      return;
    }
    // The server's `if` blocks may answer before any location is searched.
    const answered = site.place.ifs ? this.serverIfs(site.place, req, uri) : undefined;
    const routed: Route = answered ?? site.route(uri);
    if (routed.redirect !== undefined) {
      // A location's auto redirect: answered as nginx does once it found the location,
      // before the location's `if` blocks, limits and access checks.
      const location = routed.place.zoneOf ? routed.place.zoneOf({ req, uri, serverName: site.config.names[0] ?? '' }) : routed.place.zone;
      location?.requestStarted();
      sendRedirect(req, res, routed.redirect);
      this.answered(socket, conn, res, zone, location, started);
      return;
    }
    let place = routed.place;
    let captures: readonly string[] | undefined = routed.captures;
    // The location's `if` blocks choose the settings the request goes on with.
    if (place.ifs && !answered) {
      const c: ConditionContext = { req, uri, ...(captures ? { captures } : {}) };
      place = runIfs(place, c);
      captures = c.captures;
    }
    const location = place.zoneOf ? place.zoneOf({ req, uri, serverName: site.config.names[0] ?? '', ...(captures ? { captures } : {}) }) : place.zone;
    location?.requestStarted();
    // nginx's phases: a `return` (rewrite) answers before the limits (preaccess), and
    // they come before access checks.
    const admission = place.limits && !place.return ? place.limits.admit(req, res, uri) : ADMITTED;
    const open = admission === ADMITTED && place.guard.open;
    if (open) this.content(req, res, uri, place, captures);
    if (open || admission === ANSWERED) {
      // Answered in full at once (a `return`, a proxy cache hit, a limit's refusal):
      // counted now, with no listener. 'close' comes after this turn at the earliest, so
      // a response still going gets its listener in time.
      if (res.writableEnded) this.answered(socket, conn, res, zone, location, started);
      else this.counted(socket, conn, res, zone, location, started);
      return;
    }
    this.counted(socket, conn, res, zone, location, started);
    // Only a delayed request waits, and only it makes a closure.
    if (admission === ADMITTED) this.access(req, res, uri, place, captures);
    else place.limits!.hold(req, res, uri, admission, () => this.access(req, res, uri, place, captures));
  }

  private access(req: IncomingMessage, res: ServerResponse, uri: string, place: Place, captures: readonly string[] | undefined): void {
    const socket = req.socket;
    if (place.guard.open) this.content(req, res, uri, place, captures);
    else {
      const verdict = place.guard.check(socket.remoteAddress ?? '', req.headers.authorization);
      if (typeof verdict === 'number') this.guarded(verdict, req, res, uri, place, captures);
      else verdict.then((v) => this.guarded(v, req, res, uri, place, captures), () => this.guarded(403, req, res, uri, place, captures));
    }
  }

  /** The place of the server's `if` block (or `return`) that answers, if one does. */
  private serverIfs(server: Place, req: IncomingMessage, uri: string): { place: Place; captures?: readonly string[] } | undefined {
    const c: ConditionContext = { req, uri };
    const place = runIfs(server, c);
    return place.return ? { place, ...(c.captures ? { captures: c.captures } : {}) } : undefined;
  }

  private guarded(verdict: 0 | 401 | 403, req: IncomingMessage, res: ServerResponse, uri: string, place: Place, captures: readonly string[] | undefined): void {
    if (res.destroyed) return;
    if (verdict === 0) {
      this.content(req, res, uri, place, captures);
      return;
    }
    const head = req.method === 'HEAD';
    if (place.api) {
      // API locations answer in JSON, as the API itself does.
      const refusal = place.guard.refusal(verdict, head);
      res.writeHead(refusal.status, refusal.headers);
      res.end(refusal.body);
    } else refuse(req, res, verdict, uri, place, verdict === 401 ? { 'WWW-Authenticate': place.guard.challenge() } : {});
  }

  /** `captures`: the request's `$1`..`$9` (its regex location's, or an `if`'s). */
  private content(req: IncomingMessage, res: ServerResponse, uri: string, place: Place, captures: readonly string[] | undefined): void {
    serveContent(req, res, uri, place, captures);
  }

  /** A response given in full at once: its bytes are all written or queued now. */
  private answered(socket: Socket, conn: Conn | undefined, res: ServerResponse, zone: HttpZone | undefined, location: HttpZone | undefined, started: number): void {
    const sent = res.writableEnded && !socket.destroyed;
    this.account(socket, conn, res, zone, location, sent, sent && res.shouldKeepAlive, started);
  }

  /** A response that takes its time: counted when it closes, and kept among the pending
   * ones a drain tells to close their connection. */
  private counted(socket: Socket, conn: Conn | undefined, res: ServerResponse, zone: HttpZone | undefined, location: HttpZone | undefined, started: number): void {
    const entry = this.pending.add(res);
    res.once('close', () => {
      this.pending.delete(entry);
      this.closed(socket, conn, res, zone, location, started);
    });
  }

  /** A response that took its time ended: written out, or cut short by the connection
   * closing first. */
  private closed(socket: Socket, conn: Conn | undefined, res: ServerResponse, zone: HttpZone | undefined, location: HttpZone | undefined, started: number): void {
    const sent = res.writableFinished;
    this.account(socket, conn, res, zone, location, sent, sent && !socket.destroyed && !socket.writableEnded, started);
    // Draining: a response that went out keep-alive leaves its connection idle for the
    // client's next request, until the sweep; after it, every connection closes.
    if (sent && this.draining && conn?.inflight === 0 && !socket.destroyed && (!res.shouldKeepAlive || this.swept)) socket.end();
  }

  /** Counts a response (or its absence) in its zones, and the connection as idle when it
   * stays open for the next request. */
  private account(
    socket: Socket,
    conn: Conn | undefined,
    res: ServerResponse,
    zone: HttpZone | undefined,
    location: HttpZone | undefined,
    sent: boolean,
    keepAlive: boolean,
    started: number,
  ): void {
    let received = 0;
    let written = 0;
    if (conn) {
      const read = socket.bytesRead;
      const wrote = bytesWritten(socket);
      received = read - conn.read;
      written = wrote - conn.written;
      conn.read = read;
      conn.written = wrote;
      conn.inflight--;
    }
    if (sent) {
      const ms = started === 0 ? undefined : performance.now() - started;
      zone?.responseSent(res.statusCode, received, written, ms);
      location?.responseSent(res.statusCode, received, written, ms);
      if (conn && conn.inflight === 0 && keepAlive && !this.draining) {
        conn.idle = true;
        this.conns.idle();
      }
    } else {
      zone?.requestDiscarded(received, written);
      location?.requestDiscarded(received, written);
    }
  }

  /** Stops accepting, lets requests in flight finish (their connections close after
   * them), closes the connections still idle DRAIN_IDLE_MS later; resolves once every
   * connection is gone. */
  drain(): Promise<void> {
    this.draining = true;
    // A response in flight closes its connection after it, and says so: a keep-alive
    // client would otherwise send its next request into the close that follows.
    this.pending.forEach((res) => {
      if (!res.headersSent) res.shouldKeepAlive = false;
    });
    // An idle keep-alive connection is not closed at once: its client may be sending the
    // next request into it right now, which would fail (ECONNRESET). That request is
    // answered with `Connection: close`; a connection idle for the whole grace is closed.
    const sweep = setTimeout(() => {
      this.swept = true;
      this.live.forEach((conn) => {
        if (conn.requests === 0) conn.closedByServer = true;
      });
      for (const server of this.servers) server.closeIdleConnections();
    }, DRAIN_IDLE_MS);
    // node:http's close() closes the idle connections too: net.Server's only stops listening.
    const closed = this.servers.map((server) => new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve())));
    return Promise.all(closed).then(() => {
      clearTimeout(sweep);
      for (const u of this.upstreams.values()) u.close();
    });
  }
}

/** A /config write through one of this worker's API locations, to the primary's log. */
function sendAudit(...args: Parameters<typeof auditLine>): void {
  process.send?.({ type: 'audit', line: auditLine(...args) } satisfies ToPrimary);
}
