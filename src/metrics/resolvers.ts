// Resolver zones (/status/resolvers/<zone>): one for each resolver configured with
// `status_zone=<zone>`. `queries` counts lookups by what they resolve, `responses` how
// they ended: DNS response codes as RFC 1035, section 4.1.1 numbers them, and time-outs.
import type { GaugeBlock } from '../engine/index.js';
import { group, Layout, type Counted, type Group } from './shape.js';
import { STATUS_ZONE, type StatusStore } from './store.js';
import { zoneCollection, type StatusNode } from './tree.js';

const layout = new Layout<Counted>();
const queries = {
  name: layout.counter('name', 'Queries resolving names to addresses (A and AAAA).'),
  srv: layout.counter('srv', 'Queries resolving services to addresses (SRV).'),
  addr: layout.counter('addr', 'Queries resolving addresses to names (PTR).'),
};
const responses = {
  success: layout.counter('success', 'Successful responses.'),
  timedout: layout.counter('timedout', 'Queries that timed out.'),
  format_error: layout.counter('format_error', 'Responses with DNS code 1 (format error).'),
  server_failure: layout.counter('server_failure', 'Responses with DNS code 2 (server failure).'),
  not_found: layout.counter('not_found', 'Responses with DNS code 3 (name error).'),
  unimplemented: layout.counter('unimplemented', 'Responses with DNS code 4 (not implemented).'),
  refused: layout.counter('refused', 'Responses with DNS code 5 (refused).'),
  other: layout.counter('other', 'Queries completed with another non-zero DNS code.'),
};

export const resolverFields: Group<Counted> = group('', [
  group('queries', Object.values(queries)),
  group('responses', Object.values(responses)),
]);

/** What a query resolves: `name` (A and AAAA), `srv` (SRV), `addr` (PTR). */
export type ResolverQuery = keyof typeof queries;

// RCODE -> counter; any other code (6 and up) counts as `other`.
const BY_RCODE = [
  responses.success.index,
  responses.format_error.index,
  responses.server_failure.index,
  responses.not_found.index,
  responses.unimplemented.index,
  responses.refused.index,
];

const key = (name: string) => `resolvers/${name}`;
const block = (status: StatusStore, name: string) => status.gauges(STATUS_ZONE, key(name), layout.size);

/** What a worker calls as its resolver's lookups happen. */
export class Resolver {
  constructor(private readonly block: GaugeBlock) {}

  /** A lookup was started. */
  query(type: ResolverQuery): void {
    this.block.add(queries[type].index);
  }

  /** A lookup ended with a response carrying DNS response code `rcode` (RFC 1035,
   * 4.1.1): 0 success, 1 format_error, 2 server_failure, 3 not_found,
   * 4 unimplemented, 5 refused, any other code other. */
  response(rcode: number): void {
    const i = Number.isInteger(rcode) && rcode >= 0 && rcode < BY_RCODE.length ? BY_RCODE[rcode] : responses.other.index;
    this.block.add(i);
  }

  /** A lookup ended without a response in time. */
  timedOut(): void {
    this.block.add(responses.timedout.index);
  }
}

export function resolver(status: StatusStore, name: string): Resolver {
  return new Resolver(block(status, name));
}

export function resolversNode(status: StatusStore): StatusNode {
  return zoneCollection(() => status.catalog().resolvers ?? [], resolverFields, (name: string) => ({ sums: block(status, name).sums() }));
}

export const resolvers = { fields: resolverFields, recorder: resolver, node: resolversNode };
