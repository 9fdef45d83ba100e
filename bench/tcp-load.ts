// The stream rows of `npm run bench -- side` (issue 15): TCP proxying, zonal's `stream {}`
// next to nginx's stream module (Debian's libnginx-mod-stream, loaded with load_module;
// installed with apt-get when missing and this runs as root), one worker each, both in
// front of the same backend:
// - tcp_bulk: MB/s of a bulk upload through the proxy: BULK_CONNECTIONS connections each
//   writing 256 KiB buffers as fast as the proxy takes them (backpressure: a write waits
//   for 'drain'); the bytes counted are those the kernel took off the client's sockets.
// - tcp_connections: new connections per second: CONNECT_CONCURRENCY loops, each
//   connecting, sending one byte, reading the backend's one-byte answer, and closing.
// wrk cannot drive TCP: the load is a node client in a child process of its own
// (`tcp-load.js --tcp-client ...`), whose CPU is reported beside the servers'. The
// backend is one more node process (`--tcp-backend`): it answers the first bytes of a
// connection with one byte and discards everything else.
//
// Each row runs a warm-up round a side, then --rounds rounds alternating the sides; every
// figure is the median of a side's rounds. After the load, zonal's own counts (its stream
// zone's connections and received bytes) must be at least what the client did through it.
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { broken, checkCounted, childPids, cpuSecondsOfTree, finished, freePort, getOnce, HOST, runFor, start, ZONAL, type Child } from './processes.js';
import { median, round2, table } from './report.js';

const SCRIPT = fileURLToPath(import.meta.url);
const STREAM_MODULE = '/usr/lib/nginx/modules/ngx_stream_module.so';
const BULK_CONNECTIONS = 4;
const CONNECT_CONCURRENCY = 16;
const BUFFER = 256 * 1024;

export const STREAM_ROWS = ['tcp_bulk', 'tcp_connections'] as const;
export type StreamRow = (typeof STREAM_ROWS)[number];

// ---- Children ------------------------------------------------------------------------------

/** `--tcp-backend <port>`: one byte back for a connection's first read, the rest discarded. */
function backend(port: number): void {
  createServer((s) => {
    s.on('error', () => {});
    s.once('data', () => {
      s.write('y');
      s.on('data', () => {});
    });
  }).listen(port, HOST);
  process.on('SIGTERM', () => process.exit(0));
}

/** `--tcp-client bulk|connect <port> <seconds>`: the load; prints one JSON line with what
 * it did and the CPU seconds it used. */
function client(mode: string, port: number, seconds: number): void {
  const started = performance.now();
  const cpu = process.cpuUsage();
  let stopped = false;
  const report = (fields: Record<string, number>) => {
    const used = process.cpuUsage(cpu);
    console.log(JSON.stringify({ ...fields, wall: (performance.now() - started) / 1000, cpu: (used.user + used.system) / 1e6 }));
    process.exit(0);
  };
  const fail = (why: string) => {
    console.error(why);
    process.exit(1);
  };
  if (mode === 'bulk') {
    const buffer = Buffer.alloc(BUFFER, 0x61);
    const sockets: Socket[] = [];
    for (let i = 0; i < BULK_CONNECTIONS; i++) {
      const s = connect({ port, host: HOST, noDelay: true });
      s.on('error', (e) => !stopped && fail(`bulk connection: ${e.message}`));
      s.on('data', () => {});
      const pump = () => {
        while (!stopped && s.write(buffer));
      };
      s.on('connect', pump);
      s.on('drain', pump);
      sockets.push(s);
    }
    setTimeout(() => {
      stopped = true;
      const bytes = sockets.reduce((sum, s) => sum + s.bytesWritten - s.writableLength, 0);
      for (const s of sockets) s.destroy();
      report({ bytes });
    }, seconds * 1000);
  } else {
    let connections = 0;
    const loop = () => {
      if (stopped) return;
      const s = connect({ port, host: HOST, noDelay: true });
      let answered = false;
      s.on('connect', () => s.write('x'));
      s.on('data', () => {
        answered = true;
        connections++;
        s.destroy();
      });
      s.on('error', (e) => !stopped && fail(`connection: ${e.message}`));
      s.on('close', () => {
        if (!answered && !stopped) fail('a connection closed without its answer');
        loop();
      });
    };
    for (let i = 0; i < CONNECT_CONCURRENCY; i++) loop();
    setTimeout(() => {
      stopped = true;
      report({ connections });
    }, seconds * 1000);
  }
}

// ---- The servers ---------------------------------------------------------------------------

/** nginx's stream module, installed when missing (as nginx itself is by processes.ts). */
function streamModule(): string {
  if (existsSync(STREAM_MODULE)) return STREAM_MODULE;
  if (process.getuid?.() !== 0) broken(`${STREAM_MODULE} is missing, and this is not root to install libnginx-mod-stream`);
  console.error('nginx has no stream module: apt-get install libnginx-mod-stream ...');
  const install = ['install', '-y', '-qq', '--no-install-recommends', 'libnginx-mod-stream'];
  let r = runFor('apt-get', install, 60);
  if (!r.ok) {
    const update = runFor('apt-get', ['update', '-qq'], 60);
    r = update.ok ? runFor('apt-get', install, 60) : update;
  }
  if (!existsSync(STREAM_MODULE)) broken(`apt-get could not install libnginx-mod-stream: ${r.output}`);
  return STREAM_MODULE;
}

function startNginxStream(command: string, dir: string, port: number, backendPort: number): Child {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'nginx.conf'),
    `# written by zonal's bench/tcp-load.ts
load_module ${streamModule()};
worker_processes 1;
error_log ${dir}/error.log;
pid ${dir}/nginx.pid;
events {
    worker_connections 4096;
}
stream {
    upstream tcp_backend {
        server ${HOST}:${backendPort};
    }
    server {
        listen ${HOST}:${port};
        proxy_pass tcp_backend;
    }
}
`,
  );
  return start('nginx (stream)', command, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', 'daemon off;']);
}

function zonalStreamConfig(port: number, admin: number, backendPort: number): string {
  return `# written by bench/tcp-load.ts
worker_processes 1;
http {
    server {
        listen ${HOST}:${admin} admin;
        location / {
            api /;
        }
    }
}
stream {
    upstream tcp_backend {
        server ${HOST}:${backendPort};
    }
    server {
        listen ${HOST}:${port};
        status_zone tcp;
        proxy_pass tcp_backend;
    }
}
`;
}

/** Resolves once `port` accepts a connection that gets the backend's byte back. */
async function tcpReady(child: Child, port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.process.exitCode !== null) broken(`${child.name} exited:\n${child.output}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect({ port, host: HOST });
      const timer = setTimeout(() => (s.destroy(), resolve(false)), 2000);
      s.on('connect', () => s.write('x'));
      s.on('data', () => (clearTimeout(timer), s.destroy(), resolve(true)));
      s.on('error', () => (clearTimeout(timer), resolve(false)));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  broken(`${child.name} did not proxy on port ${port}:\n${child.output}`);
}

function pidsOf(child: Child): number[] {
  const pid = child.process.pid!;
  const pids = [pid, ...childPids(pid)];
  if (pids.length !== 2) broken(`${child.name} runs ${pids.length} processes, not a master and one worker`);
  return pids;
}

// ---- The rows ------------------------------------------------------------------------------

interface Round {
  side: string;
  /** MB/s or connections/s. */
  rate: number;
  /** Bytes or connections done. */
  done: number;
  serverCpuPct: number;
  /** The server's CPU µs per MB moved or per connection: the figure a busy machine
   * leaves steadier than the rates. */
  serverCpuUs: number;
  clientCpuPct: number;
}

/** Runs the chosen stream rows; prints their tables and returns their JSON fields. */
export async function streamRows(dir: string, nginx: string, rows: readonly StreamRow[], seconds: number, rounds: number): Promise<Record<string, unknown>> {
  const [backendPort, zonalPort, adminPort, nginxPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  start('tcp backend', process.execPath, [SCRIPT, '--tcp-backend', String(backendPort)]);
  writeFileSync(join(dir, 'stream.conf'), zonalStreamConfig(zonalPort, adminPort, backendPort));
  const zonal = start('zonal (stream)', process.execPath, [ZONAL, '-c', join(dir, 'stream.conf')]);
  const nginxChild = startNginxStream(nginx, join(dir, 'nginx-stream'), nginxPort, backendPort);
  await Promise.all([tcpReady(zonal, zonalPort), tcpReady(nginxChild, nginxPort)]);
  const sides = [
    { key: 'zonal', name: 'zonal stream {}, 1 worker', port: zonalPort, pids: pidsOf(zonal) },
    { key: 'nginx', name: 'nginx stream module, 1 worker', port: nginxPort, pids: pidsOf(nginxChild) },
  ];

  const json: Record<string, unknown> = {};
  const through = { bytes: 0, connections: 0 };
  for (const row of rows) {
    const mode = row === 'tcp_bulk' ? 'bulk' : 'connect';
    const measure = async (side: (typeof sides)[number], secs: number): Promise<Round> => {
      const before = cpuSecondsOfTree(side.pids);
      const c = start(`tcp load client (${row}, ${side.name})`, process.execPath, [SCRIPT, '--tcp-client', mode, String(side.port), String(secs)]);
      const code = await finished(c, secs + 30);
      const server = cpuSecondsOfTree(side.pids) - before;
      const line = c.output.trim().split('\n').pop() ?? '';
      if (code !== 0) broken(`the load client of ${row} on ${side.name} failed:\n${c.output}`);
      const r = JSON.parse(line) as { bytes?: number; connections?: number; wall: number; cpu: number };
      const done = mode === 'bulk' ? r.bytes! : r.connections!;
      if (side.key === 'zonal') {
        if (mode === 'bulk') through.bytes += done;
        else through.connections += done;
      }
      return {
        side: side.key,
        rate: mode === 'bulk' ? done / 1048576 / secs : done / secs,
        done,
        serverCpuPct: (server / secs) * 100,
        serverCpuUs: (server * 1e6) / (mode === 'bulk' ? done / 1048576 : done),
        clientCpuPct: (r.cpu / r.wall) * 100,
      };
    };
    for (const side of sides) await measure(side, 1);
    const timed: Round[] = [];
    for (let i = 0; i < rounds; i++) for (const side of sides) timed.push(await measure(side, seconds));
    const med = (key: string, f: (r: Round) => number) => median(timed.filter((r) => r.side === key).map(f));
    const unit = mode === 'bulk' ? 'MB/s' : 'connections/s';
    table(
      `${row}: ${mode === 'bulk' ? `bulk upload, ${BULK_CONNECTIONS} connections writing ${BUFFER / 1024} KiB buffers` : `connect, 1 byte each way, close; ${CONNECT_CONCURRENCY} at a time`}; ${rounds} round(s) of ${seconds} s a side after 1 s of warm-up, medians`,
      ['side', unit, 'zonal / side', 'server CPU % (1 core = 100)', `server CPU µs per ${mode === 'bulk' ? 'MB' : 'connection'}`, 'client CPU %'],
      sides.map((s) => [
        s.name,
        round2(med(s.key, (r) => r.rate)),
        round2(med('zonal', (r) => r.rate) / med(s.key, (r) => r.rate)),
        Math.round(med(s.key, (r) => r.serverCpuPct)),
        Math.round(med(s.key, (r) => r.serverCpuUs)),
        Math.round(med(s.key, (r) => r.clientCpuPct)),
      ]),
    );
    const ratio = Math.round((med('zonal', (r) => r.rate) / med('nginx', (r) => r.rate)) * 1000) / 1000;
    json[row] = {
      zonal: round2(med('zonal', (r) => r.rate)),
      nginx: round2(med('nginx', (r) => r.rate)),
      ratio_nginx: ratio,
      target: mode === 'bulk' ? 0.7 : 0.4,
      server_cpu_pct: { zonal: Math.round(med('zonal', (r) => r.serverCpuPct)), nginx: Math.round(med('nginx', (r) => r.serverCpuPct)) },
      [mode === 'bulk' ? 'server_cpu_us_per_mb' : 'server_cpu_us_per_connection']: {
        zonal: Math.round(med('zonal', (r) => r.serverCpuUs)),
        nginx: Math.round(med('nginx', (r) => r.serverCpuUs)),
      },
      client_cpu_pct: { zonal: Math.round(med('zonal', (r) => r.clientCpuPct)), nginx: Math.round(med('nginx', (r) => r.clientCpuPct)) },
    };
  }

  // zonal's own counts: at least what went through it (tcpReady's connection included).
  const number = async (path: string) => {
    const a = await getOnce(adminPort, `/status/stream/server_zones/tcp/${path}`);
    const v: unknown = a.status === 200 ? JSON.parse(a.body) : undefined;
    return typeof v === 'number' ? v : broken(`GET /status/stream/server_zones/tcp/${path} answered ${a.status}: ${a.body.slice(0, 200)}`);
  };
  checkCounted("zonal's stream zone, read through its admin listener after the load", [
    { what: 'connections.total', answered: through.connections, counted: await number('connections/total') },
    { what: 'data.received (bytes)', answered: through.bytes, counted: await number('data/received') },
  ]);
  return json;
}

const [mode, ...args] = process.argv.slice(2);
if (process.argv[1] === SCRIPT) {
  if (mode === '--tcp-backend') backend(Number(args[0]));
  else if (mode === '--tcp-client') client(args[0], Number(args[1]), Number(args[2]));
}
