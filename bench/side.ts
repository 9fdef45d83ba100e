// npm run bench -- side [--seconds S] [--connections C] [--rounds N] [--rows a,b] (by default one round
// of `wrk -t1 -c32 -d5s` on each side, after 1 s of warm-up each): zonal next to what users
// would run instead, path by path, with one worker per server:
// - admin_connections: `GET /status/connections` on the admin listener of zonal's example
//   configuration (uWebSockets.js in the primary) | a bare uWebSockets.js server of the
//   project's own dependency answering "hello\n" synchronously in its handler (silent: no
//   `uWebSockets: 20` header) | nginx's `stub_status`.
// - full_tree: `GET /status/` (the whole tree) on the same admin listener | the bare
//   uWebSockets.js server answering a body of the same byte size, built once: zonal's tree
//   fetched once before the load, its length taken | the floor (bench/floor.ts): the same
//   bare server making every read of shared memory a render of the tree makes, then writing
//   the tree's constant runs and numbers with a minimal writer | the same floor behind
//   zonal's API: serveApi and createApi, all zonal's code but the status root's write,
//   which is the floor's. No target for either: they say how much of the gap to the bare
//   server any renderer would have, behind a bare route and behind zonal's, and how much
//   is zonal's render.
// - return_200: `return 200 "hello\n"` in a zonal server with `status_zone` on the server
//   and the location (metrics on), and in the same configuration without any status_zone
//   (metrics off) | a bare node:http server (one process, `Content-Type: text/plain`,
//   `Content-Length: 6`, as zonal's `return`) | nginx's `return 200 "hello\n"`.
// - proxy_no_keepalive: zonal's `proxy_pass` to an upstream with no `keepalive` directive,
//   as a user who writes none gets it (zonal then keeps up to 64 idle connections to each
//   peer: README, src/server/http/peer-pool.ts), metrics on and off, and with `keepalive
//   off` (a new connection per request, nginx's default), metrics on | node:http
//   forwarding with `http.request({ agent: false })` (a connection per request), the
//   response piped | nginx's `proxy_pass` to an upstream without `keepalive` (HTTP/1.0 and
//   `Connection: close` to the backend: a connection per request).
// - proxy_keepalive: zonal with `keepalive 64` | node:http forwarding through
//   `new http.Agent({ keepAlive: true, maxSockets: 64 })` | nginx with `keepalive 64`,
//   `proxy_http_version 1.1` and `proxy_set_header Connection ""`.
// - cache_hit_1k, cache_hit_100k: a response of 1 KB and of 100 KB served from the cache
//   (issue 16): zonal's proxy_cache | nginx's proxy_cache with the same settings
//   (`levels=1:2`, `keys_zone=bench_cache:10m`, `proxy_cache_valid 200 10m`, the keepalive
//   upstream), one worker each; the backend serves the two files (nginx's `root`).
// - cache_miss: the miss path's overhead against plain proxying, 1 KB from the backend:
//   zonal's cached location with `proxy_no_cache 1` and a key of its own (every request
//   is a miss: its key, MD5, lookup in the shared keys and the tap, the response not
//   written, since wrk asks one URL) | zonal's plain proxy_pass (keepalive 64) | nginx the same two ways;
//   miss_overhead_pct = (plain - miss) / plain * 100, for each.
// - gzip_json_20k: a 20 KB JSON file compressed on the way out (issue 33): zonal's
//   `gzip on` (node's zlib, in libuv's thread pool) | nginx's, with the same settings
//   (`gzip_types application/json`, level 1), wrk asking with `Accept-Encoding: gzip`;
//   both sides' first answer must gunzip to the file.
// - proxy_keepalive_limit_req: zonal's proxy_keepalive server with a `limit_req` that never
//   rejects (rate=1000000r/s, burst=1000 nodelay, keyed by $binary_remote_addr: one
//   shared-memory decision per request) | the same server without it. limit_req_overhead_pct
//   = (rps_without - rps_with) / rps_without * 100.
// - start_time: from the spawn to the first 200 of a one-server configuration, zonal beside
//   nginx, several starts each, alternating (bench/start-time.ts).
// - return_200_access_log, proxy_keepalive_access_log: the return_200 and proxy_keepalive
//   servers with `access_log <file> combined buffer=64k` in their location | the same
//   without it (zonal's metrics on) | nginx the same two ways (its http block says
//   `access_log off`, the server its own). access_log_overhead_pct = (rps_without -
//   rps_with) / rps_without * 100, for each; the issue's target is zonal's at most 5 %.
// - tcp_bulk, tcp_connections: TCP proxying, zonal's `stream {}` | nginx's stream module,
//   driven by a node load client (wrk speaks only HTTP): bench/tcp-load.ts says how.
// Ratios are zonal / reference (above 1: zonal serves more); metrics_overhead_pct =
// (rps_off - rps_on) / rps_off * 100.
//
// Every proxy is in front of the same backend, a separate nginx (a master and one worker)
// answering `return 200 "hello\n"` with keepalive_requests 1000000: the cheapest backend
// there is, so that what the proxy rows measure is the proxy. nginx is Debian's package and
// wrk Debian's too, both installed with apt-get when missing and this runs as root.
//
// The zonal servers: the example configuration conf/zonal.conf (what `npm start` runs)
// with its ports moved to free ones, `worker_processes 1` and its relative `root` made
// absolute; one zonal running the return and proxy servers with metrics on, and one
// running the same configuration without status_zone, each with an admin listener through
// which the bench reads the counts (admin traffic is counted nowhere). nginx as the
// reference is one more instance (a master and one worker) serving its four sides on four
// ports. Each server runs as a child process for the whole run, and wrk loads one of them
// at a time, in the order of the rows; with --rounds N > 1 each row's sides alternate
// round by round (a, b, c, a, b, c...) after a warm-up round each, and every figure is the
// median of a side's rounds. wrk's answers are checked: any socket error or non-2xx/3xx
// answer fails the run, naming the side. After the load, zonal's own counts (each server
// zone's requests, each peer's selected) must be at least the requests wrk had answered
// by that server, and the run fails otherwise: the metrics were not on.
//
// The CPU each server's processes (and the backend's) used in a round is read from
// /proc/<pid>/stat and shown per request: on these noisy 2-core machines, where wrk, the
// server and the backend share the cores, it says what a request costs better than req/s.
//
// Every wait is bounded in tries and time, a server is loaded only once it answers; every
// child is stopped with SIGTERM (SIGKILL after 10 s) at the end, failure included, and
// sent SIGTERM when this process exits in any other way. Everything listens on 127.0.0.1.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { keepNextTickFast } from '../src/server/next-tick.js';
import { Agent, createServer as createHttpServer, request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import type * as UWS from 'uWebSockets.js';
import { alternate, broken, checkCounted, childPids, endToEnd, freePort, getOnce, headerLine, HOST, nginxCommand, peerSelected, ready, ROOT, runBench, start, startNginx, statusNumber, wholeOption, ZONAL, type Answer, type Child } from './processes.js';
import { median, round2, table } from './report.js';
import { wrk, wrkCommand, type WrkMeasured } from './wrk.js';
import { STREAM_ROWS, streamRows, type StreamRow } from './tcp-load.js';
import { startTimeRow } from './start-time.js';

/** This file, which the children run in their own modes. */
const SCRIPT = fileURLToPath(import.meta.url);
const BODY = 'hello\n';
/** Idle upstream connections kept by the keep-alive sides. */
const KEEPALIVE = 64;

// ---- The bare servers and the plain proxies (children: `side.js --<mode> ...`) -------------
// The node:http references hold one tick object as zonal's workers do (src/server/
// next-tick.ts): without it a node process can fall, after an idle spell, into a state
// where every process.nextTick costs a quarter more, which would flatter zonal.

/** `--uws <port> <treeBytes>`: uWebSockets.js answering GET /status/ with a JSON body of
 * `treeBytes` bytes and anything else with "hello\n", both built once. */
function bareUws(port: number, treeBytes: number): void {
  const uWS = createRequire(import.meta.url)('uWebSockets.js') as typeof UWS;
  uWS._cfg('silent');
  const hello = Buffer.from(BODY);
  // `{`, spaces, `}`: valid JSON of the tree's size.
  const tree = Buffer.alloc(treeBytes, ' ');
  tree[0] = 0x7b;
  tree[treeBytes - 1] = 0x7d;
  uWS
    .App()
    .get('/status/', (res) => {
      res.writeHeader('Content-Type', 'application/json').end(tree);
    })
    .any('/*', (res) => {
      res.writeHeader('Content-Type', 'text/plain').end(hello);
    })
    .listen(HOST, port, (socket) => {
      if (!socket) {
        console.error(`bare uWebSockets.js: cannot listen on ${HOST}:${port}`);
        process.exit(1);
      }
    });
  process.on('SIGTERM', () => process.exit(0));
}

/** `--node-hello <port>`: one node:http process, the same answer as zonal's `return`. */
function nodeHello(port: number): void {
  keepNextTickFast();
  const body = Buffer.from(BODY);
  const headers = { 'Content-Type': 'text/plain', 'Content-Length': body.length };
  createHttpServer((_req, res) => {
    res.writeHead(200, headers);
    res.end(body);
  }).listen(port, HOST);
  process.on('SIGTERM', () => process.exit(0));
}

/** `--node-proxy <port> <backendPort> keepalive|close`: one node:http process forwarding
 * every request with http.request, through a keep-alive Agent of KEEPALIVE sockets or
 * with `agent: false` (a connection per request, `Connection: close`); the backend is
 * told its own Host, hop-by-hop headers stay on their hop, bodies are piped both ways. */
function nodeProxy(port: number, backendPort: number, keepAlive: boolean): void {
  keepNextTickFast();
  const agent = keepAlive ? new Agent({ keepAlive: true, maxSockets: KEEPALIVE }) : false;
  createHttpServer((req, res) => {
    const upstream = httpRequest({ host: HOST, port: backendPort, method: req.method, path: req.url, headers: endToEnd(req.headers, ['host']), agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
      answer.on('error', () => res.destroy());
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (res.headersSent) res.destroy();
      else res.writeHead(502, { 'Content-Length': 0 }).end();
    });
    // A client that leaves stops the backend's request.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }).listen(port, HOST);
  process.on('SIGTERM', () => process.exit(0));
}

// ---- Configurations ------------------------------------------------------------------------

/** conf/zonal.conf with every 127.0.0.1 port moved to a free one (the same old port, the
 * same new one: its upstreams keep pointing at its demo backends), one worker, and its
 * relative `root` paths resolved where the file is. The admin and one data port, new. */
async function exampleConfig(): Promise<{ text: string; adminPort: number; sitePort: number }> {
  const confDir = join(ROOT, 'conf');
  const original = readFileSync(join(confDir, 'zonal.conf'), 'utf8');
  const moved = new Map<string, number>();
  for (const [, port] of original.matchAll(/127\.0\.0\.1:(\d+)/g)) if (!moved.has(port)) moved.set(port, await freePort());
  const text = original
    .replace(/127\.0\.0\.1:(\d+)/g, (_, port: string) => `${HOST}:${moved.get(port)}`)
    .replace(/^(\s*worker_processes)\s+\w+;/m, '$1 1;')
    .replace(/^(\s*root)\s+([^/\s;][^\s;]*);/gm, (_, directive: string, path: string) => `${directive} ${join(confDir, path)};`);
  const admin = /listen\s+127\.0\.0\.1:(\d+)\s+admin\s*;/.exec(text);
  const site = /listen\s+127\.0\.0\.1:(\d+)\s*;/.exec(text);
  if (!admin || !site || !/^\s*worker_processes 1;/m.test(text))
    broken(`conf/zonal.conf no longer has what this bench expects (worker_processes, a 127.0.0.1 listener and an admin one)`);
  return { text, adminPort: Number(admin[1]), sitePort: Number(site[1]) };
}

interface DataPorts {
  hello: number;
  proxyDefault: number;
  proxyOff: number;
  proxyKeepalive: number;
  /** proxyKeepalive's server behind a limit_req that never rejects. */
  proxyLimited: number;
  admin: number;
  /** The cache's servers (metrics on only): hits, and misses never written. */
  cache?: { hit: number; miss: number; dir: string };
  /** hello's and proxyKeepalive's servers with an access_log into `dir` (metrics on only). */
  logged?: { hello: number; proxyKeepalive: number; dir: string };
  /** The gzip row's server: GZIP_JSON under `root` (metrics on only). */
  gzip?: { port: number; root: string };
}

/** The access_log of the *_access_log rows, zonal's and nginx's alike. */
const accessLog = (file: string) => `access_log ${file} combined buffer=64k;`;

/** The cache rows' bodies, files of the backend. */
const CACHE_BODIES = { '1k': 1024, '100k': 100 * 1024 } as const;

/** The gzip row's answer: a JSON file of 20 KB (records of a listing, as an API answers),
 * served as a file by both sides with the same settings. */
const GZIP_JSON = { name: 'data.json', bytes: 20 * 1024 } as const;
const gzipSettings = (root: string) => `root ${root}; types { application/json json; } gzip on; gzip_types application/json;`;
const ACCEPT_GZIP = { 'Accept-Encoding': 'gzip' } as const;

/** GZIP_JSON's text: records until the size, padded with spaces inside the array. */
function gzipJson(): string {
  const records: string[] = [];
  let size = 2;
  for (let i = 0; ; i++) {
    const record = JSON.stringify({ id: i, name: `user ${i}`, email: `user${i}@example.com`, active: i % 3 !== 0, score: (i * 7919) % 1000, tags: ['a', 'b', `t${i % 17}`] });
    if (size + record.length + 1 > GZIP_JSON.bytes) break;
    records.push(record);
    size += record.length + 1;
  }
  const text = `[${records.join(',')}]`;
  return text.slice(0, -1) + ' '.repeat(GZIP_JSON.bytes - text.length) + ']';
}

/** The upstreams (every peer is the backend) and the server zones of the data plane. */
const UPSTREAM = { proxyDefault: 'u_default', proxyOff: 'u_keepalive_off', proxyKeepalive: 'u_keepalive' } as const;

/** The limit_req zone of the proxy_keepalive_limit_req row. */
const LIMIT_ZONE = 'bench_limit';

/** zonal's data plane: `return` and the three proxies, each a server of its own, with a
 * server zone and a location zone each when `metrics`, none otherwise; and an admin
 * listener for the bench's reads. */
function zonalConfig(p: DataPorts, backendPort: number, metrics: boolean): string {
  const zone = (name: string) => (metrics ? `status_zone ${name};` : '# no status_zone');
  const server = (port: number, name: string, content: string) => `
    server {
        listen ${HOST}:${port};
        ${zone(name)}
        location / {
            ${zone(`${name}_root`)}
            ${content}
        }
    }`;
  return `# written by bench/side.ts (metrics ${metrics ? 'on' : 'off'})
worker_processes 1;
http {
    # Never rejects: a million requests a second, a thousand in the same millisecond.
    limit_req_zone $binary_remote_addr zone=${LIMIT_ZONE}:1m rate=1000000r/s;
    upstream ${UPSTREAM.proxyDefault} {
        server ${HOST}:${backendPort};
    }
    upstream ${UPSTREAM.proxyOff} {
        server ${HOST}:${backendPort};
        keepalive off;
    }
    upstream ${UPSTREAM.proxyKeepalive} {
        server ${HOST}:${backendPort};
        keepalive ${KEEPALIVE};
    }
${server(p.hello, 'hello', 'return 200 "hello\\n";')}
${server(p.proxyDefault, 'proxy_default', `proxy_pass http://${UPSTREAM.proxyDefault};`)}
${server(p.proxyOff, 'proxy_keepalive_off', `proxy_pass http://${UPSTREAM.proxyOff};`)}
${server(p.proxyKeepalive, 'proxy_keepalive', `proxy_pass http://${UPSTREAM.proxyKeepalive};`)}
${server(p.proxyLimited, 'proxy_keepalive_limit_req', `limit_req zone=${LIMIT_ZONE} burst=1000 nodelay; proxy_pass http://${UPSTREAM.proxyKeepalive};`)}
${
  p.logged
    ? `${server(p.logged.hello, 'hello_log', `${accessLog(join(p.logged.dir, 'zonal-hello.log'))} return 200 "hello\\n";`)}
${server(p.logged.proxyKeepalive, 'proxy_keepalive_log', `${accessLog(join(p.logged.dir, 'zonal-proxy.log'))} proxy_pass http://${UPSTREAM.proxyKeepalive};`)}`
    : ''
}
${
  p.cache
    ? `    proxy_cache_path ${p.cache.dir} levels=1:2 keys_zone=bench_cache:10m;
${server(p.cache.hit, 'cache_hit', `proxy_pass http://${UPSTREAM.proxyKeepalive}; proxy_cache bench_cache; proxy_cache_valid 200 10m;`)}
${server(p.cache.miss, 'cache_miss', `proxy_pass http://${UPSTREAM.proxyKeepalive}; proxy_cache bench_cache; proxy_cache_valid 200 10m; proxy_cache_key miss$request_uri; proxy_no_cache 1;`)}`
    : ''
}
${p.gzip ? server(p.gzip.port, 'gzip', gzipSettings(p.gzip.root)) : ''}
    server {
        listen ${HOST}:${p.admin} admin;
        location / {
            api /;
        }
    }
}
`;
}

interface NginxPorts {
  stub: number;
  hello: number;
  proxyClose: number;
  proxyKeepalive: number;
  cacheHit: number;
  cacheMiss: number;
  cacheDir: string;
  helloLog: number;
  proxyKeepaliveLog: number;
  logDir: string;
  gzip: number;
  gzipRoot: string;
}

/** nginx as the reference: its four sides, a port each. */
function nginxHttp(p: NginxPorts, backendPort: number): string {
  return `upstream backend_close {
    server ${HOST}:${backendPort};
}
upstream backend_keepalive {
    server ${HOST}:${backendPort};
    keepalive ${KEEPALIVE};
    keepalive_requests 1000000;
}
server {
    listen ${HOST}:${p.stub};
    location / {
        stub_status;
    }
}
server {
    listen ${HOST}:${p.hello};
    location / {
        return 200 "hello\\n";
    }
}
server {
    listen ${HOST}:${p.helloLog};
    location / {
        ${accessLog(join(p.logDir, 'nginx-hello.log'))}
        return 200 "hello\\n";
    }
}
server {
    listen ${HOST}:${p.proxyKeepaliveLog};
    location / {
        ${accessLog(join(p.logDir, 'nginx-proxy.log'))}
        proxy_pass http://backend_keepalive;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
    }
}
server {
    listen ${HOST}:${p.proxyClose};
    location / {
        proxy_pass http://backend_close;
    }
}
server {
    listen ${HOST}:${p.proxyKeepalive};
    location / {
        proxy_pass http://backend_keepalive;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
    }
}
server {
    listen ${HOST}:${p.gzip};
    location / {
        ${gzipSettings(p.gzipRoot)}
    }
}
proxy_cache_path ${p.cacheDir} levels=1:2 keys_zone=bench_cache:10m;
server {
    listen ${HOST}:${p.cacheHit};
    location / {
        proxy_pass http://backend_keepalive;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_cache bench_cache;
        proxy_cache_valid 200 10m;
    }
}
server {
    listen ${HOST}:${p.cacheMiss};
    location / {
        proxy_pass http://backend_keepalive;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_cache bench_cache;
        proxy_cache_valid 200 10m;
        proxy_cache_key miss$request_uri;
        proxy_no_cache 1;
    }
}`;
}

/** The backend every proxy forwards to: nginx's cheapest answer, and the cache rows'
 * files under /files/. */
const backendHttp = (port: number, root: string) => `server {
    listen ${HOST}:${port};
    location / {
        return 200 "hello\\n";
    }
    location /files/ {
        root ${root};
    }
}`;

// ---- Sides and rows ------------------------------------------------------------------------

type RowName =
  | 'admin_connections'
  | 'full_tree'
  | 'return_200'
  | 'proxy_no_keepalive'
  | 'proxy_keepalive'
  | 'proxy_keepalive_limit_req'
  | 'return_200_access_log'
  | 'proxy_keepalive_access_log'
  | 'cache_hit_1k'
  | 'cache_hit_100k'
  | 'cache_miss'
  | 'gzip_json_20k';

/** One server under load: its key in the JSON, where wrk sends its requests, the
 * processes whose CPU it is, and what its first answer must be (an error message, or
 * undefined when right). */
interface Side {
  key: string;
  name: string;
  port: number;
  path: string;
  pids: number[];
  check: (a: Answer) => string | undefined;
  /** The request's headers, its first one's and wrk's. */
  headers?: Record<string, string>;
}

interface Row {
  name: RowName;
  title: string;
  /** zonal first (the one the ratios are of), then the others. */
  sides: Side[];
  /** The backend's pids, for a proxy row. */
  backend?: number[];
}

interface Round extends WrkMeasured {
  side: string;
  cpuUsPerRequest: number;
  backendUsPerRequest: number;
}

const hasSide = (row: Row, key: string) => row.sides.some((s) => s.key === key);

const isHello = (a: Answer) => (a.status === 200 && a.body === BODY ? undefined : `answered ${a.status}: ${JSON.stringify(a.body.slice(0, 200))}`);

/** The pids of a server: its main process and, for a master or primary, its `workers`. */
function pidsOf(child: Child, workers: number): number[] {
  const pid = child.process.pid!;
  const pids = [pid, ...childPids(pid)];
  if (pids.length !== 1 + workers) broken(`the ${child.name} server runs ${pids.length} processes, not ${1 + workers}`);
  return pids;
}

// ---- Run -----------------------------------------------------------------------------------

const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;
const tenth = (x: number) => Math.round(x * 10) / 10;

async function main(): Promise<void> {
  const seconds = wholeOption('--seconds', 5);
  const connections = wholeOption('--connections', 32, 1000);
  const rounds = wholeOption('--rounds', 1);
  const threads = 1;
  const warmupSeconds = 1;

  await runBench('side', async (dir) => {
    const wrkTool = wrkCommand();
    if ('reason' in wrkTool) broken(`wrk is needed: ${wrkTool.reason}`);
    const nginx = nginxCommand();
    if ('reason' in nginx) broken(`nginx is needed (the backend of every proxy): ${nginx.reason}`);

    // The backend first: the proxies answer only once it does.
    const backendPort = await freePort();
    // nginx's worker runs as nobody when the bench runs as root: the files must be readable.
    mkdirSync(join(dir, 'www', 'files'), { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755);
    for (const [name, bytes] of Object.entries(CACHE_BODIES)) writeFileSync(join(dir, 'www', 'files', name), Buffer.alloc(bytes, 'c'), { mode: 0o644 });
    const gzipped = gzipJson();
    writeFileSync(join(dir, 'www', GZIP_JSON.name), gzipped, { mode: 0o644 });
    const backend = startNginx('backend nginx', nginx.command, join(dir, 'backend'), backendHttp(backendPort, join(dir, 'www')));
    const backendFirst = await ready(backend, backendPort);
    if (isHello(backendFirst)) broken(`the backend ${isHello(backendFirst)}`);

    const example = await exampleConfig();
    writeFileSync(join(dir, 'example.conf'), example.text);
    const onPorts: DataPorts = {
      hello: await freePort(),
      proxyDefault: await freePort(),
      proxyOff: await freePort(),
      proxyKeepalive: await freePort(),
      proxyLimited: await freePort(),
      admin: await freePort(),
      cache: { hit: await freePort(), miss: await freePort(), dir: join(dir, 'zonal-cache') },
      logged: { hello: await freePort(), proxyKeepalive: await freePort(), dir: join(dir, 'logs') },
      gzip: { port: await freePort(), root: join(dir, 'www') },
    };
    // nginx's worker runs as nobody when the bench runs as root: it must write there too.
    mkdirSync(join(dir, 'logs'), { mode: 0o777 });
    chmodSync(join(dir, 'logs'), 0o777);
    const offPorts: DataPorts = { hello: await freePort(), proxyDefault: await freePort(), proxyOff: await freePort(), proxyKeepalive: await freePort(), proxyLimited: await freePort(), admin: await freePort() };
    writeFileSync(join(dir, 'on.conf'), zonalConfig(onPorts, backendPort, true));
    writeFileSync(join(dir, 'off.conf'), zonalConfig(offPorts, backendPort, false));
    const nginxPorts: NginxPorts = {
      stub: await freePort(),
      hello: await freePort(),
      proxyClose: await freePort(),
      proxyKeepalive: await freePort(),
      cacheHit: await freePort(),
      cacheMiss: await freePort(),
      cacheDir: join(dir, 'nginx-cache'),
      helloLog: await freePort(),
      proxyKeepaliveLog: await freePort(),
      logDir: join(dir, 'logs'),
      gzip: await freePort(),
      gzipRoot: join(dir, 'www'),
    };
    const nodePorts = { hello: await freePort(), proxyClose: await freePort(), proxyKeepalive: await freePort() };
    const uwsPort = await freePort();
    const floorPort = await freePort();
    const floorApiPort = await freePort();

    const zonalExample = start('zonal (example configuration)', process.execPath, [ZONAL, '-c', join(dir, 'example.conf')]);
    const zonalOn = start('zonal (metrics on)', process.execPath, [ZONAL, '-c', join(dir, 'on.conf')]);
    const zonalOff = start('zonal (metrics off)', process.execPath, [ZONAL, '-c', join(dir, 'off.conf')]);
    const nginxRef = startNginx('nginx', nginx.command, join(dir, 'nginx'), nginxHttp(nginxPorts, backendPort));
    const nodeHelloChild = start('bare node:http', process.execPath, [SCRIPT, '--node-hello', String(nodePorts.hello)]);
    const nodeClose = start('node:http proxy, agent: false', process.execPath, [SCRIPT, '--node-proxy', String(nodePorts.proxyClose), String(backendPort), 'close']);
    const nodeKeepalive = start('node:http proxy, keep-alive agent', process.execPath, [SCRIPT, '--node-proxy', String(nodePorts.proxyKeepalive), String(backendPort), 'keepalive']);
    await Promise.all([
      ready(zonalExample, example.sitePort).then(() => ready(zonalExample, example.adminPort)),
      ready(zonalOn, onPorts.hello).then(() => ready(zonalOn, onPorts.admin)),
      ready(zonalOff, offPorts.hello).then(() => ready(zonalOff, offPorts.admin)),
      ready(nginxRef, nginxPorts.hello),
      ready(nodeHelloChild, nodePorts.hello),
      ready(nodeClose, nodePorts.proxyClose),
      ready(nodeKeepalive, nodePorts.proxyKeepalive),
    ]);

    // The whole tree's size, once, for the bare server's body of the same size.
    const tree = await getOnce(example.adminPort, '/status/');
    if (tree.status !== 200) broken(`zonal's admin listener answered GET /status/ with ${tree.status}: ${tree.body.slice(0, 300)}`);
    const treeBytes = Buffer.byteLength(tree.body);
    const uws = start('bare uWebSockets.js', process.execPath, [SCRIPT, '--uws', String(uwsPort), String(treeBytes)]);
    // The floor reads the example server's zones, found by its primary's pid.
    const floorArgs = [String(zonalExample.process.pid), String(example.adminPort)];
    const floor = start('the floor of full_tree', process.execPath, [SCRIPT, '--floor', String(floorPort), ...floorArgs]);
    const floorApi = start("the floor behind zonal's API", process.execPath, [SCRIPT, '--floor-api', String(floorApiPort), ...floorArgs]);
    await Promise.all([ready(uws, uwsPort), ready(floor, floorPort), ready(floorApi, floorApiPort)]);

    const backendPids = pidsOf(backend, 1);
    const zonalExamplePids = pidsOf(zonalExample, 1);
    const zonalOnPids = pidsOf(zonalOn, 1);
    const zonalOffPids = pidsOf(zonalOff, 1);
    // A master, its worker, and the cache manager and cache loader that proxy_cache_path
    // starts (the loader exits a minute later; its CPU counts while it runs).
    const nginxPids = pidsOf(nginxRef, 3);
    const isJsonObject = (a: Answer) => {
      if (a.status !== 200) return `answered ${a.status}: ${a.body.slice(0, 200)}`;
      try {
        return typeof JSON.parse(a.body) === 'object' ? undefined : `answered ${a.body.slice(0, 200)}`;
      } catch {
        return `answered something else than JSON: ${a.body.slice(0, 200)}`;
      }
    };
    const isBytes = (n: number) => (a: Answer) => (a.status === 200 && Buffer.byteLength(a.body) === n ? undefined : `answered ${a.status} with ${Buffer.byteLength(a.body)} bytes`);
    const zonalCache = onPorts.cache!;
    // The JSON, compressed: gunzipped, it is the file.
    const isGzippedJson = (a: Answer) => {
      if (a.status !== 200 || a.headers['content-encoding'] !== 'gzip') return `answered ${a.status}, Content-Encoding ${a.headers['content-encoding']}`;
      try {
        return gunzipSync(a.bytes).toString() === gzipped ? undefined : 'answered another body';
      } catch (e) {
        return `answered a body that does not gunzip: ${(e as Error).message}`;
      }
    };
    const cacheHitRow = (name: 'cache_hit_1k' | 'cache_hit_100k', file: keyof typeof CACHE_BODIES): Row => ({
      name,
      title: `proxy_cache hit, ${file === '1k' ? '1 KB' : '100 KB'} (levels=1:2, proxy_cache_valid 200 10m, keepalive upstream)`,
      backend: backendPids,
      sides: [
        { key: 'zonal', name: 'zonal proxy_cache, metrics on', port: zonalCache.hit, path: `/files/${file}`, pids: zonalOnPids, check: isBytes(CACHE_BODIES[file]) },
        { key: 'nginx', name: 'nginx proxy_cache', port: nginxPorts.cacheHit, path: `/files/${file}`, pids: nginxPids, check: isBytes(CACHE_BODIES[file]) },
      ],
    });
    const allRows: Row[] = [
      {
        name: 'admin_connections',
        title: 'GET /status/connections',
        sides: [
          { key: 'zonal', name: 'zonal admin listener (uWS, in the primary)', port: example.adminPort, path: '/status/connections', pids: zonalExamplePids, check: isJsonObject },
          { key: 'bare_uws', name: 'bare uWebSockets.js, "hello\\n"', port: uwsPort, path: '/status/connections', pids: pidsOf(uws, 0), check: isHello },
          { key: 'nginx', name: 'nginx stub_status', port: nginxPorts.stub, path: '/status/connections', pids: nginxPids, check: (a) => (a.status === 200 && a.body.startsWith('Active connections:') ? undefined : `answered ${a.status}: ${a.body.slice(0, 200)}`) },
        ],
      },
      {
        name: 'full_tree',
        title: `GET /status/, the whole tree of the example configuration (${treeBytes} bytes)`,
        sides: [
          { key: 'zonal', name: 'zonal admin listener', port: example.adminPort, path: '/status/', pids: zonalExamplePids, check: isJsonObject },
          { key: 'bare_uws', name: `bare uWebSockets.js, ${treeBytes} bytes built once`, port: uwsPort, path: '/status/', pids: pidsOf(uws, 0), check: isBytes(treeBytes) },
          { key: 'floor', name: 'the floor: bare uWebSockets.js, the same reads, a minimal writer', port: floorPort, path: '/status/', pids: pidsOf(floor, 0), check: isBytes(treeBytes) },
          { key: 'floor_api', name: "the floor behind zonal's API (serveApi, routing, headers)", port: floorApiPort, path: '/status/', pids: pidsOf(floorApi, 0), check: isBytes(treeBytes) },
        ],
      },
      {
        name: 'return_200',
        title: 'return 200 "hello\\n"',
        sides: [
          { key: 'zonal', name: 'zonal, metrics on', port: onPorts.hello, path: '/', pids: zonalOnPids, check: isHello },
          { key: 'zonal_metrics_off', name: 'zonal, metrics off', port: offPorts.hello, path: '/', pids: zonalOffPids, check: isHello },
          { key: 'node_http', name: 'bare node:http', port: nodePorts.hello, path: '/', pids: pidsOf(nodeHelloChild, 0), check: isHello },
          { key: 'nginx', name: 'nginx return', port: nginxPorts.hello, path: '/', pids: nginxPids, check: isHello },
        ],
      },
      {
        name: 'proxy_no_keepalive',
        title: 'proxy_pass, no keepalive written',
        backend: backendPids,
        sides: [
          { key: 'zonal', name: 'zonal, metrics on (reuses connections by default)', port: onPorts.proxyDefault, path: '/', pids: zonalOnPids, check: isHello },
          { key: 'zonal_metrics_off', name: 'zonal, metrics off (the same)', port: offPorts.proxyDefault, path: '/', pids: zonalOffPids, check: isHello },
          { key: 'zonal_keepalive_off', name: 'zonal, keepalive off, metrics on', port: onPorts.proxyOff, path: '/', pids: zonalOnPids, check: isHello },
          { key: 'node_http', name: 'node:http, agent: false', port: nodePorts.proxyClose, path: '/', pids: pidsOf(nodeClose, 0), check: isHello },
          { key: 'nginx', name: 'nginx, no keepalive (HTTP/1.0, close)', port: nginxPorts.proxyClose, path: '/', pids: nginxPids, check: isHello },
        ],
      },
      {
        name: 'proxy_keepalive',
        title: `proxy_pass, keepalive ${KEEPALIVE}`,
        backend: backendPids,
        sides: [
          { key: 'zonal', name: `zonal, keepalive ${KEEPALIVE}, metrics on`, port: onPorts.proxyKeepalive, path: '/', pids: zonalOnPids, check: isHello },
          { key: 'node_http', name: `node:http, keep-alive Agent, maxSockets ${KEEPALIVE}`, port: nodePorts.proxyKeepalive, path: '/', pids: pidsOf(nodeKeepalive, 0), check: isHello },
          { key: 'nginx', name: `nginx, keepalive ${KEEPALIVE}, HTTP/1.1`, port: nginxPorts.proxyKeepalive, path: '/', pids: nginxPids, check: isHello },
        ],
      },
      {
        name: 'proxy_keepalive_limit_req',
        title: `proxy_pass, keepalive ${KEEPALIVE}, with and without a limit_req that never rejects`,
        backend: backendPids,
        sides: [
          { key: 'zonal', name: `zonal, limit_req (never rejecting), metrics on`, port: onPorts.proxyLimited, path: '/', pids: zonalOnPids, check: isHello },
          { key: 'zonal_no_limit', name: `zonal, the same without limit_req`, port: onPorts.proxyKeepalive, path: '/', pids: zonalOnPids, check: isHello },
        ],
      },
      {
        name: 'return_200_access_log',
        title: 'return 200 "hello\\n", with and without access_log <file> combined buffer=64k',
        sides: [
          { key: 'zonal', name: 'zonal, access_log, metrics on', port: onPorts.logged!.hello, path: '/', pids: zonalOnPids, check: isHello },
          { key: 'zonal_no_log', name: 'zonal, no access_log, metrics on', port: onPorts.hello, path: '/', pids: zonalOnPids, check: isHello },
          { key: 'nginx', name: 'nginx return, access_log', port: nginxPorts.helloLog, path: '/', pids: nginxPids, check: isHello },
          { key: 'nginx_no_log', name: 'nginx return, no access_log', port: nginxPorts.hello, path: '/', pids: nginxPids, check: isHello },
        ],
      },
      {
        name: 'proxy_keepalive_access_log',
        title: `proxy_pass, keepalive ${KEEPALIVE}, with and without access_log <file> combined buffer=64k`,
        backend: backendPids,
        sides: [
          { key: 'zonal', name: `zonal, keepalive ${KEEPALIVE}, access_log, metrics on`, port: onPorts.logged!.proxyKeepalive, path: '/', pids: zonalOnPids, check: isHello },
          { key: 'zonal_no_log', name: `zonal, keepalive ${KEEPALIVE}, no access_log, metrics on`, port: onPorts.proxyKeepalive, path: '/', pids: zonalOnPids, check: isHello },
          { key: 'nginx', name: `nginx, keepalive ${KEEPALIVE}, access_log`, port: nginxPorts.proxyKeepaliveLog, path: '/', pids: nginxPids, check: isHello },
          { key: 'nginx_no_log', name: `nginx, keepalive ${KEEPALIVE}, no access_log`, port: nginxPorts.proxyKeepalive, path: '/', pids: nginxPids, check: isHello },
        ],
      },
      cacheHitRow('cache_hit_1k', '1k'),
      cacheHitRow('cache_hit_100k', '100k'),
      {
        name: 'cache_miss',
        title: 'proxy_cache miss (proxy_no_cache 1: looked up, not written) against plain proxy_pass, 1 KB, keepalive upstream',
        backend: backendPids,
        sides: [
          { key: 'zonal', name: 'zonal proxy_cache, every request a miss', port: zonalCache.miss, path: '/files/1k', pids: zonalOnPids, check: isBytes(1024) },
          { key: 'zonal_plain', name: 'zonal proxy_pass, no cache', port: onPorts.proxyKeepalive, path: '/files/1k', pids: zonalOnPids, check: isBytes(1024) },
          { key: 'nginx', name: 'nginx proxy_cache, every request a miss', port: nginxPorts.cacheMiss, path: '/files/1k', pids: nginxPids, check: isBytes(1024) },
          { key: 'nginx_plain', name: 'nginx proxy_pass, no cache', port: nginxPorts.proxyKeepalive, path: '/files/1k', pids: nginxPids, check: isBytes(1024) },
        ],
      },
      {
        name: 'gzip_json_20k',
        title: `gzip on (gzip_comp_level 1), a ${GZIP_JSON.bytes / 1024} KB JSON file, Accept-Encoding: gzip`,
        sides: [
          { key: 'zonal', name: 'zonal gzip, metrics on', port: onPorts.gzip!.port, path: `/${GZIP_JSON.name}`, pids: zonalOnPids, check: isGzippedJson, headers: ACCEPT_GZIP },
          { key: 'nginx', name: 'nginx gzip', port: nginxPorts.gzip, path: `/${GZIP_JSON.name}`, pids: nginxPids, check: isGzippedJson, headers: ACCEPT_GZIP },
        ],
      },
    ];

    // `--rows a,b`: only those rows (all by default), for measuring one path at a time.
    const only = process.argv.includes('--rows') ? process.argv[process.argv.indexOf('--rows') + 1]?.split(',') ?? [] : undefined;
    const isStream = (name: string): name is StreamRow => (STREAM_ROWS as readonly string[]).includes(name);
    const unknown = only?.filter((name) => !allRows.some((r) => r.name === name) && !isStream(name) && name !== 'start_time') ?? [];
    if (only && (only.length === 0 || unknown.length > 0))
      broken(`--rows takes names of rows separated by commas (${[...allRows.map((r) => r.name), ...STREAM_ROWS, 'start_time'].join(', ')}), not "${unknown.join(',')}"`);
    const rows = only ? allRows.filter((r) => only.includes(r.name)) : allRows;
    const tcpRows = only ? only.filter(isStream) : [...STREAM_ROWS];

    // Every side's first answer, on a connection of its own, before any load.
    const first = new Map<Side, Answer>();
    for (const row of rows)
      for (const side of row.sides) {
        const a = await getOnce(side.port, side.path, side.headers);
        const wrong = side.check(a);
        if (wrong) broken(`${row.name}, ${side.name}: GET ${side.path} ${wrong}`);
        first.set(side, a);
      }

    // The load: row by row, one side at a time.
    const results = new Map<RowName, { timed: Round[]; answered: Record<string, number> }>();
    for (const row of rows) {
      const byKey = new Map(row.sides.map((s) => [s.key, s]));
      const measure = async (key: string, secs: number): Promise<Round> => {
        const side = byKey.get(key)!;
        const label = `${row.name}, ${side.name}`;
        const trees = row.backend ? [side.pids, row.backend] : [side.pids];
        const extra = Object.entries(side.headers ?? {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
        const { measured, cpu } = await wrk(wrkTool.command, label, `http://${HOST}:${side.port}${side.path}`, { threads, connections, seconds: secs }, trees, extra);
        return { side: key, ...measured, cpuUsPerRequest: (cpu[0] * 1e6) / measured.requests, backendUsPerRequest: row.backend ? (cpu[1] * 1e6) / measured.requests : 0 };
      };
      results.set(row.name, await alternate(row.sides.map((s) => s.key), rounds, warmupSeconds, seconds, measure));
    }

    // zonal's own counts, read now, shown and checked after the figures: at least what
    // wrk had answered, and the first GET.
    const answered = (row: RowName, key: string) => (results.has(row) ? results.get(row)!.answered[key] + 1 : undefined);
    const serverZone = async (port: number, zone: string) => (await statusNumber(port, `http/server_zones/${zone}/requests/total`)) ?? broken(`zonal has no server zone ${zone}`);
    const peer = async (port: number, upstream: string) => (await peerSelected(port, upstream, backendPort)).value;
    const allCounts: Array<{ what: string; answered: number | undefined; counted: number }> = [
      { what: 'metrics on: server zone hello, requests', answered: answered('return_200', 'zonal'), counted: await serverZone(onPorts.admin, 'hello') },
      { what: 'metrics on: server zone proxy_default, requests', answered: answered('proxy_no_keepalive', 'zonal'), counted: await serverZone(onPorts.admin, 'proxy_default') },
      { what: `metrics on: upstream ${UPSTREAM.proxyDefault}, peer selected`, answered: answered('proxy_no_keepalive', 'zonal'), counted: await peer(onPorts.admin, UPSTREAM.proxyDefault) },
      { what: 'metrics on: server zone proxy_keepalive_off, requests', answered: answered('proxy_no_keepalive', 'zonal_keepalive_off'), counted: await serverZone(onPorts.admin, 'proxy_keepalive_off') },
      { what: `metrics on: upstream ${UPSTREAM.proxyOff}, peer selected`, answered: answered('proxy_no_keepalive', 'zonal_keepalive_off'), counted: await peer(onPorts.admin, UPSTREAM.proxyOff) },
      { what: 'metrics on: server zone proxy_keepalive, requests', answered: answered('proxy_keepalive', 'zonal'), counted: await serverZone(onPorts.admin, 'proxy_keepalive') },
      { what: `metrics on: upstream ${UPSTREAM.proxyKeepalive}, peer selected`, answered: answered('proxy_keepalive', 'zonal'), counted: await peer(onPorts.admin, UPSTREAM.proxyKeepalive) },
      {
        what: `metrics on: limit_req zone ${LIMIT_ZONE}, passed`,
        answered: answered('proxy_keepalive_limit_req', 'zonal'),
        counted: (await statusNumber(onPorts.admin, `http/limit_reqs/${LIMIT_ZONE}/passed`)) ?? broken(`zonal has no limit_req zone ${LIMIT_ZONE}`),
      },
      { what: `metrics off: upstream ${UPSTREAM.proxyDefault}, peer selected`, answered: answered('proxy_no_keepalive', 'zonal_metrics_off'), counted: await peer(offPorts.admin, UPSTREAM.proxyDefault) },
      // Every answer of the hit rows but the first of each file was a hit.
      {
        what: 'metrics on: cache bench_cache, hits',
        answered: results.has('cache_hit_1k') || results.has('cache_hit_100k') ? (answered('cache_hit_1k', 'zonal') ?? 1) + (answered('cache_hit_100k', 'zonal') ?? 1) - 2 : undefined,
        counted: (await statusNumber(onPorts.admin, 'http/caches/bench_cache/hit/responses')) ?? 0,
      },
      { what: 'metrics on: cache bench_cache, misses', answered: answered('cache_miss', 'zonal'), counted: (await statusNumber(onPorts.admin, 'http/caches/bench_cache/miss/responses')) ?? 0 },
    ];

    const counts = allCounts.filter((c): c is { what: string; answered: number; counted: number } => c.answered !== undefined);

    // The figures: medians of each side's timed rounds.
    const json: Record<string, unknown> = {
      bench: 'side',
      seconds,
      connections,
      threads,
      rounds,
      warmup_seconds: warmupSeconds,
      wrk: wrkTool.version,
      nginx: nginx.version,
      full_tree_bytes: treeBytes,
    };
    for (const row of rows) {
      const { timed } = results.get(row.name)!;
      const med = (key: string, f: (r: Round) => number) => median(timed.filter((r) => r.side === key).map(f));
      const rps = (key: string) => med(key, (r) => r.rps);
      const zonal = rps('zonal');
      const caption = row.backend
        ? `${row.title}: in front of one nginx backend answering return 200 "hello\\n" (the cheapest backend, so that the proxy is what is measured)`
        : row.title;
      table(
        `${caption}; wrk -t${threads} -c${connections}, ${rounds} round(s) of ${seconds} s a side${rounds > 1 ? ', alternating, medians' : ''}, after ${warmupSeconds} s of warm-up`,
        ['side', 'req/s', 'zonal / side', 'p50 ms', 'p99 ms', 'bytes/resp', 'CPU us/req', ...(row.backend ? ['backend us/req'] : []), 'wrk CPU %'],
        row.sides.map((s) => [
          s.name,
          Math.round(rps(s.key)),
          ratio(zonal, rps(s.key)),
          med(s.key, (r) => r.latencyP50Ms),
          med(s.key, (r) => r.latencyP99Ms),
          round2(med(s.key, (r) => r.bytesPerResponse)),
          round2(med(s.key, (r) => r.cpuUsPerRequest)),
          ...(row.backend ? [round2(med(s.key, (r) => r.backendUsPerRequest))] : []),
          tenth(med(s.key, (r) => r.wrkCpu)),
        ]),
      );
      const out: Record<string, unknown> = {};
      for (const s of row.sides) out[s.key] = Math.round(rps(s.key));
      for (const s of row.sides.slice(1)) if (!s.key.startsWith('zonal')) out[`ratio_${s.key}`] = ratio(zonal, rps(s.key));
      if (hasSide(row, 'floor')) out.floor_ratio_bare_uws = ratio(rps('floor'), rps('bare_uws'));
      if (hasSide(row, 'floor_api')) out.floor_api_ratio_bare_uws = ratio(rps('floor_api'), rps('bare_uws'));
      if (hasSide(row, 'zonal_metrics_off')) out.metrics_overhead_pct = tenth(((rps('zonal_metrics_off') - zonal) / rps('zonal_metrics_off')) * 100);
      if (hasSide(row, 'zonal_no_limit')) out.limit_req_overhead_pct = tenth(((rps('zonal_no_limit') - zonal) / rps('zonal_no_limit')) * 100);
      if (hasSide(row, 'zonal_keepalive_off')) out.ratio_keepalive_off_nginx = ratio(rps('zonal_keepalive_off'), rps('nginx'));
      if (hasSide(row, 'zonal_no_log')) out.access_log_overhead_pct = tenth(((rps('zonal_no_log') - zonal) / rps('zonal_no_log')) * 100);
      if (hasSide(row, 'nginx_no_log')) out.nginx_access_log_overhead_pct = tenth(((rps('nginx_no_log') - rps('nginx')) / rps('nginx_no_log')) * 100);
      if (hasSide(row, 'zonal_plain')) out.miss_overhead_pct = tenth(((rps('zonal_plain') - zonal) / rps('zonal_plain')) * 100);
      if (hasSide(row, 'nginx_plain')) out.nginx_miss_overhead_pct = tenth(((rps('nginx_plain') - rps('nginx')) / rps('nginx_plain')) * 100);
      out.cpu_us_per_req = Object.fromEntries(row.sides.map((s) => [s.key, round2(med(s.key, (r) => r.cpuUsPerRequest))]));
      if (row.backend) out.backend_cpu_us_per_req = Object.fromEntries(row.sides.map((s) => [s.key, round2(med(s.key, (r) => r.backendUsPerRequest))]));
      json[row.name] = out;
    }
    const hello = rows.find((r) => r.name === 'return_200');
    if (hello)
      table(
        "First answer of each return 200 side and of the backend, on a connection of its own (the date header's value left out)",
        ['side', 'headers'],
        [...hello.sides.map((s) => [s.name, headerLine(first.get(s)!)]), ['backend nginx', headerLine(backendFirst)]],
      );
    table('Tools', ['what', 'value'], [
      ['wrk', `${wrkTool.command}: ${wrkTool.version}${wrkTool.installed ? ' (installed by this run)' : ''}`],
      ['nginx', `${nginx.command}: ${nginx.version}${nginx.installed ? ' (installed by this run)' : ''}`],
    ]);
    checkCounted("zonal's own counts, read through its admin listener after the load (answered: wrk's answers, warm-up included, and the first GET)", counts);
    if (tcpRows.length > 0) Object.assign(json, await streamRows(dir, nginx.command, tcpRows, seconds, rounds));
    if (!only || only.includes('start_time')) json.start_time = await startTimeRow(dir, nginx.command);
    console.log(JSON.stringify(json));
  });
}

const [mode, ...args] = process.argv.slice(2);
if (mode === '--uws') bareUws(Number(args[0]), Number(args[1]));
// The floor's module (the API, the engine's addon) is loaded only by its own child: the
// bare references stay bare.
else if (mode === '--floor') (await import('./floor.js')).floorServer(Number(args[0]), Number(args[1]), Number(args[2]));
else if (mode === '--floor-api') await (await import('./floor.js')).floorApiServer(Number(args[0]), Number(args[1]), Number(args[2]));
else if (mode === '--node-hello') nodeHello(Number(args[0]));
else if (mode === '--node-proxy') nodeProxy(Number(args[0]), Number(args[1]), args[2] === 'keepalive');
else await main();
