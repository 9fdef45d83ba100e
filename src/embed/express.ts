// Express: one middleware records the app (instrument.ts), its route zones named by the
// route Express matched (`req.baseUrl` + `req.route.path`: `/users/:id`), and one mounts
// the API. Nothing of Express is imported: the request and response are node:http's.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createApi, type ApiOptions } from '../api/index.js';
import { apiListener } from '../transport/http.js';
import { appStatus } from './app.js';
import { AppRecorder, type RecordOptions } from './instrument.js';

type ExpressRequest = IncomingMessage & { baseUrl?: string; route?: { path?: unknown } };
type Next = (err?: unknown) => void;

/** The route a request matched, as its zone's name; none for a request no route took. */
function routeOf(req: IncomingMessage): string | undefined {
  const { baseUrl, route } = req as ExpressRequest;
  const path = route?.path;
  if (typeof path !== 'string') return undefined;
  return `${baseUrl ?? ''}${path}` || '/';
}

/** `app.use(zonal())`, first: connections, the server zone, a zone per route. */
export function zonal(options: RecordOptions = {}): (req: IncomingMessage, res: ServerResponse, next: Next) => void {
  let recorder: AppRecorder | undefined;
  return (req, res, next) => {
    recorder ??= new AppRecorder(options);
    const server = (req.socket as { server?: Server }).server;
    if (server) recorder.watch(server);
    recorder.request(req, res, routeOf);
    next();
  };
}

/** `app.use(api())`: the API's paths (`/status/`, `/config/` by default) answered, the
 * others passed on. */
export function api(options: Partial<ApiOptions> = {}): (req: IncomingMessage, res: ServerResponse, next: Next) => void {
  // apiListener takes three parameters, so Express never takes it for an error handler.
  return apiListener(createApi({ ...options, status: options.status ?? appStatus() }));
}

// So that an app's one import gives it all: the primary's serve() too.
export { serve, appStatus } from './app.js';
