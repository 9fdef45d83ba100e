// One line of instrumentation for a node:http (or https) server, and the recording that
// the Express and Fastify adapters share: connections, the server zone, a route zone per
// route, exact bytes on keep-alive connections, response time, discarded requests.
//
// Zones are made at run time (metrics/zone-groups.ts): the status an app creates declares
// a group of server zones and one of route zones, each capped, and a worker's first
// request with a new name makes its zone for every worker; names past the cap count in
// the group's own zone (`servers`, `routes`), not nowhere.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { connections, type Connections } from '../metrics/connections.js';
import { locationZones, serverZones, type HttpZone } from '../metrics/http-zones.js';
import { runtimeMetrics } from '../metrics/runtime.js';
import type { Status } from '../metrics/status.js';
import type { ZoneGroup } from '../metrics/zone-groups.js';
import { appStatus, ROUTE_GROUP, SERVER_GROUP } from './app.js';

/** Per connection: where its bytes stood at the last response, and whether it waits. */
interface ConnectionState {
  read: number;
  written: number;
  inFlight: number;
  idle: boolean;
}

const STATE = Symbol('zonal.connection');
type Watched = Socket & { [STATE]?: ConnectionState; server?: Server; _parent?: Socket };

/** The TCP socket under a request's socket (a TLS socket wraps one). */
const tcpOf = (s: Watched): Watched => (s._parent as Watched | undefined) ?? s;

export interface RecordOptions {
  /** The server zone (default `app`). */
  readonly zone?: string;
  /** The status to record into (default appStatus()). */
  readonly status?: Status;
}

/** The recording of one app's requests, shared by the adapters. */
export class AppRecorder {
  readonly status: Status;
  private readonly connections: Connections;
  private readonly server: HttpZone;
  private readonly routes: ZoneGroup<HttpZone>;
  private readonly watched = new WeakSet<Server>();

  constructor(options: RecordOptions = {}) {
    this.status = options.status ?? appStatus();
    this.connections = connections(this.status);
    const zone = serverZones.group(this.status, SERVER_GROUP).recorder(options.zone ?? 'app');
    if (!zone) throw new RangeError(`zonal: "${options.zone}" cannot name a server zone (empty, or longer than 256 bytes)`);
    this.server = zone;
    this.routes = locationZones.group(this.status, ROUTE_GROUP);
    startRuntime(this.status);
  }

  /** Counts the server's connections from now on (and, through request(), those it
   * accepted before, at their first request). */
  watch(server: Server): void {
    if (this.watched.has(server)) return;
    this.watched.add(server);
    server.on('connection', (socket: Socket) => this.accepted(socket));
  }

  private accepted(socket: Watched): ConnectionState {
    const state: ConnectionState = { read: 0, written: 0, inFlight: 0, idle: false };
    socket[STATE] = state;
    this.connections.accepted();
    socket.once('close', () => this.connections.closed(state.idle));
    return state;
  }

  /**
   * Records one request: the server zone now, and once it ends, its response (or its
   * discard) in the server zone and in the zone of the route `route` names then (none
   * when it names none). Bytes are what the connection moved since its previous response,
   * headers included, so keep-alive connections count exactly.
   */
  request(req: IncomingMessage, res: ServerResponse, route?: Route): void {
    const socket = req.socket as Watched;
    const tcp = tcpOf(socket);
    const state = tcp[STATE] ?? this.accepted(tcp);
    if (state.idle) {
      state.idle = false;
      this.connections.busy();
    }
    state.inFlight++;
    this.server.requestStarted();
    (res as Pending)[PENDING] = { recorder: this, req, socket, state, route, start: this.server.timed ? performance.now() : 0 };
    // One shared listener and no closure per request: a response emits 'close' once, on
    // the tick after 'finish' when it was sent (before the connection reads its next
    // request), or alone when it was not.
    res.on('close', responseClosed);
  }

  /** @internal The end of a request that request() saw. */
  ended(res: ServerResponse, p: PendingRequest): void {
    const { socket, state, route } = p;
    const finished = res.writableFinished;
    const read = socket.bytesRead - state.read;
    const written = socket.bytesWritten - state.written;
    state.read = socket.bytesRead;
    state.written = socket.bytesWritten;
    const server = this.server;
    const ms = server.timed ? performance.now() - p.start : undefined;
    const name = typeof route === 'function' ? route(p.req) : route;
    const zone = name === undefined ? undefined : this.routes.recorder(name);
    if (finished) {
      server.responseSent(res.statusCode, read, written, ms);
      if (zone) {
        zone.requestStarted();
        zone.responseSent(res.statusCode, read, written, ms);
      }
    } else {
      server.requestDiscarded(read, written);
      if (zone) {
        zone.requestStarted();
        zone.requestDiscarded(read, written);
      }
    }
    if (--state.inFlight === 0 && !socket.destroyed && finished) {
      state.idle = true;
      this.connections.idle();
    }
  }
}

/** A request's route zone: its name, or what names it once the request ended (a router
 * matches after the request started); undefined (or a function's undefined) for none. */
export type Route = string | ((req: IncomingMessage) => string | undefined);

interface PendingRequest {
  readonly recorder: AppRecorder;
  readonly req: IncomingMessage;
  readonly socket: Watched;
  readonly state: ConnectionState;
  readonly route: Route | undefined;
  readonly start: number;
}

const PENDING = Symbol('zonal.request');
type Pending = ServerResponse & { [PENDING]?: PendingRequest };

function responseClosed(this: Pending): void {
  const p = this[PENDING];
  if (!p) return;
  this[PENDING] = undefined;
  p.recorder.ended(this, p);
}

let runtimeStarted = false;
function startRuntime(status: Status): void {
  if (runtimeStarted || !status.zone.writer || !status.catalog().runtime) return;
  runtimeStarted = true;
  runtimeMetrics(status);
}

export interface InstrumentOptions extends RecordOptions {
  /** The route zone a request counts in, once it ended (none when undefined): node:http
   * has no router, so by default there are no route zones. */
  readonly route?: (req: IncomingMessage) => string | undefined;
}

/** Instruments a node:http or https server: its connections, its server zone, and the
 * route zones `route` names. One call, before or after it listens. */
export function instrument(server: Server, options: InstrumentOptions = {}): AppRecorder {
  const recorder = new AppRecorder(options);
  recorder.watch(server);
  const route = options.route;
  // Before the app's own listener, so that a request is counted from its start.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => recorder.request(req, res, route));
  return recorder;
}
