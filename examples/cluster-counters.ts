// The embedding flow in one file: a node:cluster primary creates a zone, two workers
// attach to it and count their "requests" into it with plain stores, and the primary
// reads the exact sums without asking the workers anything.
//
//   node dist/examples/cluster-counters.js [requests per worker]
import cluster from 'node:cluster';
import { WORKER_SLOT_ENV, Zone } from '../src/index.js';

const ZONE = 'example';
const WORKERS = 2;
const REQUESTS = Number(process.argv[2] ?? 1_000_000);
// One block per server zone: requests, responses by class, bytes received and sent.
const FIELDS = ['requests', '2xx', '4xx', '5xx', 'received', 'sent'] as const;
const field = (name: (typeof FIELDS)[number]) => FIELDS.indexOf(name);

if (cluster.isPrimary) {
  // The primary serves no traffic: it takes no worker slot (writer: false).
  const zone = Zone.create(ZONE, { size: 64 * 1024, workers: WORKERS, writer: false });
  const site = zone.counters('server_zones/site', FIELDS.length);
  let running = WORKERS;
  for (let slot = 0; slot < WORKERS; slot++) {
    // Each worker writes its own shard: the slot travels in the environment.
    cluster.fork({ [WORKER_SLOT_ENV]: String(slot) }).on('exit', () => {
      if (--running > 0) return;
      const sums = Object.fromEntries(FIELDS.map((name, i) => [name, site.value(i)]));
      console.log(`${WORKERS} workers x ${REQUESTS} requests:`, sums);
      const exact = sums.requests === WORKERS * REQUESTS && sums['2xx'] + sums['4xx'] + sums['5xx'] === sums.requests;
      console.log(exact ? 'the sums are exact' : 'the sums are WRONG');
      process.exitCode = exact ? 0 : 1;
    });
  }
} else {
  const zone = Zone.attach(ZONE); // the instance name came from the primary's environment
  const site = zone.counters('server_zones/site', FIELDS.length);
  for (let r = 0; r < REQUESTS; r++) {
    const status = r % 10 === 0 ? 404 : r % 97 === 0 ? 502 : 200;
    site.add(field('requests'));
    site.add(status >= 500 ? field('5xx') : status >= 400 ? field('4xx') : field('2xx'));
    site.add(field('received'), 350);
    site.add(field('sent'), 1200 + (r % 100));
  }
  process.exit(0);
}
