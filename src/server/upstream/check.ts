// What nginx checks once an upstream block is read, shared by http's and stream's
// `upstream` (each module's table has its own entry for the block, in its context).
import { slowStartRefused } from '../../metrics/peers.js';
import type { Checker, UpstreamLevel } from '../config/levels.js';
import type { BalancingMethod } from '../config/model.js';
import type { Directive } from '../config/syntax.js';
import { isZoneName } from '../config/values.js';

/** A new `upstream` block among `others` (its http or stream block's): its name checked
 * as nginx and the API need it; `duplicate` when another upstream already has it. */
export function newUpstreamBlock(d: Directive, others: readonly UpstreamLevel[], c: Checker, protocol: UpstreamLevel['protocol']): { upstream: UpstreamLevel; duplicate: boolean } {
  const [name] = d.args;
  const upstream: UpstreamLevel = { kind: 'upstream', seen: new Set(), name, origin: d.origin, servers: [], protocol };
  // Its name is a key of the /status and /config trees: it stays one path segment.
  if (!isZoneName(name)) c.error(d.origin, `invalid upstream name "${name}": letters, digits, "_", "-" and "." only`);
  // nginx compares upstream names as host names: without case.
  const duplicate = others.some((u) => u.name.toLowerCase() === name.toLowerCase());
  if (duplicate) c.error(d.origin, `duplicate upstream "${name}"`);
  return { upstream, duplicate };
}

/** Methods whose balancers pick no backup: nginx refuses `backup` with them. */
const NO_BACKUP = new Set<BalancingMethod['kind']>(['hash', 'ip_hash', 'random']);

/** An upstream without `zone` has one of its own name (its peers are shared memory). */
const zoneOf = (u: UpstreamLevel) => u.zone?.name ?? u.name;

/** What nginx checks once an upstream block is read: its zone's size, when it gives one,
 * is the size any other upstream of the zone gave (`others`, the upstreams of its block
 * read before it), as "several groups may share the same zone" and giving the size once
 * is enough. */
export function checkUpstreamBlock(u: UpstreamLevel, others: readonly UpstreamLevel[], c: Checker): void {
  if (!u.serverWritten) c.error(u.origin, 'no servers are inside upstream');
  // Checked at the end: nginx's order dependence (a method after a backup passes) is an accident.
  if (u.method && NO_BACKUP.has(u.method.kind))
    for (const p of u.servers) if (p.backup) c.error(p.origin, 'balancing method does not support parameter "backup"');
  // The same check and message as /config's (metrics/peers.ts), after the block for the same reason.
  for (const p of u.servers) {
    const refused = slowStartRefused(u.method?.kind, p.slowStart / 1000);
    if (refused) c.error(p.origin, refused);
  }
  const size = u.zone?.size;
  const declared = size === undefined ? undefined : others.find((o) => zoneOf(o) === zoneOf(u) && o.zone?.size !== undefined)?.zone?.size;
  if (declared !== undefined && declared !== size)
    c.error(u.zone!.origin, `the size ${size} of shared memory zone "${zoneOf(u)}" conflicts with already declared size ${declared}`);
}
