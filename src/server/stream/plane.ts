// A worker's stream data plane (nginx's stream module): a TCP listener per stream listen
// address, and for each client connection a session through nginx's phases in order:
// the PROXY protocol header (a bad one ends the session with 400; a good one names the
// client), access rules (403), the TLS handshake on `ssl` listens (a failure discards
// the connection: no session exists yet), then the proxy: a peer chosen by the
// upstream's balancer, the next one after a failed connect (proxy_next_upstream), 502
// when none could be reached.
//
// Bytes go both ways with backpressure: a side's reads pause while the other side's
// writes are queued, so a bulk transfer holds at most a socket buffer or two in memory.
// A side's end (FIN) ends the session once what that side sent is passed on, as nginx's
// default; with `proxy_half_close on` it is passed on to the other side and the session
// lasts until both sides have closed (an echo or a request/response protocol that
// half-closes keeps its answer). `proxy_timeout` is the longest silence in both
// directions at once, as nginx's.
//
// Counted: the server zone's connections, sessions by code, bytes (after TLS decryption)
// and handshakes; the peer's selections, bytes, failures and its connect, first byte and
// last byte times, measured from the start of the connect to the peer as nginx's are.
import { errorLogOf } from '../log/error-log.js';
import { logSession, streamLog } from '../log/access-log.js';
import { connectionNumber, numberConnection } from '../core/connection.js';
import { connect, createServer, type NetConnectOpts, type Server, type Socket } from 'node:net';
import { connect as connectTls, createServer as createTlsServer, TLSSocket, type SecureContext } from 'node:tls';
import { TlsServers } from '../ssl/server.js';
import { tlsProfile, type TlsProfile } from '../ssl/proxy.js';
import { tlsFacts, type TlsFacts } from '../ssl/variables.js';
import { clientVerification, trustedFiles, verifyRefusal } from '../ssl/verify.js';
import { connections, type Connections } from '../../metrics/connections.js';
import type { ConnectionBudget } from '../core/events.js';
import type { Status } from '../../metrics/status.js';
import { streamZone, type SessionStatus, type StreamZone } from '../../metrics/stream-zones.js';
import { accessChecker, type AccessChecker } from '../access/runtime.js';
import type { ConnectionLimiter, LimitRelease } from '../../metrics/limits.js';
import type { ServerConfig, UpstreamBlockConfig } from '../config/model.js';
import { Balancer } from '../upstream/balancer.js';
import type { StreamListen, StreamServerConfig } from './config.js';
import { listenAddress } from '../config/values.js';
import { listenOptions } from '../listens.js';
import { readProxyHeader, type ProxySource } from './proxy-protocol.js';
import { tunnel } from './tunnel.js';
import { acceptTls, prereadClientHello, type ClientHello } from '../ssl/client-hello.js';
import { proxyHeaderV1 } from './proxy-protocol.js';
import type { StreamRecord } from './variables.js';
import { streamVariables } from '../config/variables.js';

/** Bytes a side may have queued for writing before the other side's reads pause: with
 * node's 16 KiB default every 64 KiB read would pause and resume the reading side
 * (two epoll changes a read); a session holds at most about twice this. */
const QUEUED = 256 * 1024;

export interface StreamPlaneOptions {
  readonly status: Status;
  /** `worker_connections`: shared with the worker's HTTP plane. */
  readonly budget?: ConnectionBudget;
  /** TLS session ticket keys shared by all workers, so that a session resumes in any. */
  readonly ticketKeys?: Buffer;
}

/** A stream upstream in a worker: its balancer, its hash key, the last TLS session of
 * each peer (`proxy_ssl`). */
class StreamUpstream {
  readonly balancer: Balancer;
  readonly key?: (session: Session) => string;
  readonly sessions = new Map<string, Buffer>();

  constructor(status: Status, config: UpstreamBlockConfig) {
    const entry = status.catalog().stream?.upstreams?.find((u) => u.name === config.name);
    if (!entry) throw new Error(`the status has no stream upstream "${config.name}"`);
    this.balancer = new Balancer(status, entry, config.method, { protocol: 'stream' });
    const method = config.method;
    if (method.kind === 'hash') this.key = streamKey(method.key);
  }
}

/** A hash or limit_conn key: any stream variable, with the session's values so far. */
function streamKey(text: string): (session: Session) => string {
  const value = streamVariables.compile(text);
  return (session) => value(session.record());
}

/** A stream server in a worker. */
class StreamSite {
  readonly zone?: StreamZone;
  readonly allowed: AccessChecker;
  /** `limit_conn`: each a limiter over its zone (counts shared by the workers) and its key. */
  readonly limiters: ReadonlyArray<{ readonly limiter: ConnectionLimiter; readonly key: (s: Session) => string }>;
  /** `access_log` of the server, compiled (absent: none). */
  readonly log = streamLog(this.config.accessLogs);
  /** `return`'s value, for a session. */
  readonly answer?: (r: StreamRecord) => string;
  /** `proxy_pass` with variables: the upstream's name or an address, for a session. */
  readonly target?: (r: StreamRecord) => string;
  /** `proxy_ssl on`: how its connections to the peers talk TLS (proxy_ssl_*). */
  readonly peerTls: TlsProfile | undefined = this.config.proxy.peerTls && tlsProfile(this.config.proxy.peerTls.ssl, this.config.proxy.peerTls.client);

  /** `upstream`: proxy_pass's, absent with `return` or variables (`upstreams`: all of
   * them, by name, for a value to name one). */
  constructor(
    readonly config: StreamServerConfig,
    readonly upstream: StreamUpstream | undefined,
    readonly upstreams: ReadonlyMap<string, StreamUpstream>,
    status: Status,
    zones: Map<string, StreamZone>,
  ) {
    if (config.return !== undefined) this.answer = streamVariables.compile(config.return);
    if (config.proxy.target !== undefined) this.target = streamVariables.compile(config.proxy.target);
    const name = config.statusZone;
    if (name !== undefined) {
      let z = zones.get(name);
      if (!z) zones.set(name, (z = streamZone(status, name)));
      this.zone = z;
    }
    this.allowed = accessChecker(config.access);
    const limits = config.limits;
    this.limiters = (limits?.conns ?? []).map((c) => ({
      limiter: status.limitConn(c.zone, { limit: c.limit, dryRun: limits!.dryRun, stream: true }),
      key: streamKey(c.key),
    }));
  }

  /** The context of an `ssl proxy_protocol` listen, which runs its handshakes itself. */
  secureContext(tls: TlsServers): SecureContext {
    return tls.context(this.config.ssl!);
  }

  /** A handshake that completed: the client's certificate must satisfy
   * ssl_verify_client, else the connection goes as one whose handshake failed (nginx
   * ends the session there too). */
  verified(socket: TLSSocket): boolean {
    const ssl = this.config.ssl!;
    return verifyRefusal(ssl.verifyClient, clientVerification(socket, ssl.verifyDepth, trustedFiles(ssl))) === undefined;
  }
}

export class StreamPlane {
  private readonly status: Status;
  private readonly conns: Connections;
  private readonly servers: Server[] = [];
  private readonly sites: StreamSite[] = [];
  /** Sessions in progress: a count, which is all a drain needs (a Set of their sockets
   * kept each one alive past the young generation's collections: src/server/roster.ts). */
  private live = 0;
  private draining = false;
  private drained: (() => void) | undefined;
  /** The TLS servers' contexts and session caches, made with the first `ssl` listen. */
  private tls?: TlsServers;
  private readonly ticketKeys: Buffer | undefined;
  private readonly budget: ConnectionBudget | undefined;

  constructor(config: ServerConfig, options: StreamPlaneOptions) {
    this.status = options.status;
    this.ticketKeys = options.ticketKeys;
    this.budget = options.budget;
    this.conns = connections(this.status);
    const upstreams = new Map<string, StreamUpstream>();
    for (const u of config.stream?.upstreams ?? []) upstreams.set(u.name, new StreamUpstream(this.status, u));
    const zones = new Map<string, StreamZone>();
    for (const s of config.stream?.servers ?? []) this.sites.push(new StreamSite(s, upstreams.get(s.proxy.upstream), upstreams, this.status, zones));
  }

  async listen(): Promise<void> {
    for (const site of this.sites)
      for (const listen of site.config.listens) {
        // With proxy_protocol the header comes before the handshake: the listener is
        // plain and the session starts TLS itself (handshake()). Its certificate is
        // read now, as a TLS server's is, not at the first connection.
        if (listen.ssl && listen.proxyProtocol) site.secureContext(this.tlsServers());
        // A TLS listen's ClientHello is read before node's TLS server takes the connection
        // ($ssl_ciphers, TLS 1.3 sessions from the cache).
        const tls = listen.ssl && !listen.proxyProtocol ? this.tlsServer(site, listen) : undefined;
        const server = tls
          ? createServer({ pauseOnConnect: true }, (socket) => acceptTls(tls, socket, site.config.ssl!.handshakeTimeout, (late) => this.helloTimedOut(site, listen, late)))
          : createServer({ allowHalfOpen: true, highWaterMark: QUEUED }, (socket) => this.accept(site, listen, socket));
        this.servers.push(server);
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(listenOptions(listen), () => {
            server.off('error', reject);
            resolve();
          });
        });
      }
  }

  /** node's TLS server: it begins the handshake as the connection comes; the access
   * rules (nginx checks them before the handshake) close the raw socket at once. */
  private tlsServers(): TlsServers {
    return (this.tls ??= new TlsServers(this.status, this.ticketKeys));
  }

  private tlsServer(site: StreamSite, listen: StreamListen): Server {
    const ssl = site.config.ssl!;
    const server = createTlsServer(this.tlsServers().serverOptions(ssl));
    this.tlsServers().keepSessions(server, ssl);
    server.on('connection', (raw: Socket) => this.accept(site, listen, raw));
    server.on('secureConnection', (tls: TLSSocket) => {
      const session = sessionOf(tls);
      if (!session || session.code !== undefined) return void tls.destroy();
      if (!site.verified(tls)) {
        site.zone?.sslFailed();
        tls.destroy();
        return session.discard();
      }
      session.handshaked = true;
      if (site.log) session.tls = tlsFacts(tls);
      site.zone?.sslHandshaked(tls.isSessionReused());
      tls.on('error', () => {});
      session.proxy(tls);
    });
    server.on('tlsClientError', (err: NodeJS.ErrnoException, tls: TLSSocket) => {
      const session = sessionOf(tls);
      // Refused before the handshake: not a TLS failure.
      if (!session || session.code !== undefined) return;
      if (err.code === 'ERR_TLS_HANDSHAKE_TIMEOUT') site.zone?.sslTimedOut();
      else site.zone?.sslFailed();
      session.discard();
    });
    return server;
  }

  /** A client of a TLS listen that sent no ClientHello in the handshake's time: its
   * handshake timed out. */
  private helloTimedOut(site: StreamSite, listen: StreamListen, raw: Socket): void {
    this.accept(site, listen, raw);
    const session = (raw as WithSession)[SESSION];
    // Refused before the handshake: not a TLS failure.
    if (!session || session.code !== undefined) return void raw.destroy();
    site.zone?.sslTimedOut();
    session.discard();
  }

  /** Stops accepting; resolves once every session has ended. */
  drain(): Promise<void> {
    this.draining = true;
    const closed = this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
    const sessions = new Promise<void>((resolve) => {
      if (this.live === 0) resolve();
      else this.drained = resolve;
    });
    return Promise.all([...closed, sessions]).then(() => {});
  }

  private accept(site: StreamSite, listen: StreamListen, raw: Socket): void {
    numberConnection(raw, this.conns.accepted());
    site.zone?.connectionStarted();
    if (this.draining || (this.budget && !this.budget.take())) {
      raw.destroy();
      this.conns.dropped();
      site.zone?.connectionDiscarded(0, 0);
      return;
    }
    raw.setNoDelay(true);
    // A TLS server's socket reads the raw one itself.
    if (!listen.ssl || listen.proxyProtocol) raw.pause();
    this.live++;
    const session = new Session(site, raw, this.conns, () => {
      this.live--;
      this.budget?.give();
      if (this.draining && this.live === 0) this.drained?.();
    });
    (raw as WithSession)[SESSION] = session;
    raw.on('error', () => {});
    raw.once('close', () => {
      session.clientClosed = true;
      session.maybeEnd();
    });
    if (listen.proxyProtocol)
      readProxyHeader(raw, (ok, consumed, source) => {
        session.received += consumed;
        session.source = source;
        if (ok) this.admit(session, listen);
        else session.refuse(400);
      });
    else this.admit(session, listen);
  }

  private admit(session: Session, listen: StreamListen): void {
    const { site, raw } = session;
    // nginx's phases: limit_conn (preaccess) before the access rules.
    for (const l of site.limiters) {
      const release = l.limiter.acquire(l.key(session));
      if (!release) {
        errorLogOf(site.config.errorLogs).log('error', `limiting connections by zone "${l.limiter.zone}", client: ${session.remoteAddress ?? ''}, server: ${listenAddress(listen)}`);
        return session.refuse(503);
      }
      session.held.push(release);
    }
    // Without rules the client's address is not asked for (a getpeername each).
    if (site.config.access.length > 0 && !site.allowed(session.remoteAddress)) return session.refuse(403);
    // A TLS listen's session goes on once its handshake is done (secureConnection).
    if (!listen.ssl) session.proxy(raw);
    else if (listen.proxyProtocol) this.handshake(session);
  }

  /** The handshake of an `ssl proxy_protocol` listen, counted as tlsServer() counts its
   * own. The TLSSocket takes over the socket's handle and reads first what the socket
   * holds already: what the PROXY header's reader read past the header and put back,
   * often the start of the ClientHello. */
  private handshake(session: Session): void {
    const { site, raw } = session;
    const ssl = site.config.ssl!;
    const tls = new TLSSocket(raw, { isServer: true, secureContext: site.secureContext(this.tlsServers()), requestCert: ssl.verifyClient !== 'off', rejectUnauthorized: false });
    let over = false;
    const end = (): boolean => {
      if (over) return false;
      over = true;
      clearTimeout(timer);
      return true;
    };
    /** The handshake did not complete: counted once, by `count`, and the connection goes. */
    const failed = (count: () => void) => () => {
      if (!end()) return;
      count();
      tls.destroy();
      session.discard();
    };
    // nginx's ssl_handshake_timeout runs from the start of the handshake.
    const timer = setTimeout(failed(() => site.zone?.sslTimedOut()), site.config.ssl!.handshakeTimeout);
    // An error after the handshake ends the session through its sockets' close. A client
    // gone or half-closed during the handshake: node's TLS server reports it as an error
    // (tlsClientError, ECONNRESET), a TLSSocket of one's own does not.
    const refused = failed(() => site.zone?.sslFailed());
    tls.on('error', refused);
    tls.once('end', refused);
    raw.once('close', refused);
    tls.once('secure', () => {
      if (!end()) return;
      if (!site.verified(tls)) {
        site.zone?.sslFailed();
        tls.destroy();
        return session.discard();
      }
      session.handshaked = true;
      if (site.log) session.tls = tlsFacts(tls);
      site.zone?.sslHandshaked(tls.isSessionReused());
      session.proxy(tls);
    });
  }
}

const SESSION = Symbol('zonal.session');
type WithSession = Socket & { [SESSION]?: Session };
/** The session of a TLS socket: kept on the raw socket under it. */
const sessionOf = (tls: TLSSocket) => ((tls as TLSSocket & { _parent?: Socket })._parent as WithSession | undefined)?.[SESSION];

/** A plain connection to a peer; node's Socket takes stream options (highWaterMark)
 * that its connect() types leave out. */
function plainPeer(host: string, port: number): NetConnectOpts {
  const where = host.startsWith('unix:') ? { path: host.slice(5) } : { host, port };
  const options = { ...where, allowHalfOpen: true, noDelay: true, highWaterMark: QUEUED };
  return options;
}

class Session {
  /** Bytes from and to the client (decrypted). */
  received = 0;
  sent = 0;
  code: SessionStatus | undefined;
  /** What limit_conn took for the session, given back when it ends. */
  readonly held: LimitRelease[] = [];
  discarded = false;
  clientClosed = false;
  peerClosed = true;
  handshaked = false;
  /** The client the PROXY protocol header named. */
  source: ProxySource | undefined;
  /** Its TLS variables, for its log line. */
  tls: TlsFacts | undefined;
  private ended = false;
  /** For the access log: when it began, and every peer tried. */
  private readonly begun = performance.now();
  private readonly peers: string[] = [];
  private peerReceived = 0;
  private peerSent = 0;
  private start = 0;
  private connectMs = 0;
  private firstByteMs: number | undefined;
  private readonly tried = new Set<number>();
  private attempts = 0;
  /** When the first peer was tried (proxy_next_upstream_timeout). */
  private firstTry = 0;
  /** What ssl_preread read. */
  private hello: ClientHello | undefined;
  /** The upstream of this session: proxy_pass's, or the one its value names. */
  private upstream: StreamUpstream | undefined;

  /** The socket's addresses, kept for the log line: a closed socket has none. */
  private readonly kept?: { readonly remoteAddress?: string; readonly remotePort?: number; readonly localAddress?: string; readonly localPort?: number };

  constructor(
    readonly site: StreamSite,
    readonly raw: Socket,
    private readonly conns: Connections,
    private readonly onEnd: () => void,
  ) {
    if (site.log) this.kept = { remoteAddress: raw.remoteAddress, remotePort: raw.remotePort, localAddress: raw.localAddress, localPort: raw.localPort };
  }

  // Client: the socket's own addresses, asked for only when used (a getpeername each).
  get remoteAddress(): string | undefined {
    return this.source ? this.source.address : (this.kept ?? this.raw).remoteAddress;
  }
  get remotePort(): number | undefined {
    return this.source ? this.source.port : (this.kept ?? this.raw).remotePort;
  }
  get localAddress(): string | undefined {
    return (this.kept ?? this.raw).localAddress;
  }
  get localPort(): number | undefined {
    return (this.kept ?? this.raw).localPort;
  }

  /** Ends the session before the proxy with `code` (400, 403, 502). */
  refuse(code: SessionStatus): void {
    this.code ??= code;
    this.raw.destroy();
    // The client may have closed already (while its peer was being reached).
    this.maybeEnd();
  }

  /** Ends the connection before a session exists (a failed or timed out handshake). */
  discard(): void {
    this.discarded = true;
    this.raw.destroy();
  }

  /** Counts the session once the client and the peer connection are both closed. */
  maybeEnd(): void {
    if (this.ended || !this.clientClosed || !this.peerClosed) return;
    this.ended = true;
    for (const release of this.held) release();
    this.onEnd();
    const conns = this.conns;
    const zone = this.site.zone;
    if (this.discarded || this.code === undefined) {
      conns.dropped();
      zone?.connectionDiscarded(this.received, this.sent);
      return;
    }
    conns.closed(false);
    zone?.sessionEnded(this.code, this.received, this.sent);
    if (this.site.log)
      logSession(this.site.log, { ...this.record(), status: this.code, connectMs: this.code === 200 ? this.connectMs : -1 });
  }

  /** The session's variables as they stand (before its end: no status yet). */
  record(): StreamRecord {
    const session = this;
    return {
      get remoteAddress() {
        return session.remoteAddress;
      },
      get remotePort() {
        return session.remotePort;
      },
      get localAddress() {
        return session.localAddress;
      },
      get localPort() {
        return session.localPort;
      },
      status: 200,
      received: this.received,
      sent: this.sent,
      sessionMs: performance.now() - this.begun,
      connection: connectionNumber(this.raw),
      peers: this.peers,
      peerReceived: this.peerReceived,
      peerSent: this.peerSent,
      connectMs: -1,
      ...(this.source ? { proxyProtocol: this.source } : {}),
      ...(this.hello ? { preread: this.hello } : {}),
      ...(this.tls ? { tls: this.tls } : {}),
      session: this,
    };
  }

  /** The client side is ready: nginx's preread phase (ssl_preread), then the content
   * handler: `return`, or the proxy to a peer. */
  proxy(client: Socket): void {
    const preread = this.site.config.preread;
    if (!preread) return this.content(client);
    prereadClientHello(client, preread.timeout, preread.bufferSize, (hello) => {
      // A full buffer without a whole ClientHello is nginx's 400.
      if (hello === false) return this.refuse(400);
      if (hello) this.hello = hello;
      if (client.destroyed) return this.maybeEnd();
      this.content(client);
    });
  }

  private content(client: Socket): void {
    const site = this.site;
    if (site.answer) return this.answer(client, site.answer(this.record()));
    if (!site.target) {
      this.upstream = site.upstream;
      return this.connect(client);
    }
    const value = site.target(this.record());
    // An upstream's name is a host name: caseless.
    const lower = value.toLowerCase();
    this.upstream = site.upstreams.get(value) ?? [...site.upstreams].find(([name]) => name.toLowerCase() === lower)?.[1];
    if (this.upstream) return this.connect(client);
    // An address of the value's own: tried once, with no upstream's accounting.
    const address = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
    if (!address) {
      errorLogOf(site.config.errorLogs).log('error', `no port in upstream "${value}", client: ${this.remoteAddress ?? ''}`);
      return this.refuse(502);
    }
    this.direct(client, address[1] ?? address[2], Number(address[3]));
  }

  /** ngx_stream_return_module: the value, then the connection closes. */
  private answer(client: Socket, value: string): void {
    this.code = 200;
    const bytes = Buffer.from(value);
    this.sent += bytes.length;
    client.on('error', () => {});
    client.end(bytes, () => client.destroy());
  }

  /** A peer socket for `host`:`port`, with the PROXY protocol header first when
   * `proxy_protocol on` (before the TLS handshake of `proxy_ssl`). */
  private peerSocket(host: string, port: number, tlsSession: Buffer | undefined): Socket {
    const proxy = this.site.config.proxy;
    const tls = this.site.peerTls;
    const secure = (over: { host: string; port: number } | { socket: Socket }) => connectTls({ ...tls!.options, ...over, ...(tlsSession ? { session: tlsSession } : {}) });
    if (!proxy.proxyProtocol) return tls ? secure({ host, port }) : connect(plainPeer(host, port));
    const plain = connect(plainPeer(host, port));
    // Written once connected, ahead of anything else on the socket.
    plain.write(proxyHeaderV1(this.raw));
    return tls ? secure({ socket: plain }) : plain;
  }

  /** The value of `proxy_pass` named no upstream: its address, without a balancer. */
  private direct(client: Socket, host: string, port: number): void {
    const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    this.peers.push(where);
    this.peerClosed = false;
    this.start = performance.now();
    this.dial(client, this.peerSocket(host, port, undefined), undefined, (connected) => {
      this.peerClosed = true;
      if (!connected) return this.refuse(502);
      client.destroy();
      this.maybeEnd();
    });
  }

  /** Reaches `peer` within proxy_connect_timeout, then pipes the session through it
   * (unless the client left meanwhile); `up` is told first. `closed`: the peer's socket
   * closed, `connected` or not. */
  private dial(client: Socket, peer: Socket, up: (() => void) | undefined, closed: (connected: boolean) => void): void {
    let connected = false;
    const timer = setTimeout(() => peer.destroy(new Error('connect timed out')), this.site.config.proxy.connectTimeout);
    peer.once(this.site.peerTls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      connected = true;
      up?.();
      this.connectMs = performance.now() - this.start;
      // The client left while the peer was being reached.
      if (client.destroyed) peer.destroy();
      else this.pipe(client, peer);
    });
    peer.on('error', () => {});
    peer.once('close', () => {
      clearTimeout(timer);
      closed(connected);
    });
  }

  private connect(client: Socket): void {
    const upstream = this.upstream!;
    if (this.firstTry === 0) this.firstTry = performance.now();
    const chosen = upstream.balancer.pick(upstream.key?.(this), this.tried);
    if (typeof chosen === 'string') return this.refuse(502);
    this.attempts++;
    this.peers.push(chosen.address);
    this.peerClosed = false;
    const proxy = this.site.config.proxy;
    this.start = performance.now();
    const tls = this.site.peerTls;
    // The last session of each peer, by the server's TLS settings too (proxy_ssl_session_reuse).
    const sessionKey = tls?.reuse ? `${tls.key}\0${chosen.address}` : undefined;
    const session = sessionKey !== undefined ? upstream.sessions.get(sessionKey) : undefined;
    const peer = this.peerSocket(chosen.host, chosen.port, session);
    if (sessionKey !== undefined) peer.on('session', (s: Buffer) => upstream.sessions.set(sessionKey, s));
    this.dial(client, peer, () => upstream.balancer.connected(chosen), (connected) => {
      if (!connected) {
        upstream.balancer.release(chosen, true);
        this.tried.add(chosen.id);
        this.peerClosed = true;
        const tries = proxy.nextUpstreamTries;
        const timeout = proxy.nextUpstreamTimeout;
        const inTime = timeout === 0 || performance.now() - this.firstTry < timeout;
        if (proxy.nextUpstream && (tries === 0 || this.attempts < tries) && inTime && !client.destroyed) return this.connect(client);
        return this.refuse(502);
      }
      const lastByteMs = performance.now() - this.start;
      chosen.metrics.sessionEnded(this.peerReceived, this.peerSent, this.connectMs, this.firstByteMs, lastByteMs);
      upstream.balancer.release(chosen, false);
      this.peerClosed = true;
      client.destroy();
      this.maybeEnd();
    });
  }

  private pipe(client: Socket, peer: Socket): void {
    this.code = 200;
    const proxy = this.site.config.proxy;
    tunnel(client, peer, {
      timeout: proxy.timeout,
      halfClose: proxy.halfClose,
      fromClient: (n) => {
        this.received += n;
        this.peerSent += n;
      },
      fromPeer: (n) => {
        if (this.firstByteMs === undefined) this.firstByteMs = performance.now() - this.start;
        this.peerReceived += n;
        this.sent += n;
      },
    });
  }
}
