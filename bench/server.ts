// npm run bench -- server [--rounds N] [--seconds S] (by default 12 rounds of 2 s each):
// what the zonal server costs on the simplest request it serves, `return 200 "hello\n"`
// with metrics on (a server zone and a location zone recording every request), next to
// the same node:http server without zonal. Both sides have the same process structure: a
// node:cluster primary and one worker accepting on the shared listening socket itself
// (SCHED_NONE, as zonal's primary sets), answering 200 with `Content-Type: text/plain`,
// `Content-Length: 6` and `hello\n`, with node:http's default options.
//
// Both servers run as child processes of this one for the whole run; autocannon runs here,
// on loopback, and loads one side at a time: a warm-up round each, then rounds that
// alternate plain, zonal, plain, zonal... so that the machine's drift over the run (these
// 2-core machines move by 20–30 %) falls on both sides alike. Many short rounds rather
// than a few long ones: the drift is slow, so neighbouring rounds see the same machine,
// and a median over 12 outlasts a few rounds that lose their core. Each side's figure is
// the median of its rounds; overhead_pct = (rps_plain - rps_zonal) / rps_plain * 100.
// On 2 cores the load generator and the server's worker compete for CPU: that is fine,
// both sides suffer the same, and the CPU each used is shown (the server's CPU time per
// request is the figure the machine's noise moves least).
//
// After the load, zonal's own API (a `/status/` location in the same server) must show at
// least as many requests in the server zone as autocannon had answered by zonal: fewer
// would mean the metrics were not on, and the run fails.
//
// Every wait is bounded in tries and time; every child is stopped with SIGTERM (SIGKILL
// after 10 s) at the end, and sent SIGTERM when this process exits in any other way.
// Everything listens on 127.0.0.1 only.
import cluster from 'node:cluster';
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alternate, broken, checkZonalCount, childPids, CONNECTIONS, freePort, headerLine, HOST, load, oneWorkerPrimary, ready, roundOptions, runBench, showTarget, start, statusNumber, ZONAL, type Measured } from './processes.js';
import { finish, median, table } from './report.js';

/** This file, which the children run in their own modes: not shared, as processes.ts's
 * import.meta.url would name processes.js. */
const SCRIPT = fileURLToPath(import.meta.url);
const BODY = 'hello\n';

// ---- The plain server (a child: `server.js --plain <port>`) ------------------------------
// Its primary is processes.ts's oneWorkerPrimary(), as the plain proxy's is.

/** The worker: node:http with its default options, the same answer as zonal's `return`
 * (whose headers and body are also built once). */
function plainWorker(port: number): void {
  const body = Buffer.from(BODY);
  const headers = { 'Content-Type': 'text/plain', 'Content-Length': body.length };
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, headers);
    res.end(body);
  });
  server.listen(port, HOST);
  // Stopped by the primary (an exit, not death by signal: --cpu-prof writes its profile),
  // or a lost primary: nothing to serve for.
  process.on('SIGTERM', () => process.exit(0));
  process.on('disconnect', () => process.exit(0));
}

// ---- Load ----------------------------------------------------------------------------------

type Side = 'plain' | 'zonal';

interface Round extends Measured {
  side: Side;
  /** Server processes (primary + worker) CPU over the round's wall time, % of one core. */
  serverCpu: number;
  /** Server CPU microseconds per answered request. */
  cpuUsPerRequest: number;
}

interface Target {
  side: Side;
  port: number;
  pids: number[];
}

async function loadRound(target: Target, seconds: number): Promise<Round> {
  const { measured, wall, cpu } = await load(target.side, target.port, seconds, [target.pids]);
  const [server] = cpu;
  return { side: target.side, ...measured, serverCpu: (server / wall) * 100, cpuUsPerRequest: (server * 1e6) / measured.requests };
}

// ---- Run -----------------------------------------------------------------------------------

function zonalConfig(port: number): string {
  return `# written by bench/server.ts
worker_processes 1;
http {
    server {
        listen ${HOST}:${port};
        status_zone bench;
        location / {
            status_zone root;
            return 200 "hello\\n";
        }
        location /status/ {
            api /status/;
        }
    }
}
`;
}

async function main(): Promise<void> {
  const { rounds, seconds, warmupSeconds } = roundOptions();
  await runBench('server', async (dir) => {
    const zonalPort = await freePort();
    const plainPort = await freePort();
    const conf = join(dir, 'zonal.conf');
    writeFileSync(conf, zonalConfig(zonalPort));

    const zonal = start('zonal', process.execPath, [ZONAL, '-c', conf]);
    const plain = start('plain', process.execPath, [SCRIPT, '--plain', String(plainPort)]);
    const [zonalFirst, plainFirst] = await Promise.all([ready(zonal, zonalPort), ready(plain, plainPort)]);
    for (const [side, a] of [['zonal', zonalFirst], ['plain', plainFirst]] as const)
      if (a.status !== 200 || a.body !== BODY || a.headers['content-type'] !== 'text/plain')
        broken(`${side} answered GET / with ${a.status}, ${a.headers['content-type']}: ${JSON.stringify(a.body.slice(0, 200))}`);
    const targets: Record<Side, Target> = {
      plain: { side: 'plain', port: plainPort, pids: [plain.process.pid!, ...childPids(plain.process.pid!)] },
      zonal: { side: 'zonal', port: zonalPort, pids: [zonal.process.pid!, ...childPids(zonal.process.pid!)] },
    };
    for (const t of Object.values(targets)) if (t.pids.length !== 2) broken(`the ${t.side} server runs ${t.pids.length} processes, not a primary and a worker`);

    // Warm-up (both sides' JIT, connections, the zones' first pages), then the rounds.
    const { timed, answered } = await alternate(['plain', 'zonal'] as const, rounds, warmupSeconds, seconds, (side, secs) => loadRound(targets[side], secs));
    const zonalAnswered = 1 + answered.zonal; // and the GET / above

    // The metrics were on: every request autocannon saw answered was counted (requests
    // in flight when a round stopped were counted too, unanswered: hence "at least").
    const counted = (await statusNumber(zonalPort, 'http/server_zones/bench/requests/total')) ?? broken('zonal has no server zone bench');
    const countedRoot = (await statusNumber(zonalPort, 'http/location_zones/root/requests/total')) ?? broken('zonal has no location zone root');

    const plainRounds = timed.filter((r) => r.side === 'plain');
    const zonalRounds = timed.filter((r) => r.side === 'zonal');
    const rpsPlain = median(plainRounds.map((r) => r.rps));
    const rpsZonal = median(zonalRounds.map((r) => r.rps));
    const overhead = ((rpsPlain - rpsZonal) / rpsPlain) * 100;
    // Each zonal round against the plain round just before it: drift between pairs cancels.
    const paired = median(zonalRounds.map((z, i) => ((plainRounds[i].rps - z.rps) / plainRounds[i].rps) * 100));
    const cpuPlain = median(plainRounds.map((r) => r.cpuUsPerRequest));
    const cpuZonal = median(zonalRounds.map((r) => r.cpuUsPerRequest));
    const cpuOverhead = ((cpuZonal - cpuPlain) / cpuPlain) * 100;

    table(
      `return 200 under autocannon: ${CONNECTIONS} connections, pipelining 1, ${rounds} rounds of ${seconds} s each side, alternating, after ${warmupSeconds} s of warm-up each`,
      ['round', 'plain req/s', 'zonal req/s', 'zonal / plain', 'plain CPU us/req', 'zonal CPU us/req'],
      plainRounds.map((p, i) => {
        const z = zonalRounds[i];
        return [i + 1, Math.round(p.rps), Math.round(z.rps), Math.round((z.rps / p.rps) * 1000) / 1000, p.cpuUsPerRequest, z.cpuUsPerRequest];
      }),
    );
    const sideRow = (name: string, rs: Round[]): Array<string | number> => [
      name,
      Math.round(median(rs.map((r) => r.rps))),
      Math.round(Math.min(...rs.map((r) => r.rps))),
      Math.round(Math.max(...rs.map((r) => r.rps))),
      median(rs.map((r) => r.latencyP50)),
      median(rs.map((r) => r.latencyP99)),
      median(rs.map((r) => r.bytesPerResponse)),
      median(rs.map((r) => r.serverCpu)),
      median(rs.map((r) => r.cpuUsPerRequest)),
      median(rs.map((r) => r.generatorCpu)),
    ];
    table(
      'Medians over the rounds (CPU in % of one core; the server is its primary and worker)',
      ['side', 'req/s', 'min', 'max', 'p50 ms', 'p99 ms', 'bytes/resp', 'server CPU %', 'CPU us/req', 'autocannon CPU %'],
      [sideRow('plain node:http', plainRounds), sideRow('zonal, metrics on', zonalRounds)],
    );
    table("First GET / of each side, on a connection of its own (the date header's value left out)", ['side', 'headers'], [
      ['plain', headerLine(plainFirst)],
      ['zonal', headerLine(zonalFirst)],
    ]);
    checkZonalCount(zonalAnswered, counted, countedRoot);
    showTarget(overhead);

    finish('server', {
      rps_zonal: Math.round(rpsZonal),
      rps_plain: Math.round(rpsPlain),
      overhead_pct: Math.round(overhead * 10) / 10,
      overhead_pct_paired: Math.round(paired * 10) / 10,
      cpu_us_per_req_plain: cpuPlain,
      cpu_us_per_req_zonal: cpuZonal,
      cpu_overhead_pct: Math.round(cpuOverhead * 10) / 10,
      rounds,
      round_seconds: seconds,
      requests_answered: zonalAnswered,
      requests_counted: counted,
    });
  });
}

if (process.argv[2] === '--plain') {
  if (cluster.isPrimary) oneWorkerPrimary('plain server');
  else plainWorker(Number(process.argv[3]));
} else await main();
