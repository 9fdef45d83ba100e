// npm run bench -- proxy [--rounds N] [--seconds S] [--keepalive K] (by default 12 rounds
// of 2 s each side, keepalive 64): what a request proxied through the zonal server costs,
// with metrics on (a server zone, a location zone and an upstream peer recording every
// request), next to the two things a user would run instead, all in front of the same
// loopback backend:
// - plain: a node:http server forwarding each request with undici, as one writes it
//   without zonal: a node:cluster primary and one worker accepting on the shared socket
//   itself (SCHED_NONE, as zonal's primary sets), a `Pool` with undici's defaults (keep-
//   alive, as many connections as requests in flight, none closed while in use), hop-by-
//   hop headers left out both ways, the response body piped to the client;
// - zonal: `worker_processes 1`, `upstream backend { server ...; keepalive K; }` and
//   `proxy_pass http://backend` in a location with a status zone;
// - nginx: Debian's package (installed here with apt-get when it is missing and this runs
//   as root; without it the run goes on and reports rps_nginx as null), a master and one
//   worker, the same upstream with `keepalive K`, HTTP/1.1 and no `Connection` header to
//   the backend so that its connections are kept, access log off. nginx's limit of 1000
//   requests per keep-alive connection (client side and upstream side) is lifted, as
//   node:http and undici have none.
// Equivalent keep-alive to the backend: `keepalive K` is the number of *idle* connections
// nginx (and zonal, which follows it) keep; a connection that comes back to a full cache is
// closed. With K below the 50 requests in flight, both close and reopen connections all
// the time (K = 32: a fifth to a third of both's requests opened a connection, here),
// which undici's Pool never does: hence K = 64 by default, more than the load's
// connections, so that no side opens connections under load. The backend counts the
// connections each side opens in a round (shown; `--keepalive 32` shows the churn): with
// K = 64, nginx and zonal open a few dozen, in place of those they close when autocannon
// drops its connections with requests in flight at the end of a round.
// The backend is one node:http process answering 200 with `Content-Type: text/plain`,
// `Content-Length: 6` and `hello\n`; it keeps idle connections 65 s (nginx's upstream
// keepalive_timeout is 60 s, undici follows the backend's Keep-Alive hint), so that each
// proxy finds its connections still open after the other sides' rounds.
//
// Every server runs as a child process of this one for the whole run; autocannon runs
// here, on loopback, 50 connections, and loads one side at a time: a warm-up round each,
// then rounds that alternate plain, zonal, nginx, plain, zonal, nginx... so that the
// machine's drift over the run falls on all sides alike, and each side's figure is the
// median of its rounds. overhead_pct = (rps_plain_node - rps_zonal) / rps_plain_node * 100.
// On these 2-core machines the backend, the proxy and the load generator share the CPU:
// that is fine, all three sides pay the same, and the CPU each process tree used is shown
// per request (the proxy's CPU time per request is the figure the machine's noise moves
// least; the backend's is the same work for every side).
//
// After the load, zonal's own API (a `/status/` location in the same server) must show
// at least as many requests in the server zone, and forwarded to the peer, as autocannon
// had answered by zonal: fewer would mean the metrics were not on, and the run fails.
//
// Every wait is bounded in tries and time; every child is stopped with SIGTERM (SIGKILL
// after 10 s) at the end, and sent SIGTERM when this process exits in any other way; the
// temporary directory (configurations, nginx's logs and temp paths) is removed on every
// exit. Everything listens on 127.0.0.1 only.
import cluster from 'node:cluster';
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { alternate, broken, checkZonalCount, childPids, CONNECTIONS, endToEnd, freePort, getOnce, headerLine, HOST, load, nginxCommand, oneWorkerPrimary, peerSelected, ready, roundOptions, runBench, showTarget, start, startNginx, statusNumber, wholeOption, ZONAL, type Answer, type Child, type Measured } from './processes.js';
import { median, round2, table } from './report.js';

/** This file, which the children run in their own modes: not shared, as processes.ts's
 * import.meta.url would name processes.js. */
const SCRIPT = fileURLToPath(import.meta.url);
const BODY = 'hello\n';

// ---- The backend (a child: `proxy.js --backend <port>`) ----------------------------------

/** The backend's count of the connections it has accepted, asked by the bench itself on
 * a connection of its own: how well each proxy keeps its connections. */
const CONNECTIONS_PATH = '/bench/connections-accepted';

function backend(port: number): void {
  const body = Buffer.from(BODY);
  const headers = { 'Content-Type': 'text/plain', 'Content-Length': body.length };
  let accepted = 0;
  const server = createHttpServer((req, res) => {
    // Read whatever body came (none, for autocannon's GETs) before answering.
    req.resume();
    if (req.url === CONNECTIONS_PATH) return res.end(String(accepted));
    res.writeHead(200, headers);
    res.end(body);
  });
  server.on('connection', () => accepted++);
  server.keepAliveTimeout = 65_000;
  server.listen(port, HOST);
  process.on('SIGTERM', () => process.exit(0));
}

// ---- The plain Node proxy (a child: `proxy.js --plain <port> <backendPort>`) -------------
// Its primary is processes.ts's oneWorkerPrimary(), as the plain server's is. Headers go
// through processes.ts's endToEnd() both ways; `host` is left out of the request's, so
// that the backend is told its own (undici sets it from the origin, as nginx sends the
// upstream's name by default).

/** Whether a request has a body to forward: undici would send a stream it is given as a
 * chunked body, even an empty one for a GET. */
const hasBody = (req: IncomingMessage) => req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;

/** The worker: node:http with its default options, forwarding through one undici Pool. */
function plainWorker(port: number, backendPort: number): void {
  const pool = new Pool(`http://${HOST}:${backendPort}`);
  const server = createHttpServer((req, res) => {
    pool
      .request({
        path: req.url ?? '/',
        method: req.method as 'GET',
        headers: endToEnd(req.headers, ['host']),
        body: hasBody(req) ? req : undefined,
      })
      .then(
        ({ statusCode, headers, body }) => {
          res.writeHead(statusCode, endToEnd(headers));
          // pipe() and two listeners rather than stream.pipeline(), which in Node 20 makes
          // an AbortController and, as it ends, an AbortError per call: 15 us of the 37 us
          // this proxy took per request with it, here. Either way a body that fails ends
          // the response, and a client that leaves stops the backend's body.
          body.on('error', () => res.destroy());
          res.on('close', () => {
            if (!body.readableEnded) body.destroy();
          });
          body.pipe(res);
        },
        () => {
          if (res.headersSent) res.destroy();
          else res.writeHead(502, { 'Content-Length': 0 }).end();
        },
      );
  });
  server.listen(port, HOST);
  const stop = () => {
    void pool.destroy();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('disconnect', stop);
}

// ---- nginx -----------------------------------------------------------------------------

/** The http block's content for nginx as the proxy (processes.ts's startNginx() adds
 * the rest). */
function nginxHttp(port: number, backendPort: number, keepalive: number): string {
  return `upstream backend {
    server ${HOST}:${backendPort};
    keepalive ${keepalive};
    keepalive_requests 1000000;
}
server {
    listen ${HOST}:${port};
    location / {
        proxy_pass http://backend;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
    }
}`;
}

// ---- zonal -------------------------------------------------------------------------------

function zonalConfig(port: number, backendPort: number, keepalive: number): string {
  return `# written by bench/proxy.ts
worker_processes 1;
http {
    upstream backend {
        server ${HOST}:${backendPort};
        keepalive ${keepalive};
    }
    server {
        listen ${HOST}:${port};
        status_zone bench;
        location / {
            status_zone root;
            proxy_pass http://backend;
        }
        location /status/ {
            api /status/;
        }
    }
}
`;
}

// ---- Load ----------------------------------------------------------------------------------

type Side = 'plain' | 'zonal' | 'nginx';
const SIDE_NAMES: Record<Side, string> = { plain: 'plain node:http + undici', zonal: 'zonal, metrics on', nginx: 'nginx' };

interface Round extends Measured {
  side: Side;
  /** Proxy processes (primary or master + worker) CPU over the round's wall time, % of one core. */
  proxyCpu: number;
  /** Proxy CPU microseconds per answered request. */
  cpuUsPerRequest: number;
  /** The backend's CPU microseconds per answered request. */
  backendUsPerRequest: number;
  /** Connections the proxy opened to the backend during the round. */
  backendConnections: number;
}

interface Target {
  side: Side;
  port: number;
  pids: number[];
}

interface Backend {
  port: number;
  pid: number;
}

/** Connections the backend has accepted, this question's own included. */
async function backendAccepted(back: Backend): Promise<number> {
  const a = await getOnce(back.port, CONNECTIONS_PATH);
  const n = Number(a.body);
  if (a.status !== 200 || !Number.isInteger(n)) broken(`the backend answered ${CONNECTIONS_PATH} with ${a.status}: ${a.body.slice(0, 200)}`);
  return n;
}

async function loadRound(target: Target, back: Backend, seconds: number): Promise<Round> {
  const acceptedBefore = await backendAccepted(back);
  // autocannon stops at the first of its 1 s samples after `duration`: asked for exactly
  // `seconds`, it loses the race with that sample about half the time and runs a second
  // more. A tenth of a second less, it stops at `seconds`. (Its figures are over the time
  // it really ran, either way.)
  const { measured, wall, cpu } = await load(target.side, target.port, seconds - 0.1, [target.pids, [back.pid]]);
  const [proxy, backendCpu] = cpu;
  // Less the question's own connection.
  const backendConnections = (await backendAccepted(back)) - acceptedBefore - 1;
  return {
    side: target.side,
    ...measured,
    proxyCpu: (proxy / wall) * 100,
    cpuUsPerRequest: (proxy * 1e6) / measured.requests,
    backendUsPerRequest: (backendCpu * 1e6) / measured.requests,
    backendConnections,
  };
}

// ---- Run -----------------------------------------------------------------------------------

function options(): { rounds: number; seconds: number; warmupSeconds: number; keepalive: number } {
  return { ...roundOptions(), keepalive: wholeOption('--keepalive', 64, 1000) };
}

/** The machine-readable result, the last line of output, as report.ts's finish() prints
 * it, but with null for a side that could not run. */
function finishWithNulls(name: string, results: Record<string, number | null>, notes: string[]): void {
  const rounded: Record<string, number | null> = {};
  for (const [key, value] of Object.entries(results)) rounded[key] = value === null ? null : round2(value);
  console.log(JSON.stringify(notes.length ? { bench: name, results: rounded, notes } : { bench: name, results: rounded }));
}

const pct = (x: number) => Math.round(x * 10) / 10;

async function main(): Promise<void> {
  const { rounds, seconds, warmupSeconds, keepalive } = options();
  await runBench('proxy', async (dir) => {
    const notes: string[] = [];
    const nginx = nginxCommand();
    if ('reason' in nginx) {
      notes.push(`rps_nginx is null: ${nginx.reason}`);
      console.error(`nginx left out: ${nginx.reason}`);
    }

    const backendPort = await freePort();
    const ports: Record<Side, number> = { plain: await freePort(), zonal: await freePort(), nginx: await freePort() };
    const back = start('backend', process.execPath, [SCRIPT, '--backend', String(backendPort)]);
    const backFirst = await ready(back, backendPort);
    if (backFirst.status !== 200 || backFirst.body !== BODY) broken(`the backend answered GET / with ${backFirst.status}: ${JSON.stringify(backFirst.body.slice(0, 200))}`);

    const zonalConf = join(dir, 'zonal.conf');
    writeFileSync(zonalConf, zonalConfig(ports.zonal, backendPort, keepalive));
    const servers: Partial<Record<Side, Child>> = {
      plain: start('plain', process.execPath, [SCRIPT, '--plain', String(ports.plain), String(backendPort)]),
      zonal: start('zonal', process.execPath, [ZONAL, '-c', zonalConf]),
    };
    if (!('reason' in nginx)) {
      servers.nginx = startNginx('nginx', nginx.command, join(dir, 'nginx'), nginxHttp(ports.nginx, backendPort, keepalive));
    }
    const sides = (['plain', 'zonal', 'nginx'] as const).filter((s) => servers[s]);
    const first: Partial<Record<Side, Answer>> = {};
    await Promise.all(sides.map(async (s) => (first[s] = await ready(servers[s]!, ports[s]))));
    for (const s of sides) {
      const a = first[s]!;
      if (a.status !== 200 || a.body !== BODY || a.headers['content-type'] !== 'text/plain')
        broken(`${s} answered GET / with ${a.status}, ${a.headers['content-type']}: ${JSON.stringify(a.body.slice(0, 200))}`);
    }
    const targets = {} as Record<Side, Target>;
    for (const s of sides) {
      const pid = servers[s]!.process.pid!;
      targets[s] = { side: s, port: ports[s], pids: [pid, ...childPids(pid)] };
      if (targets[s].pids.length !== 2) broken(`the ${s} proxy runs ${targets[s].pids.length} processes, not a primary and a worker`);
    }
    const backend: Backend = { port: backendPort, pid: back.process.pid! };

    // Warm-up (JIT, connections to the backend, the zones' first pages), then the rounds.
    const { timed, answered } = await alternate(sides, rounds, warmupSeconds, seconds, (s, secs) => loadRound(targets[s], backend, secs));
    const zonalAnswered = 1 + answered.zonal; // and the GET / above

    // The metrics were on: every request autocannon saw answered was counted (requests
    // in flight when a round stopped were counted too, unanswered: hence "at least").
    const counted = (await statusNumber(ports.zonal, 'http/server_zones/bench/requests/total')) ?? broken('zonal has no server zone bench');
    const countedRoot = (await statusNumber(ports.zonal, 'http/location_zones/root/requests/total')) ?? broken('zonal has no location zone root');
    const selected = await peerSelected(ports.zonal, 'backend', backendPort);

    const of = (s: Side) => timed.filter((r) => r.side === s);
    const med = (s: Side, f: (r: Round) => number) => median(of(s).map(f));
    const rps = (s: Side) => (targets[s] ? med(s, (r) => r.rps) : null);
    const cpu = (s: Side) => (targets[s] ? med(s, (r) => r.cpuUsPerRequest) : null);
    const rpsPlain = rps('plain')!;
    const rpsZonal = rps('zonal')!;
    const rpsNginx = rps('nginx');
    const overhead = ((rpsPlain - rpsZonal) / rpsPlain) * 100;
    // Each zonal round against the plain round just before it: drift between pairs cancels.
    const plainRounds = of('plain');
    const paired = median(of('zonal').map((z, i) => ((plainRounds[i].rps - z.rps) / plainRounds[i].rps) * 100));
    const cpuPlain = cpu('plain')!;
    const cpuZonal = cpu('zonal')!;
    const cpuNginx = cpu('nginx');
    const cpuOverhead = ((cpuZonal - cpuPlain) / cpuPlain) * 100;

    const roundCols = sides.flatMap((s) => [`${s} req/s`]);
    const cpuCols = sides.map((s) => `${s} CPU us/req`);
    table(
      `Proxied GET / under autocannon: ${CONNECTIONS} connections, pipelining 1, ${rounds} rounds of ${seconds} s each side, alternating ${sides.join(', ')}, after ${warmupSeconds} s of warm-up each`,
      ['round', ...roundCols, 'zonal / plain', ...cpuCols],
      Array.from({ length: rounds }, (_, i) => {
        const row = sides.map((s) => of(s)[i]);
        const p = of('plain')[i];
        const z = of('zonal')[i];
        return [i + 1, ...row.map((r) => Math.round(r.rps)), Math.round((z.rps / p.rps) * 1000) / 1000, ...row.map((r) => r.cpuUsPerRequest)];
      }),
    );
    table(
      'Medians over the rounds (CPU in % of one core; a proxy is its primary or master and its worker; the backend is one process behind every side; its connections opened in a round)',
      ['side', 'req/s', 'min', 'max', 'p50 ms', 'p99 ms', 'bytes/resp', 'proxy CPU %', 'proxy CPU us/req', 'backend CPU us/req', 'backend conns opened', 'autocannon CPU %'],
      sides.map((s) => [
        SIDE_NAMES[s],
        Math.round(med(s, (r) => r.rps)),
        Math.round(Math.min(...of(s).map((r) => r.rps))),
        Math.round(Math.max(...of(s).map((r) => r.rps))),
        med(s, (r) => r.latencyP50),
        med(s, (r) => r.latencyP99),
        med(s, (r) => r.bytesPerResponse),
        med(s, (r) => r.proxyCpu),
        med(s, (r) => r.cpuUsPerRequest),
        med(s, (r) => r.backendUsPerRequest),
        med(s, (r) => r.backendConnections),
        med(s, (r) => r.generatorCpu),
      ]),
    );
    table(
      "First GET / of each side, on a connection of its own (the date header's value left out)",
      ['side', 'headers'],
      [['backend', headerLine(backFirst)], ...sides.map((s) => [s, headerLine(first[s]!)])],
    );
    table(
      'nginx',
      ['what', 'value'],
      'reason' in nginx ? [['left out', nginx.reason]] : [['command', nginx.command], ['version', nginx.version], ['installed by this run', nginx.installed ? 'yes' : 'no']],
    );
    checkZonalCount(zonalAnswered, counted, countedRoot, [[`${selected.path.replace(/\/selected\/total$/, '')}: selected.total`, selected.value]]);
    if (selected.value < zonalAnswered) broken(`zonal's peer counted ${selected.value} requests forwarded, fewer than the ${zonalAnswered} answered`);
    showTarget(overhead);

    finishWithNulls(
      'proxy',
      {
        rps_zonal: Math.round(rpsZonal),
        rps_plain_node: Math.round(rpsPlain),
        rps_nginx: rpsNginx === null ? null : Math.round(rpsNginx),
        overhead_pct: pct(overhead),
        overhead_pct_paired: pct(paired),
        zonal_vs_nginx_pct: rpsNginx === null ? null : pct(((rpsNginx - rpsZonal) / rpsNginx) * 100),
        cpu_us_per_req_plain_node: cpuPlain,
        cpu_us_per_req_zonal: cpuZonal,
        cpu_us_per_req_nginx: cpuNginx,
        cpu_overhead_pct: pct(cpuOverhead),
        backend_cpu_us_per_req: median(timed.map((r) => r.backendUsPerRequest)),
        backend_conns_per_round_plain_node: med('plain', (r) => r.backendConnections),
        backend_conns_per_round_zonal: med('zonal', (r) => r.backendConnections),
        backend_conns_per_round_nginx: targets.nginx ? med('nginx', (r) => r.backendConnections) : null,
        rounds,
        round_seconds: seconds,
        upstream_keepalive: keepalive,
        requests_answered: zonalAnswered,
        requests_counted: counted,
        peer_selected: selected.value,
      },
      notes,
    );
  });
}

if (process.argv[2] === '--backend') backend(Number(process.argv[3]));
else if (process.argv[2] === '--plain') {
  if (cluster.isPrimary) oneWorkerPrimary('plain proxy');
  else plainWorker(Number(process.argv[3]), Number(process.argv[4]));
} else await main();
