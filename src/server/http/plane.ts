// A worker's HTTP data plane: a node:http or node:https server per listen address, the
// virtual servers behind each, and the exact accounting of connections and zones.
//
// Connections: `accepted` and `active` on accept; a connection is idle from the end of a
// response until its next request; `dropped` when the server closes it before any
// request reached a location (a malformed request, a request timeout, a failed TLS
// handshake, a shutdown). Zones: a request counts in its server's zone from its headers
// on, and in the zone of the location that answers it; its bytes are what the socket
// read and wrote for it, headers included (after TLS decryption, as nginx counts).
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';
import { apiListener, type ApiListener } from '../../transport/http.js';
import { connections, type Connections } from '../../metrics/connections.js';
import type { HttpZone } from '../../metrics/http-zones.js';
import type { Status } from '../../metrics/status.js';
import type { ListenConfig, ServerConfig, VirtualServerConfig } from '../config/model.js';
import { errorPage, sendPage } from './pages.js';
import { ServerNames } from './server-names.js';
import { Site, type Place } from './site.js';
import { serveStatic } from './static.js';
import { normalizeUri } from './uri.js';

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
}

export interface PlaneOptions {
  readonly status: Status;
  /** TLS session ticket keys shared by all workers, so that a session resumes in any. */
  readonly ticketKeys?: Buffer;
}

/** The listen addresses of the configuration's non-admin servers, each with its servers. */
export function dataListens(config: ServerConfig): Array<{ listen: ListenConfig; servers: VirtualServerConfig[] }> {
  const out = new Map<string, { listen: ListenConfig; servers: VirtualServerConfig[] }>();
  for (const server of config.http?.servers ?? []) {
    if (server.admin) continue;
    for (const listen of server.listens) {
      const key = `${listen.host}:${listen.port}`;
      let entry = out.get(key);
      if (!entry) out.set(key, (entry = { listen, servers: [] }));
      if (!entry.servers.includes(server)) entry.servers.push(server);
    }
  }
  return [...out.values()];
}

export class HttpPlane {
  private readonly status: Status;
  private readonly conns: Connections;
  private readonly servers: Server[] = [];
  private readonly live = new Set<Conn>();
  private readonly states = new WeakMap<Socket, Conn>();
  private readonly sites = new Map<VirtualServerConfig, Site>();
  private readonly recorders = new Map<string, HttpZone>();
  private readonly apis = new WeakMap<Place, ApiListener>();
  private draining = false;

  constructor(
    private readonly config: ServerConfig,
    private readonly options: PlaneOptions,
  ) {
    this.status = options.status;
    this.conns = connections(this.status);
  }

  private site(server: VirtualServerConfig): Site {
    let s = this.sites.get(server);
    if (!s) this.sites.set(server, (s = new Site(server, { status: this.status, record: true, recorders: this.recorders })));
    return s;
  }

  /** Listens on every data address; resolves once all listen. */
  async listen(): Promise<void> {
    for (const { listen, servers } of dataListens(this.config)) {
      const names = new ServerNames(servers, listen);
      const sites = new Map(servers.map((s) => [s, this.site(s)]));
      const server = listen.ssl ? this.httpsServer(names) : createHttpServer();
      server.on('request', (req: IncomingMessage, res: ServerResponse) => this.request(req, res, sites.get(names.select(req.headers.host))!));
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
          cb(null, contextOf(names.select(servername)));
        } catch (e) {
          cb(e as Error, undefined);
        }
      },
    });
    // The zone a handshake counts in: the server its SNI names, else the default one.
    const zoneOf = (socket: TLSSocket) => this.site(names.select((socket as TLSSocket & { servername?: string | false }).servername || undefined)).zone;
    server.on('secureConnection', (socket: TLSSocket) => {
      const conn = this.states.get((socket as TLSSocket & { _parent?: Socket })._parent ?? socket);
      if (conn) this.states.set(socket, conn);
      zoneOf(socket)?.sslHandshaked(socket.isSessionReused());
    });
    server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: TLSSocket) => {
      const conn = this.states.get((socket as TLSSocket & { _parent?: Socket })._parent ?? socket);
      if (conn) conn.closedByServer = true;
      const zone = zoneOf(socket);
      if (err.code === 'ERR_TLS_HANDSHAKE_TIMEOUT') zone?.sslTimedOut();
      else zone?.sslFailed();
    });
    return server;
  }

  private accept(socket: Socket): void {
    const conn: Conn = { requests: 0, inflight: 0, idle: false, closedByServer: false, read: 0, written: 0 };
    this.states.set(socket, conn);
    this.live.add(conn);
    this.conns.accepted();
    socket.once('close', () => {
      this.live.delete(conn);
      if (conn.requests === 0 && conn.closedByServer) this.conns.dropped();
      else this.conns.closed(conn.idle);
    });
    if (this.draining) {
      conn.closedByServer = true;
      socket.destroy();
    }
  }

  /** What node:http does by default, and the connection marked as closed by the server. */
  private clientError(err: NodeJS.ErrnoException, socket: Socket): void {
    const conn = this.states.get(socket);
    // No state: a TLS socket whose handshake failed (node:https passes tlsClientError on
    // here), with nothing to answer in.
    if (!conn || err.code === 'ECONNRESET' || err.code === 'EPIPE' || !socket.writable) {
      socket.destroy();
      return;
    }
    if (conn.inflight === 0) conn.closedByServer = true;
    const code = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const body = errorPage(code);
    socket.end(`HTTP/1.1 ${code} ${code === 408 ? 'Request Timeout' : code === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\nContent-Type: text/html\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    socket.destroySoon();
  }

  private request(req: IncomingMessage, res: ServerResponse, site: Site): void {
    const socket = req.socket;
    const conn = this.states.get(socket);
    if (conn) {
      if (conn.idle) {
        conn.idle = false;
        this.conns.busy();
      }
      conn.requests++;
      conn.inflight++;
    }
    if (this.draining) res.shouldKeepAlive = false;
    site.zone?.requestStarted();
    const uri = normalizeUri(req.url ?? '/');
    const place = uri === undefined ? undefined : site.find(uri);
    place?.zone?.requestStarted();
    res.once('close', () => this.done(socket, conn, res, site.zone, place?.zone));
    if (uri === undefined || !place) {
      sendPage(res, 400, req.method === 'HEAD');
      return;
    }
    if (place.guard.open) this.content(req, res, uri, place);
    else {
      const verdict = place.guard.check(req.socket.remoteAddress ?? '', req.headers.authorization);
      if (typeof verdict === 'number') this.guarded(verdict, req, res, uri, place);
      else verdict.then((v) => this.guarded(v, req, res, uri, place), () => this.guarded(403, req, res, uri, place));
    }
  }

  private guarded(verdict: 0 | 401 | 403, req: IncomingMessage, res: ServerResponse, uri: string, place: Place): void {
    if (res.destroyed) return;
    if (verdict === 0) {
      this.content(req, res, uri, place);
      return;
    }
    const head = req.method === 'HEAD';
    const extra: Record<string, string> = verdict === 401 ? { 'WWW-Authenticate': place.guard.challenge() } : {};
    if (!place.api) {
      sendPage(res, verdict, head, extra);
      return;
    }
    // API locations answer in JSON, as the API itself does.
    const body = JSON.stringify(
      verdict === 401
        ? { error: 'Unauthorized', description: 'Valid credentials are required for the requested API element.' }
        : { error: 'Forbidden', description: 'Access to the requested API element is forbidden.' },
      null,
      '\t',
    ) + '\n';
    res.writeHead(verdict, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...extra });
    res.end(head ? undefined : body);
  }

  private content(req: IncomingMessage, res: ServerResponse, uri: string, place: Place): void {
    if (place.return) place.return.send(res, req.method === 'HEAD');
    else if (place.api) {
      let listener = this.apis.get(place);
      if (!listener) this.apis.set(place, (listener = apiListener(place.api)));
      listener(req, res);
    } else if (place.root) {
      serveStatic(place.root, uri, req, res).catch(() => {
        if (!res.headersSent) sendPage(res, 500, req.method === 'HEAD');
        else res.destroy();
      });
    } else sendPage(res, 404, req.method === 'HEAD');
  }

  /** A response ended: written out, or cut short by the connection closing. */
  private done(socket: Socket, conn: Conn | undefined, res: ServerResponse, zone: HttpZone | undefined, location: HttpZone | undefined): void {
    let received = 0;
    let sent = 0;
    if (conn) {
      received = socket.bytesRead - conn.read;
      sent = socket.bytesWritten - conn.written;
      conn.read = socket.bytesRead;
      conn.written = socket.bytesWritten;
      conn.inflight--;
    }
    if (res.writableFinished) {
      zone?.responseSent(res.statusCode, received, sent);
      location?.responseSent(res.statusCode, received, sent);
      if (conn && conn.inflight === 0 && !socket.destroyed && !socket.writableEnded) {
        if (this.draining) socket.end();
        else {
          conn.idle = true;
          this.conns.idle();
        }
      }
    } else {
      zone?.requestDiscarded(received, sent);
      location?.requestDiscarded(received, sent);
    }
  }

  /** Stops accepting, closes idle connections, lets requests in flight finish (their
   * connections close after them); resolves once every connection is gone. */
  drain(): Promise<void> {
    this.draining = true;
    for (const conn of this.live) if (conn.requests === 0) conn.closedByServer = true;
    return Promise.all(
      this.servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeIdleConnections();
          }),
      ),
    ).then(() => undefined);
  }
}
