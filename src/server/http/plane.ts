// A worker's HTTP data plane: a node:http or node:https server per listen address, the
// virtual servers behind each, and the exact accounting of connections and zones.
//
// Connections: `accepted` and `active` on accept; a connection is idle from the end of a
// response until its next request; `dropped` when the server closes it before any
// request reached a location (a malformed request, a request timeout, a failed TLS
// handshake, a shutdown). Zones: a request counts in its server's zone from its headers
// on, and in the zone of the location that answers it; its bytes are what the socket
// read and wrote for it, headers included (after TLS decryption, as nginx counts).
import * as http from 'node:http';
import { createServer as createHttpServer, ServerResponse, STATUS_CODES, type IncomingMessage, type Server, type ServerOptions } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { connections, type Connections } from '../../metrics/connections.js';
import { numberConnection, sameConnection } from '../core/connection.js';
import type { ConnectionBudget } from '../core/events.js';
import type { HttpZone } from '../../metrics/http-zones.js';
import { Resolvers } from '../resolver/peers.js';
import type { Status } from '../../metrics/status.js';
import type { ServerConfig, VirtualServerConfig } from '../config/model.js';
import { listenGroups, listenOptions } from '../listens.js';
import { auditLine } from '../audit.js';
import type { ToPrimary } from '../messages.js';
import { errorPage, sendPage, sendRedirect, useNginxReasons } from './pages.js';
import { ServerNames } from './server-names.js';
import { Site, type Place, type Route } from './site.js';
import type { Verdict } from './guard.js';
import { rewriteLocation, rewriteServer } from '../rewrite/script.js';
import { warnUninitialized } from '../rewrite/variables.js';
import { enter, refuse, serveContent } from './content.js';
import { UpstreamRuntime } from './upstream.js';
import { normalizeUri } from './uri.js';
import { ADMITTED, ANSWERED } from '../limits/runtime.js';
import { Roster } from '../roster.js';
import { logRequest, noteRequest } from '../log/access-log.js';
import { keepaliveDisabled, TOP_CORE, type CoreSettings } from './core/config.js';
import { nodeHttps } from '../ssl/modules.js';
import { askClientCertificate, TlsServers } from '../ssl/server.js';
import { checkClientCertificate, VERIFY_PAGES } from '../ssl/request.js';
import { checkHead, HEADER_TOO_LARGE, HEADER_TOO_LARGE_PAGE } from './core/request.js';
import { clientAddress, requestContext } from './variables.js';
import { acceptProxied } from './proxy-protocol.js';
import { closeResponse, offerUpgrade, upgradeOf } from './upgrade.js';
import { sendTimeoutOf, setSendTimeout } from './send-timeout.js';
import { writtenDirectly } from '../stream/relay.js';
import { acceptTls } from '../ssl/client-hello.js';
import { forwardToPrimary } from '../config-store/forward.js';
import type { ConfigRequest } from '../../api/config.js';
import type { ApiResponse } from '../../api/types.js';

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
  /** When it was accepted (Date.now()), for keepalive_time. */
  readonly since: number;
}

/** What a listen socket's node:http server applies to all its connections: nginx's
 * settings of its default server. */
interface ListenSettings {
  readonly core: CoreSettings;
  /** The idle time node gives a keep-alive connection after a response (it adds a
   * second to its keepAliveTimeout); a location that says otherwise sets its own. */
  readonly idle: number;
}

/** node:http adds this to keepAliveTimeout before closing an idle connection. */
const NODE_KEEP_ALIVE_BUFFER_MS = 1000;

/** node:http's options for nginx's settings: its head timeout and size are the
 * connection's, not a server's or location's. */
function serverOptions(core: CoreSettings): ServerOptions & { connectionsCheckingInterval: number } {
  const { number, size } = core.largeClientHeaderBuffers;
  return {
    headersTimeout: core.clientHeaderTimeout,
    // nginx has no limit on a whole request: client_body_timeout is between two reads.
    requestTimeout: 0,
    maxHeaderSize: number * size,
    // node checks the head timeout on this period.
    connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(core.clientHeaderTimeout / 4))),
  };
}

/** A listener in front of node:http's server: its sockets are as node:http's own, without
 * Nagle's delay (node:http's default), and wait paused for what the front reads first. */
const FRONT = { pauseOnConnect: true, noDelay: true } as const;

/** The keepAliveTimeout that makes node close an idle connection after `ms`, or as near as it goes. */
const nodeKeepAlive = (ms: number) => Math.max(1, ms - NODE_KEEP_ALIVE_BUFFER_MS);

type Internal = ServerResponse & { _keepAliveTimeout: number };

/** Since when a response's writes wait, and how far its socket had written then. */
const STALLED = Symbol('zonal.stalled');
type Sending = ServerResponse & { [STALLED]?: { readonly written: number; readonly since: number } };
/** How often the responses in flight are looked at for send_timeout. */
const SEND_CHECK_MS = 250;

/** Where a connection's accounting is kept: on its socket (for TLS, on both sockets). */
const CONN = Symbol('zonal.conn');
/** How long a draining worker leaves idle connections open for a last request. */
const DRAIN_IDLE_MS = 1000;
type Counted = Socket & { [CONN]?: Conn };

/** socket.bytesWritten without its cost: the getter copies the write queue into a new
 * array on every call; this is the same sum (checked for TCP and TLS sockets), with what
 * a tunnel after a 101 wrote past node (relay.ts). */
function bytesWritten(socket: Socket): number {
  return (socket as Socket & { _bytesDispatched: number })._bytesDispatched + socket.writableLength + writtenDirectly(socket);
}

export interface PlaneOptions {
  readonly status: Status;
  /** `worker_connections`: shared with the worker's stream plane. */
  readonly budget?: ConnectionBudget;
  /** TLS session ticket keys shared by all workers, so that a session resumes in any. */
  readonly ticketKeys?: Buffer;
}

export class HttpPlane {
  private readonly status: Status;
  private readonly conns: Connections;
  private readonly servers: Server[] = [];
  /** The listeners of `proxy_protocol` listens, which hand their connections to a server. */
  private readonly fronts: NetServer[] = [];
  private readonly live = new Roster<Conn>();
  private readonly sites = new Map<VirtualServerConfig, Site>();
  private readonly recorders = new Map<string, HttpZone>();
  private readonly upstreams = new Map<string, UpstreamRuntime>();
  /** The locations' resolvers (proxy_pass with variables); each made on first use. */
  private readonly resolvers: Resolvers;
  private draining = false;
  /** Responses that take their time (proxied, API, files), until they close: a drain
   * makes those whose head is not written yet say `Connection: close`. */
  private readonly pending = new Roster<ServerResponse>();
  /** Draining, and the idle connections were closed: the others close after their response. */
  private swept = false;
  /** The timer of send_timeout's checks. */
  private sendCheck?: NodeJS.Timeout;
  /** The TLS servers' contexts and session caches, made with the first `ssl` listen. */
  private tlsServers?: TlsServers;

  constructor(
    private readonly config: ServerConfig,
    private readonly options: PlaneOptions,
  ) {
    this.status = options.status;
    this.conns = connections(this.status);
    this.resolvers = new Resolvers(this.status);
    const catalog = this.status.catalog().http?.upstreams ?? [];
    for (const u of config.http?.upstreams ?? []) {
      const entry = catalog.find((c) => c.name === u.name);
      if (!entry) throw new Error(`the status has no upstream "${u.name}"`);
      this.upstreams.set(u.name, new UpstreamRuntime(this.status, u, entry));
    }
  }

  private site(server: VirtualServerConfig): Site {
    let s = this.sites.get(server);
    if (!s) {
      const forward = this.forward();
      s = new Site(server, { status: this.status, record: true, recorders: this.recorders, upstreams: this.upstreams, resolvers: this.resolvers, audit: sendAudit, ...(forward ? { forwardConfigWrites: forward } : {}) });
      this.sites.set(server, s);
    }
    return s;
  }

  private forwarder?: (request: ConfigRequest) => Promise<ApiResponse>;
  /** `config_store`: the primary commits /config writes; this worker sends them to it,
   * and waits a little longer than a write to the store may take (a wait for the next
   * endpoint, the transaction, settling one whose answer was lost and sending it again:
   * each bounded by the store's timeout). */
  private forward(): ((request: ConfigRequest) => Promise<ApiResponse>) | undefined {
    const store = this.config.configStore;
    if (!store) return undefined;
    return (this.forwarder ??= forwardToPrimary(10 * store.timeout + FORWARD_MARGIN_MS));
  }

  /** Listens on every data address; resolves once all listen. */
  async listen(): Promise<void> {
    this.sendCheck ??= setInterval(() => this.checkSends(), SEND_CHECK_MS).unref();
    useNginxReasons();
    for (const { listen, servers } of listenGroups(this.config, false)) {
      const names = new ServerNames(servers, listen);
      const sites = new Map(servers.map((s) => [s, this.site(s)]));
      const core = names.defaultServer.core ?? TOP_CORE;
      const options = serverOptions(core);
      const server = listen.ssl ? this.httpsServer(names, options) : createHttpServer(options);
      server.keepAliveTimeout = nodeKeepAlive(core.keepaliveTimeout);
      const settings: ListenSettings = { core, idle: server.keepAliveTimeout + NODE_KEEP_ALIVE_BUFFER_MS };
      // nginx looks up server names only when there is a choice: reading the Host header
      // makes node:http build the headers object.
      const only = servers.length === 1 ? this.site(servers[0]) : undefined;
      const handle = (req: IncomingMessage, res: ServerResponse) => {
        // Before the server is chosen: the host it is chosen by may change.
        const refused = checkHead(req, core);
        const site = only ?? sites.get(names.select(req.headers.host))!;
        this.request(req, res, site, settings, refused || checkClientCertificate(req, site.config.sslVerify));
      };
      server.on('request', handle);
      // zonal tunnels nothing. nginx refuses CONNECT as a method (405) when its target is
      // one it parses (a path or an absolute URL), and an authority-form target
      // (`host:port`) as a malformed request line (400).
      server.on('connect', (req: IncomingMessage, socket: Socket) => this.refuse(socket, /^(\/|[a-z][a-z0-9+.-]*:\/\/)/i.test(req.url ?? '') ? 405 : 400));
      // An upgrade request is answered as any other: a proxied one's peer may switch
      // protocols (upgrade.ts); otherwise the connection goes on with the requests that follow it.
      server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => answerUpgrade(server, req, socket, head, handle));
      server.on('connection', (socket: Socket) => this.accept(socket));
      server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.clientError(err, socket));
      this.servers.push(server);
      // With proxy_protocol, a listener of its own reads the header before node:http; with
      // ssl, the ClientHello before node's TLS ($ssl_ciphers).
      const listener = listen.proxyProtocol
        ? new NetServer(FRONT, (socket) => acceptProxied(server, socket))
        : listen.ssl
          ? new NetServer(FRONT, (socket) => acceptTls(server, socket, names.select(undefined).ssl!.handshakeTimeout, (late) => this.helloTimedOut(late, names)))
          : server;
      if (listener !== server) this.fronts.push(listener);
      await new Promise<void>((resolve, reject) => {
        listener.once('error', reject);
        listener.listen(listenOptions(listen), () => {
          listener.off('error', reject);
          resolve();
        });
      });
    }
  }

  private httpsServer(names: ServerNames, options: ServerOptions): Server {
    const tlsServers = (this.tlsServers ??= new TlsServers(this.status, this.options.ticketKeys));
    // A server of the address without a certificate of its own (nginx lets one listen
    // on an address another made TLS) has the default server's.
    const fallback = names.select(undefined).ssl!;
    const server = nodeHttps().createServer({
      ...options,
      ...tlsServers.serverOptions(fallback),
      // The server the client names gives the certificate and asks for the client's (a
      // method: node calls it on the TLS socket).
      SNICallback(this: TLSSocket, servername, cb) {
        try {
          const tls = names.selectServername(servername).ssl ?? fallback;
          askClientCertificate(this, tls.verifyClient !== 'off');
          cb(null, tlsServers.context(tls));
        } catch (e) {
          cb(e as Error, undefined);
        }
      },
    });
    tlsServers.keepSessions(server, fallback);
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
      sameConnection(socket, raw(socket));
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

  /** A client of an `ssl` listen that sent no ClientHello in the handshake's time: its
   * handshake timed out, in the default server's zone. */
  private helloTimedOut(socket: Counted, names: ServerNames): void {
    this.accept(socket);
    const conn = socket[CONN];
    if (conn) conn.closedByServer = true;
    const site = this.site(names.select(undefined));
    (site.zone ?? site.groupZone)?.sslTimedOut();
    socket.destroy();
  }

  private accept(socket: Counted): void {
    const conn: Conn = { requests: 0, inflight: 0, idle: false, closedByServer: false, read: 0, written: 0, since: Date.now() };
    socket[CONN] = conn;
    const entry = this.live.add(conn);
    numberConnection(socket, this.conns.accepted());
    const budget = this.options.budget;
    const counted = budget ? budget.take() : true;
    socket.once('close', () => {
      if (counted) budget?.give();
      this.live.delete(entry);
      if (conn.handshake) conn.handshake.zone?.sslHandshaked(conn.handshake.reused);
      if (conn.requests === 0 && conn.closedByServer) this.conns.dropped();
      else this.conns.closed(conn.idle);
    });
    if (this.draining || !counted) {
      conn.closedByServer = true;
      socket.destroy();
    }
  }

  /** What node:http does by default, and the connection marked as closed by the server. */
  private clientError(err: NodeJS.ErrnoException, socket: Counted): void {
    const conn = socket[CONN];
    // No state: a TLS socket whose handshake failed (node:https passes tlsClientError on
    // here), with nothing to answer in.
    // HPE_INVALID_EOF_STATE: the client ended its side in the middle of a request (its
    // body cut short): nothing more comes and nobody waits for the answer.
    if (!conn || err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.code === 'HPE_INVALID_EOF_STATE' || !socket.writable) {
      socket.destroy();
      return;
    }
    // The head was taken, then the parser refused what follows it (llhttp refuses a
    // Transfer-Encoding without chunked after the request is out): the response to that
    // request is the answer, and the connection closes after it.
    const current = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (current) {
      if (!current.headersSent) current.shouldKeepAlive = false;
      else if (current.writableFinished) socket.destroySoon();
      return;
    }
    this.refuse(socket, clientErrorCode(err));
  }

  /** Answers a request node:http will not hand over, and closes its connection. */
  private refuse(socket: Counted, code: number): void {
    const conn = socket[CONN];
    if (conn && conn.inflight === 0) conn.closedByServer = true;
    const body = code === HEADER_TOO_LARGE ? HEADER_TOO_LARGE_PAGE : errorPage(code);
    const status = code === HEADER_TOO_LARGE ? 400 : code;
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: text/html\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    socket.destroySoon();
  }

  /** `refused`: the status nginx answers the request's head with (checkHead), or 0. */
  private request(req: IncomingMessage, res: ServerResponse, site: Site, listen: ListenSettings, refused: number): void {
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
    let uri = normalizeUri(req.url ?? '/');
    // A group's zone is the one the request's key names ($uri as normalised).
    const zone = site.zoneOf ? site.zoneOf({ req, uri: uri ?? '', serverName: site.config.names[0] ?? '' }) : site.zone;
    if (conn?.handshake) {
      (zone ?? conn.handshake.zone)?.sslHandshaked(conn.handshake.reused);
      conn.handshake = undefined;
    }
    zone?.requestStarted();
    enter(res, site);
    site.nameVariables(req);
    const head = req.method === 'HEAD';
    if (uri === undefined || refused !== 0) {
      // nginx closes the connection after these.
      res.shouldKeepAlive = false;
      // A URI nginx could not parse leaves its $uri empty.
      noteRequest(res, site.place, uri ?? '');
      const page = refused === HEADER_TOO_LARGE ? HEADER_TOO_LARGE_PAGE : VERIFY_PAGES[refused];
      if (page !== undefined) {
        res.writeHead(400, { 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(page) });
        res.end(head ? undefined : page);
      } else sendPage(res, refused || 400, head);
      this.answered(socket, conn, res, zone, undefined, started);
      return;
    }
    // realip with the server's settings reads the client's address as the request comes
    // in (nginx's post-read phase), before the server's rewrite directives.
    site.place.realip?.(req);
    // The server's rewrite directives run before any location is searched, and may answer.
    const server = site.place.script ? rewriteServer(site, req, res, uri) : undefined;
    if (server) uri = server.uri;
    const routed: Route = server?.answered ? server : site.route(uri);
    const core = routed.place.core ?? site.place.core ?? listen.core;
    keepAlive(req, res, conn, core, listen);
    setSendTimeout(res, core.sendTimeout);
    // nginx checks the body's announced size once it has found the location, before its
    // rewrites (`return`) run.
    const length = core.clientMaxBodySize > 0 ? req.headers['content-length'] : undefined;
    if (length !== undefined && Number(length) > core.clientMaxBodySize) {
      const location = routed.place.zoneOf ? routed.place.zoneOf({ req, uri, serverName: site.config.names[0] ?? '' }) : routed.place.zone;
      location?.requestStarted();
      res.shouldKeepAlive = false;
      sendPage(res, 413, head);
      this.answered(socket, conn, res, zone, location, started);
      return;
    }
    // The location's rewrite directives, and the search again of the URI they change.
    const rewrites = !server?.answered && routed.redirect === undefined && (routed.place.script !== undefined || routed.groups !== undefined);
    const rewritten = rewrites ? rewriteLocation(site, routed, req, res, uri) : undefined;
    if (rewritten) uri = rewritten.uri;
    const redirect = routed.redirect ?? rewritten?.redirect;
    if (redirect !== undefined) {
      // A location's auto redirect: answered as nginx does once it found the location,
      // before the location's `if` blocks, limits and access checks.
      const found = rewritten?.place ?? routed.place;
      const location = found.zoneOf ? found.zoneOf({ req, uri, serverName: site.config.names[0] ?? '' }) : found.zone;
      location?.requestStarted();
      noteRequest(res, found, uri);
      sendRedirect(req, res, redirect, found.content?.redirect, site.serverName);
      this.answered(socket, conn, res, zone, location, started);
      return;
    }
    const place = rewritten?.place ?? routed.place;
    const captures: readonly string[] | undefined = rewritten ? rewritten.captures : routed.captures;
    warnUninitialized(req, place.warn);
    // The location's realip, unless the server's found the address (nginx's preaccess).
    place.realip?.(req);
    const location = place.zoneOf ? place.zoneOf({ req, uri, serverName: site.config.names[0] ?? '', ...(captures ? { captures } : {}) }) : place.zone;
    location?.requestStarted();
    noteRequest(res, place, uri);
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
    if (place.guard.open) this.content(req, res, uri, place, captures);
    else {
      const verdict = place.guard.check(clientAddress(req), req.headers.authorization, requestContext(req, res, uri, captures));
      if (typeof verdict === 'number') this.guarded(verdict, req, res, uri, place, captures);
      else verdict.then((v) => this.guarded(v, req, res, uri, place, captures), () => this.guarded(403, req, res, uri, place, captures));
    }
  }

  private guarded(verdict: Verdict, req: IncomingMessage, res: ServerResponse, uri: string, place: Place, captures: readonly string[] | undefined): void {
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
    // The log phase: the request's access_log line (none where none is configured).
    logRequest(res, received, written);
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
  /**
   * nginx's send_timeout: a response whose socket has had bytes waiting to go, and wrote
   * none of them, for the timeout (a client that stopped reading) has its connection
   * closed. Looked at on a period rather than with a timer per write: a response that
   * flows costs nothing.
   */
  private checkSends(): void {
    const now = performance.now();
    this.pending.forEach((res) => {
      const r = res as Sending;
      const socket = res.socket;
      if (!socket || socket.destroyed || socket.writableLength === 0) {
        if (r[STALLED]) r[STALLED] = undefined;
        return;
      }
      const written = (socket as Socket & { _bytesDispatched: number })._bytesDispatched;
      const stalled = r[STALLED];
      if (!stalled || stalled.written !== written) r[STALLED] = { written, since: now };
      else if (now - stalled.since >= sendTimeoutOf(res)) socket.destroy();
    });
  }

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
    const closed = [...this.servers, ...this.fronts].map((server) => new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve())));
    return Promise.all(closed).then(() => {
      clearTimeout(sweep);
      clearInterval(this.sendCheck);
      for (const u of this.upstreams.values()) u.close();
      this.resolvers.close();
    });
  }
}

/** The status a request node's parser refused is answered with, as nginx answers it. */
function clientErrorCode(err: NodeJS.ErrnoException & { rawPacket?: Buffer }): number {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    // The whole head is over maxHeaderSize: nginx says 414 when the request line alone
    // fills its buffers. What was read in the last read tells, for a head sent at once.
    const packet = err.rawPacket;
    return packet && packet.indexOf(0x0a) < 0 ? 414 : HEADER_TOO_LARGE;
  }
  // A Transfer-Encoding that does not end with `chunked`; nginx's check of the version comes first.
  if (err.code === 'HPE_INVALID_TRANSFER_ENCODING') return err.rawPacket && /^\S+ \S+ HTTP\/1\.0\r?\n/.test(err.rawPacket.toString('latin1', 0, 8192)) ? 400 : 501;
  return 400;
}

/**
 * The keep-alive of a response as the location's settings say: none after
 * `keepalive_requests` requests, past `keepalive_time`, or with `keepalive_timeout 0`;
 * the `Keep-Alive` header only with keepalive_timeout's second argument; an idle time of
 * the location's own when it is not the listen socket's.
 */
function keepAlive(req: IncomingMessage, res: ServerResponse, conn: Conn | undefined, core: CoreSettings, listen: ListenSettings): void {
  (res as Internal)._keepAliveTimeout = core.keepaliveHeader === null ? 0 : core.keepaliveHeader * 1000;
  if (!res.shouldKeepAlive) return;
  if (
    core.keepaliveTimeout === 0 ||
    (conn && (conn.requests >= core.keepaliveRequests || Date.now() - conn.since > core.keepaliveTime)) ||
    ((core.keepaliveDisable.safari || (core.keepaliveDisable.msie6 && req.method === 'POST')) && keepaliveDisabled(core.keepaliveDisable, req.method, req.headers['user-agent']))
  ) {
    res.shouldKeepAlive = false;
    return;
  }
  if (core.keepaliveTimeout === listen.idle) return;
  const socket = req.socket;
  const idle = core.keepaliveTimeout;
  res.once('finish', () => {
    // After node's own (it set its timeout): only when no pipelined response goes on.
    if (res.shouldKeepAlive && !socket.destroyed && !(socket as Socket & { _httpMessage?: unknown })._httpMessage) socket.setTimeout(idle);
  });
}

/**
 * An `Upgrade` request (node:http hands the socket over for any): answered as a normal
 * request. Unless its answer was a peer's 101 (the proxy took the connection, and closes
 * the response when the tunnel closes), the connection then goes back to node:http with
 * the bytes that came after the request's head, the next requests among them.
 */
function answerUpgrade(server: Server, req: IncomingMessage, socket: Socket, head: Buffer, handle: (req: IncomingMessage, res: ServerResponse) => void): void {
  const res = new ServerResponse(req);
  res.assignSocket(socket);
  offerUpgrade(req, socket, head);
  res.once('finish', () => {
    res.detachSocket(socket);
    if (upgradeOf(req)!.taken) return;
    // node:http's server responses close after 'finish'; this one is not node's.
    process.nextTick(() => closeResponse(res));
    if (!res.shouldKeepAlive || socket.destroyed) {
      socket.destroySoon();
      return;
    }
    // node:http's own connection set-up (not the server's 'connection' listeners: the
    // connection is counted already, and a TLS one is past its handshake).
    _connectionListener.call(server, socket);
    if (head.length > 0) socket.emit('data', head);
  });
  handle(req, res);
}

/** node:http's set-up of a connection it serves: exported by node (since 0.x) though not typed. */
const { _connectionListener } = http as unknown as { _connectionListener: (this: Server, socket: Socket) => void };

/** How much longer than a store's write a worker waits for the primary's answer. */
const FORWARD_MARGIN_MS = 1000;

/** A /config write through one of this worker's API locations, to the primary's log. */
function sendAudit(...args: Parameters<typeof auditLine>): void {
  process.send?.({ type: 'audit', line: auditLine(...args) } satisfies ToPrimary);
}
