// What a geo reads in each module: the client's address (realip's, in http), and in
// http the X-Forwarded-For that `proxy` trusts.
import { unmapped } from '../../api/variables.js';
import { clientAddress, header, type HttpContext } from '../http/variables.js';
import type { StreamRecord } from '../stream/variables.js';
import { httpScope, streamScope } from '../map/scopes.js';
import type { GeoScope } from './runtime.js';

export const httpGeoScope: GeoScope<HttpContext> = {
  ...httpScope,
  client: (c) => clientAddress(c.req),
  forwardedFor: (c) => header(c.req, 'x-forwarded-for'),
};

export const streamGeoScope: GeoScope<StreamRecord> = {
  ...streamScope,
  client: (r) => (r.remoteAddress === undefined ? undefined : unmapped(r.remoteAddress)),
};
