// Fastify: one plugin records the app (instrument.ts), its route zones named by the
// route Fastify matched (`request.routeOptions.url`: `/users/:id`), and one mounts the
// API. Only this subpath (`zonal/fastify`) needs Fastify, an optional peer dependency.
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { createApi, type ApiOptions } from '../api/index.js';
import { BODY_CAP } from '../transport/common.js';
import { apiListener } from '../transport/http.js';
import { appStatus } from './app.js';
import { AppRecorder, type RecordOptions } from './instrument.js';

/** `app.register(zonal)`: connections, the server zone, a zone per route, app-wide. */
export const zonal: FastifyPluginAsync<RecordOptions> = fp(
  async (fastify: FastifyInstance, options: RecordOptions) => {
    const recorder = new AppRecorder(options);
    recorder.watch(fastify.server);
    fastify.addHook('onRequest', (request, reply, done) => {
      // The route's config holds its url. routeOptions builds a new object at each read:
      // read once. The API's own routes count in the server zone only.
      const config = request.routeOptions.config as { url?: string; zonal?: boolean } | undefined;
      recorder.request(request.raw, reply.raw, config?.zonal !== false ? config?.url || undefined : undefined);
      done();
    });
  },
  { fastify: '5.x', name: 'zonal' },
);

const METHODS = ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'POST', 'OPTIONS'];

/** `app.register(api)`: the API under `/status/` and `/config/` (or `options.mounts`'s
 * prefixes). Its routes take any body as bytes, which the API reads itself. */
export const api: FastifyPluginAsync<Partial<ApiOptions>> = async (fastify, options = {}) => {
  const listener = apiListener(createApi({ ...options, status: options.status ?? appStatus() }));
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: BODY_CAP }, (_req, body, done) => done(null, body));
  const prefixes = new Set((options.mounts ?? [{ location: '/status/' }, { location: '/config/' }]).map((m) => (typeof m.location === 'string' ? m.location : undefined)));
  for (const prefix of prefixes) {
    if (!prefix) continue;
    const base = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
    for (const url of [base, `${base}/*`])
      fastify.route({
        method: METHODS,
        url,
        config: { zonal: false },
        handler: (request, reply) => {
          reply.hijack();
          // The body Fastify read, where the API looks for one a parser consumed.
          if (Buffer.isBuffer(request.body)) (request.raw as IncomingMessage & { body?: Buffer }).body = request.body;
          listener(request.raw, reply.raw);
        },
      });
  }
};

// So that an app's one import gives it all: the primary's serve() too.
export { serve, appStatus } from './app.js';
