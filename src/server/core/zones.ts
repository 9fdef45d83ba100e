// How the primary sizes the shared memory it creates, and `-t`'s trial of it: a
// configuration whose zones cannot hold what it names (a state file with more peers
// than its upstream's zone holds) fails `zonal -t` as it would fail the start.
import { availableParallelism } from 'node:os';
import { addon } from '../../engine/native.js';
import { readStateFile } from '../../metrics/peers.js';
import { Status } from '../../metrics/status.js';
import { zoneGroupBytes } from '../../metrics/zone-groups.js';
import { statusConfigOf } from '../catalog.js';
import type { ServerConfig } from '../config/model.js';

/** Twice the workers (a reload's new ones start while the old drain), at least twice the
 * CPUs, and the primary's own slot. */
export function workerSlots(config: ServerConfig): number {
  return Math.min(addon.maxWorkerSlots, 2 * Math.max(config.workerProcesses, availableParallelism()) + 1);
}

/** The status zone: room for the catalog and every zone's counters, several reloads over. */
function statusZoneBytes(config: ServerConfig): number {
  return 4 * 1024 * 1024 + 8 * JSON.stringify(config.files).length;
}

/** The zones of a configuration, created: by the primary, and by `-t` as a trial. */
export function createZones(config: ServerConfig, instance?: string): Status {
  const slots = workerSlots(config);
  const catalog = statusConfigOf(config);
  // Room for the zones of `status_zone <key> zone=<name>:<count>` groups too: a reload
  // that adds groups has what the first sizing left over.
  return Status.create(catalog, {
    workers: slots,
    configFiles: config.files,
    zoneSize: statusZoneBytes(config) + zoneGroupBytes(catalog, slots),
    ...(instance !== undefined ? { instance } : {}),
  });
}

/** `-t`: the zones created under an instance of the test's own and removed; what stops
 * them, in words that name the upstream and its state file when that is the cause. */
export function tryZones(config: ServerConfig): string | undefined {
  try {
    createZones(config, `t${process.pid}`).remove();
    return undefined;
  } catch (e) {
    const message = (e as Error).message;
    for (const u of [...(config.http?.upstreams ?? []), ...(config.stream?.upstreams ?? [])]) {
      const zone = u.zone?.name ?? u.name;
      if (!u.state || !message.includes(`zone "${zone}"`)) continue;
      let peers = 0;
      try {
        peers = readStateFile(u.state)?.length ?? 0;
      } catch {
        // reported by the state directive's own check
      }
      const size = u.zone?.size;
      return (
        `${message}: the state file "${u.state}" of upstream "${u.name}" has ${peers} peers, more than ` +
        `${size !== undefined ? `the zone's ${Math.round(size / 1024)}k hold` : 'the zone sized for its configured servers holds'} ` +
        `with ${workerSlots(config)} worker slots; give the upstream a larger "zone ${zone} <size>"`
      );
    }
    return message;
  }
}
