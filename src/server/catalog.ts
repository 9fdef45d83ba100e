// What the status tree lists for a configuration: the server zones of `status_zone` in
// servers and the location zones of `status_zone` in locations, in order of appearance.
// Admin servers have none: their traffic is not counted.
import type { StatusConfig } from '../metrics/catalog.js';
import type { LocationConfig, ServerConfig } from './config/model.js';

export function statusConfigOf(config: ServerConfig): StatusConfig {
  const serverZones = new Map<string, boolean>();
  const locationZones = new Set<string>();
  const visit = (locations: readonly LocationConfig[]) => {
    for (const l of locations) {
      if (l.statusZone) locationZones.add(l.statusZone);
      visit(l.locations);
    }
  };
  for (const s of config.http?.servers ?? []) {
    if (s.admin) continue;
    // Servers may share a zone: it shows `ssl` when any of them listens with SSL.
    if (s.statusZone) serverZones.set(s.statusZone, (serverZones.get(s.statusZone) ?? false) || s.listens.some((l) => l.ssl));
    visit(s.locations);
  }
  return {
    http: {
      serverZones: [...serverZones].map(([name, ssl]) => (ssl ? { name, ssl } : { name })),
      locationZones: [...locationZones],
    },
  };
}
