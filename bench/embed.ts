// npm run bench -- embed [--rounds N] [--seconds S] [--warmup S] [--connections C]
//   [--interval MS] [--frameworks express,fastify]
// (by default 4 rounds of 3 s, 3 s of warm-up, 50 connections, a scrape every 100 ms, both
// frameworks: about 4 minutes): what metrics cost an app, zonal next to what users would
// pick instead. Express 5 and Fastify 5 apps of two node:cluster workers each (the apps
// are in bench/embed/: one file per variant, the lines that exist only for metrics marked
// `// metrics`), in four variants:
// - none: the app without metrics (express-none.ts, fastify-none.ts), the baseline;
// - zonal: serve() in the primary, the middleware or plugin in each worker;
// - prom-client: express-prom-bundle or fastify-metrics in each worker, prom-client's
//   AggregatorRegistry in the primary (its cluster mode) serving the summed metrics;
// - OpenTelemetry: the none app unchanged, behind a preload (--import) that sets up the
//   http and express / fastify instrumentations and a Prometheus exporter per worker.
//
// Each app runs as a child process for the whole of its framework's part, and wrk loads
// one at a time on 127.0.0.1 (GET /users/<id>, the id cycling over 1000 values by a wrk
// script, so route labels must come from the route, not the URL). First each metered app
// is scraped idle (every 20 ms for 1.5 s); then a warm-up round of each variant (scraped);
// then each round runs the four variants (these rounds give CPU and req/s), then the three
// metered ones again while this process scrapes their metrics every --interval ms (these
// give the scrape latency under load), each round starting one variant further on, so that
// no variant always follows the same other one. The scrapes: zonal's
// /status/?format=prometheus on the primary's API listener (and beside it, on its own
// connection, GET /status/connections: a few bytes from the same listener, the primary's
// wait for the CPU without the render), prom-client's aggregated /metrics on the primary,
// and OpenTelemetry's exporter on each worker's port (it has no cluster aggregation: each
// worker is a target of its own, scraped on its own cadence). A scrape's time is from the
// request written to the body's last byte, over a keep-alive connection, as Prometheus
// scrapes; p50 and p99 are over every scrape of the scraped rounds.
//
// CPU per request: user + system time of the app's whole process tree (the primary and
// both workers), read from /proc/<pid>/stat around each wrk run, over the requests wrk had
// answered. Ratios are taken round by round against the none round of the same round, and
// their median is shown: the machine's drift over the run falls on every variant alike.
// Targets (shown, not asserted): zonal at most 1.05 × the CPU of none and below both
// others in the same run; zonal's scrape p99 at most 5 ms under load.
//
// The metrics were on: after the load, every variant's own exposition must count at least
// the /users/<id> requests wrk had answered by it under its route's label (zonal's route
// zone /users/:id, express-prom-bundle's path /users/#val, fastify-metrics' route
// /users/:id, OpenTelemetry's http_route /users/:id summed over both workers), or the run
// fails. The glue-line counts (lines marked `// metrics` in each app, the code lines of
// OpenTelemetry's preload) are printed from the sources, with the lines each app differs
// from its none app as a check on the marking.
//
// Every wait is bounded in tries and time; every child is stopped with SIGTERM (SIGKILL
// after 10 s) when its framework's part ends, and sent SIGTERM when this process exits in
// any other way. wrk is Debian's package, installed with apt-get when missing and this
// runs as root. Never part of npm test.
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, get as httpGet } from 'node:http';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { broken, childPids, freePort, getOnce, HOST, ready, ROOT, runBench, start, wholeOption, type Child } from './processes.js';
import { fail, finish, median, nowNs, round2, table, type Cell } from './report.js';
import { wrk, wrkCommand, type WrkLoad } from './wrk.js';

const FRAMEWORKS = ['express', 'fastify'] as const;
type Framework = (typeof FRAMEWORKS)[number];
const VARIANTS = ['none', 'zonal', 'prom', 'otel'] as const;
type Variant = (typeof VARIANTS)[number];
const METERED = ['zonal', 'prom', 'otel'] as const satisfies readonly Variant[];
type Metered = (typeof METERED)[number];

const LABEL: Record<Variant, string> = { none: 'no metrics', zonal: 'zonal', prom: 'prom-client', otel: 'OpenTelemetry' };
const PROM_LIBRARY: Record<Framework, string> = { express: 'express-prom-bundle', fastify: 'fastify-metrics' };
/** IDs the wrk script cycles over: /users/0 ... /users/999. */
const IDS = 1000;
/** Scrapes of an idle app: every 20 ms for 1.5 s (the first 5 left out). */
const IDLE_INTERVAL_MS = 20;
const IDLE_SCRAPE_MS = 1500;
const EMBED = join(ROOT, 'dist', 'bench', 'embed');
const SOURCES = join(ROOT, 'bench', 'embed');

/** The file an app runs (none for OpenTelemetry, behind its preload). */
const appFile = (fw: Framework, v: Variant) => `${fw}-${v === 'otel' ? 'none' : v}`;
const preloadFile = (fw: Framework) => `otel-${fw}`;

/** How each variant's exposition counts the /users/<id> requests: the sample and a label
 * that names the route, not the URL. */
function routeSeries(fw: Framework, v: Metered): { name: string; label: string } {
  if (v === 'zonal') return { name: 'zonal_http_location_zones_requests_total', label: 'zone="/users/:id"' };
  if (v === 'otel') return { name: 'http_server_request_duration_count', label: 'http_route="/users/:id"' };
  return fw === 'express'
    ? { name: 'http_request_duration_seconds_count', label: 'path="/users/#val"' }
    : { name: 'http_request_duration_seconds_count', label: 'route="/users/:id"' };
}

// ---- Options -------------------------------------------------------------------------------

function options() {
  const args = process.argv.slice(2);
  const i = args.indexOf('--frameworks');
  let frameworks: Framework[] = [...FRAMEWORKS];
  if (i >= 0) {
    const asked = (args[i + 1] ?? '').split(',').filter(Boolean);
    if (asked.length === 0 || asked.some((f) => !(FRAMEWORKS as readonly string[]).includes(f))) fail(`--frameworks takes a list of ${FRAMEWORKS.join(', ')}, not "${args[i + 1]}"`);
    frameworks = asked as Framework[];
  }
  return {
    frameworks,
    rounds: wholeOption('--rounds', 4),
    seconds: wholeOption('--seconds', 3),
    warmupSeconds: wholeOption('--warmup', 3),
    connections: wholeOption('--connections', 50, 1000),
    intervalMs: wholeOption('--interval', 100, 10_000),
  };
}

// ---- Apps ----------------------------------------------------------------------------------

interface App {
  variant: Variant;
  child: Child;
  port: number;
  /** The primary and its two workers. */
  pids: number[];
  /** What a scrape reads: one URL, or one per worker (OpenTelemetry). */
  scrapeUrls: string[];
  /** zonal's: a path of the same API whose answer is one small object, scraped beside the
   * exposition to show what a request to the primary's listener takes under load. */
  floorUrl?: string;
  /** Requests wrk had answered by it, warm-up and scraped rounds included. */
  answered: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** GET on a fresh connection until it answers 200 (at most 100 tries, 2 s each at most). */
async function answers200(what: string, url: string): Promise<string> {
  let last = '';
  for (let i = 0; i < 100; i++) {
    try {
      const u = new URL(url);
      const a = await getOnce(Number(u.port), u.pathname + u.search);
      if (a.status === 200) return a.body;
      last = `${a.status}: ${a.body.slice(0, 200)}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await sleep(100);
  }
  broken(`${what}: ${url} never answered 200 (last: ${last})`);
}

async function startApp(fw: Framework, variant: Variant): Promise<App> {
  const port = await freePort();
  // OpenTelemetry's exporters listen on metricsPort + worker id (1, 2).
  const metricsPort = await freePort();
  const script = join(EMBED, `${appFile(fw, variant)}.js`);
  const pre = variant === 'otel' ? ['--import', pathToFileURL(join(EMBED, `${preloadFile(fw)}.js`)).href] : [];
  const child = start(`${fw} ${LABEL[variant]}`, process.execPath, [...pre, script, String(port), String(metricsPort)]);
  await ready(child, port);
  const pid = child.process.pid!;
  let pids: number[] = [];
  for (let i = 0; i < 100 && pids.length !== 3; i++) {
    pids = [pid, ...childPids(pid)];
    if (pids.length !== 3) await sleep(100);
  }
  if (pids.length !== 3) broken(`${fw} ${LABEL[variant]} runs ${pids.length} processes, not a primary and two workers`);
  const scrapeUrls =
    variant === 'zonal'
      ? [`http://${HOST}:${metricsPort}/status/?format=prometheus`]
      : variant === 'prom'
        ? [`http://${HOST}:${metricsPort}/metrics`]
        : variant === 'otel'
          ? [1, 2].map((id) => `http://${HOST}:${metricsPort + id}/metrics`)
          : [];
  for (const url of scrapeUrls) await answers200(`${fw} ${LABEL[variant]}`, url);
  const floorUrl = variant === 'zonal' ? `http://${HOST}:${metricsPort}/status/connections` : undefined;
  return { variant, child, port, pids, scrapeUrls, floorUrl, answered: 0 };
}

// ---- Scraping ------------------------------------------------------------------------------

interface Scrapes {
  ms: number[];
  bytes: number[];
  errors: string[];
}

/** Scrapes each of `urls` every `intervalMs` (each on its own keep-alive connection and
 * cadence) until `stop()` is called; resolves when the last scrape in flight is done. */
function scraper(urls: readonly string[], intervalMs: number, into: Scrapes): { stop: () => Promise<void> } {
  let stopping = false;
  const loops = urls.map(async (url) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      while (!stopping) {
        const t0 = nowNs();
        try {
          const { status, bytes } = await new Promise<{ status: number; bytes: number }>((resolve, reject) => {
            const req = httpGet(url, { agent, timeout: 10_000 }, (res) => {
              let bytes = 0;
              res.on('data', (c: Buffer) => (bytes += c.length));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
              res.on('error', reject);
            });
            req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
            req.on('error', reject);
          });
          const ms = (nowNs() - t0) / 1e6;
          if (status !== 200) into.errors.push(`${url}: ${status}`);
          else {
            into.ms.push(ms);
            into.bytes.push(bytes);
          }
        } catch (e) {
          into.errors.push(`${url}: ${(e as Error).message}`);
        }
        const wait = intervalMs - (nowNs() - t0) / 1e6;
        if (wait > 0 && !stopping) await sleep(wait);
      }
    } finally {
      agent.destroy();
    }
  });
  return {
    stop: async () => {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

// ---- Rounds --------------------------------------------------------------------------------

interface Round {
  variant: Variant;
  round: number;
  scraped: boolean;
  rps: number;
  requests: number;
  cpuUsPerRequest: number;
  /** The app's CPU, % of one core. */
  appCpu: number;
  wrkCpu: number;
  /** The machine's CPU that neither the app, wrk nor this process used: other processes
   * (busy), and idle; % of one core. */
  otherCpu: number;
  idleCpu: number;
  latencyP99Ms: number;
}

/** The machine's busy and idle CPU seconds so far (/proc/stat's first line: user, nice,
 * system, idle, iowait, irq, softirq, steal). */
function machineCpu(): { busy: number; idle: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
  const idle = f[3] + f[4];
  return { busy: (f.reduce((a, b) => a + b, 0) - idle) / 100, idle: idle / 100 };
}

// ---- Expositions and glue lines ------------------------------------------------------------

/** The sum of the samples `name{...label...} value` of a Prometheus text exposition. */
function sumSamples(text: string, name: string, label: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) || !line.includes(label)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

const codeLines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('//'));

/** Lines of `variant` not in `base` (trimmed code lines, as a multiset). */
function linesAdded(base: string, variant: string): number {
  const left = new Map<string, number>();
  for (const l of codeLines(base)) left.set(l, (left.get(l) ?? 0) + 1);
  let added = 0;
  for (const l of codeLines(variant)) {
    const n = left.get(l) ?? 0;
    if (n > 0) left.set(l, n - 1);
    else added++;
  }
  return added;
}

interface Glue {
  marked: number;
  changedFromNone: number;
  preload: number;
}

function glue(fw: Framework, v: Variant): Glue {
  const source = (name: string) => readFileSync(join(SOURCES, `${name}.ts`), 'utf8');
  const none = source(appFile(fw, 'none'));
  const app = source(appFile(fw, v));
  return {
    marked: app.split('\n').filter((l) => /\/\/ metrics$/.test(l)).length,
    changedFromNone: linesAdded(none, app),
    preload: v === 'otel' ? codeLines(source(preloadFile(fw))).length : 0,
  };
}

function version(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

// ---- Run -----------------------------------------------------------------------------------

async function runFramework(fw: Framework, wrkPath: string, script: string, opts: ReturnType<typeof options>, results: Record<string, number>): Promise<void> {
  const apps = {} as Record<Variant, App>;
  // One after the other: each start has the machine to itself.
  for (const v of VARIANTS) apps[v] = await startApp(fw, v);
  const load = (seconds: number): WrkLoad => ({ threads: 1, connections: opts.connections, seconds });
  const scrapes = Object.fromEntries(METERED.map((v) => [v, { ms: [], bytes: [], errors: [] } as Scrapes])) as Record<Metered, Scrapes>;
  const floor: Scrapes = { ms: [], bytes: [], errors: [] };

  const runRound = async (v: Variant, round: number, seconds: number, scrape: boolean): Promise<Round> => {
    const app = apps[v];
    const into: Scrapes = { ms: [], bytes: [], errors: [] };
    const intoFloor: Scrapes = { ms: [], bytes: [], errors: [] };
    const scraping = scrape ? [scraper(app.scrapeUrls, opts.intervalMs, into), ...(app.floorUrl ? [scraper([app.floorUrl], opts.intervalMs, intoFloor)] : [])] : [];
    let run;
    const machineBefore = machineCpu();
    const ownBefore = process.cpuUsage();
    try {
      run = await wrk(wrkPath, `${fw} ${LABEL[v]}`, `http://${HOST}:${app.port}/users/0`, load(seconds), [app.pids], ['-s', script]);
    } finally {
      await Promise.all(scraping.map((s) => s.stop()));
    }
    if (scrape && round > 0) {
      for (const [from, to] of [[into, scrapes[v as Metered]], [intoFloor, floor]] as const) {
        to.ms.push(...from.ms);
        to.bytes.push(...from.bytes);
        to.errors.push(...from.errors);
      }
    }
    const machineAfter = machineCpu();
    const own = process.cpuUsage(ownBefore);
    app.answered += run.measured.requests;
    const [cpu] = run.cpu;
    const busy = machineAfter.busy - machineBefore.busy;
    const other = busy - cpu - (run.measured.wrkCpu / 100) * run.wall - (own.user + own.system) / 1e6;
    return {
      variant: v,
      round,
      scraped: scrape,
      rps: run.measured.rps,
      requests: run.measured.requests,
      cpuUsPerRequest: (cpu * 1e6) / run.measured.requests,
      appCpu: (cpu / run.wall) * 100,
      wrkCpu: run.measured.wrkCpu,
      otherCpu: Math.max(0, (other / run.wall) * 100),
      idleCpu: ((machineAfter.idle - machineBefore.idle) / run.wall) * 100,
      latencyP99Ms: run.measured.latencyP99Ms,
    };
  };

  // Scrapes of the idle apps, before any load: what a scrape costs when nothing competes
  // for the CPU (the first ones warm the path).
  const idle = {} as Record<Metered, number[]>;
  for (const v of METERED) {
    const into: Scrapes = { ms: [], bytes: [], errors: [] };
    const scraping = scraper(apps[v].scrapeUrls, IDLE_INTERVAL_MS, into);
    await sleep(IDLE_SCRAPE_MS);
    await scraping.stop();
    if (into.errors.length) broken(`${fw} ${LABEL[v]}: idle scrapes failed: ${into.errors.slice(0, 3).join('; ')}`);
    idle[v] = into.ms.slice(5);
  }

  // Warm-up: every variant loaded, and the metered ones scraped (their scrape paths warm).
  for (const v of VARIANTS) await runRound(v, 0, opts.warmupSeconds, v !== 'none');
  // Each round starts one variant further on (none, zonal, prom, otel; then zonal, prom,
  // otel, none; ...), so that no variant always runs right after the same other one.
  const rotated = <T>(list: readonly T[], by: number) => list.map((_, i) => list[(i + by) % list.length]);
  const rounds: Round[] = [];
  for (let r = 1; r <= opts.rounds; r++) {
    for (const v of rotated(VARIANTS, r - 1)) rounds.push(await runRound(v, r, opts.seconds, false));
    for (const v of rotated(METERED, r - 1)) rounds.push(await runRound(v, r, opts.seconds, true));
  }

  // The metrics were on: each variant counted at least what wrk had answered by it, under
  // its route's label.
  const checks: Cell[][] = [];
  for (const v of METERED) {
    const { name, label } = routeSeries(fw, v);
    let counted = 0;
    for (const url of apps[v].scrapeUrls) counted += sumSamples(await answers200(`${fw} ${LABEL[v]}`, url), name, label);
    checks.push([LABEL[v], `${name}{${label}}`, apps[v].answered, counted]);
    if (counted < apps[v].answered) broken(`${fw} ${LABEL[v]} counted ${counted} requests under ${name}{${label}}, fewer than the ${apps[v].answered} wrk had answered: the metrics were not on`);
  }
  await Promise.all(Object.values(apps).map((a) => stopApp(a.child)));

  // Figures: each timed round against the none round of the same round.
  const of = (v: Variant, scraped: boolean) => rounds.filter((r) => r.variant === v && r.scraped === scraped);
  const none = of('none', false);
  const paired = (v: Variant, scraped: boolean, pick: (r: Round) => number) => median(of(v, scraped).map((r) => pick(r) / pick(none[r.round - 1])));
  const rows: Cell[][] = [];
  for (const v of VARIANTS) {
    const timed = of(v, false);
    const s = v === 'none' ? undefined : scrapes[v];
    const cpuRatio = paired(v, false, (r) => r.cpuUsPerRequest);
    const rpsRatio = paired(v, false, (r) => r.rps);
    const cpuRatioScraped = v === 'none' ? NaN : paired(v, true, (r) => r.cpuUsPerRequest);
    const p50 = s ? percentile(s.ms, 50) : NaN;
    const p99 = s ? percentile(s.ms, 99) : NaN;
    const dash = (x: number, d = 2) => (Number.isNaN(x) ? '-' : Math.round(x * 10 ** d) / 10 ** d);
    rows.push([
      LABEL[v] + (v === 'prom' ? ` (${PROM_LIBRARY[fw]})` : ''),
      dash(cpuRatio),
      dash(rpsRatio),
      dash(p50),
      dash(p99),
      round2(median(timed.map((r) => r.cpuUsPerRequest))),
      Math.round(median(timed.map((r) => r.rps))),
      dash(cpuRatioScraped),
      v === 'none' ? '-' : round2(median(idle[v])),
      s ? s.ms.length : '-',
      s ? Math.round(median(s.bytes)) : '-',
    ]);
    const key = `${fw}_${v}`;
    results[`${key}_cpu_ratio`] = cpuRatio;
    results[`${key}_rps_ratio`] = rpsRatio;
    results[`${key}_cpu_us_per_req`] = median(timed.map((r) => r.cpuUsPerRequest));
    results[`${key}_rps`] = Math.round(median(timed.map((r) => r.rps)));
    if (s) {
      results[`${key}_scrape_p50_ms`] = p50;
      results[`${key}_scrape_p99_ms`] = p99;
      results[`${key}_scrape_errors`] = s.errors.length;
      results[`${key}_idle_scrape_p50_ms`] = median(idle[v as Metered]);
    }
  }
  table(
    `${fw === 'express' ? 'Express 5' : 'Fastify 5'}, 2 workers: ratios to no metrics (median of per-round ratios), scrape latency under load (pooled over the scraped rounds)`,
    ['variant', 'CPU/req ratio', 'req/s ratio', 'scrape p50 ms', 'scrape p99 ms', 'CPU us/req', 'req/s', 'CPU ratio, scraped', 'idle scrape p50 ms', 'scrapes', 'scrape bytes'],
    rows,
  );
  table(
    `${fw}: every round (CPU in % of one core: the app's primary and workers, wrk, the rest of the machine's busy time, and its idle time, of ${cpus().length * 100} %)`,
    ['round', 'variant', 'scraped', 'req/s', 'CPU us/req', 'app CPU %', 'wrk CPU %', 'others %', 'idle %', 'wrk p99 ms'],
    rounds.map((r) => [r.round, LABEL[r.variant], r.scraped ? 'yes' : 'no', Math.round(r.rps), round2(r.cpuUsPerRequest), Math.round(r.appCpu), Math.round(r.wrkCpu), Math.round(r.otherCpu), Math.round(r.idleCpu), round2(r.latencyP99Ms)]),
  );
  if (floor.ms.length) {
    results[`${fw}_zonal_floor_p50_ms`] = percentile(floor.ms, 50);
    results[`${fw}_zonal_floor_p99_ms`] = percentile(floor.ms, 99);
    table(
      `${fw}: zonal's exposition and, scraped beside it in the same rounds, GET /status/connections on the same listener (a few bytes: the primary's wait for the CPU, without the render)`,
      ['path', 'p50 ms', 'p99 ms', 'scrapes', 'bytes'],
      [
        ['/status/?format=prometheus', round2(percentile(scrapes.zonal.ms, 50)), round2(percentile(scrapes.zonal.ms, 99)), scrapes.zonal.ms.length, Math.round(median(scrapes.zonal.bytes))],
        ['/status/connections', round2(percentile(floor.ms, 50)), round2(percentile(floor.ms, 99)), floor.ms.length, Math.round(median(floor.bytes))],
      ],
    );
  }
  table(`${fw}: the metrics were on (counted after the load, at least what wrk had answered)`, ['variant', 'series', 'answered', 'counted'], checks);
  if (floor.errors.length) table(`${fw} zonal /status/connections: failed scrapes`, ['error'], floor.errors.slice(0, 10).map((e) => [e]));
  for (const v of METERED) if (scrapes[v].errors.length) table(`${fw} ${LABEL[v]}: failed scrapes`, ['error'], scrapes[v].errors.slice(0, 10).map((e) => [e]));

  const zonalCpu = results[`${fw}_zonal_cpu_ratio`];
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
  table(`${fw}: targets (shown, not asserted)`, ['target', 'measured', 'status'], [
    ['zonal CPU/req <= 1.05 x no metrics', `${round2(zonalCpu)}`, met(zonalCpu <= 1.05)],
    ['zonal CPU/req below prom-client', `${round2(zonalCpu)} vs ${round2(results[`${fw}_prom_cpu_ratio`])}`, met(zonalCpu < results[`${fw}_prom_cpu_ratio`])],
    ['zonal CPU/req below OpenTelemetry', `${round2(zonalCpu)} vs ${round2(results[`${fw}_otel_cpu_ratio`])}`, met(zonalCpu < results[`${fw}_otel_cpu_ratio`])],
    ['zonal scrape p99 <= 5 ms under load', `${round2(results[`${fw}_zonal_scrape_p99_ms`])} ms`, met(results[`${fw}_zonal_scrape_p99_ms`] <= 5)],
  ]);
}

/** SIGTERM to the app's primary (which ends its workers), SIGKILL after 10 s. */
function stopApp(child: Child): Promise<void> {
  const proc = child.process;
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    proc.kill('SIGTERM');
  });
}

async function main(): Promise<void> {
  const opts = options();
  const found = wrkCommand();
  if ('reason' in found) fail(`wrk is needed: ${found.reason}`);
  await runBench('embed', async (dir) => {
    const script = join(dir, 'users.lua');
    // Each wrk thread cycles its own counter over the ids.
    writeFileSync(script, `local i = 0\nrequest = function()\n  i = (i + 1) % ${IDS}\n  return wrk.format("GET", "/users/" .. i)\nend\n`);
    const cpu = cpus();
    table('Machine and versions', ['what', 'value'], [
      ['date', new Date().toISOString()],
      ['CPU', `${cpu.length} × ${cpu[0]?.model ?? '?'}`],
      ['memory', `${Math.round(totalmem() / 2 ** 30)} GiB`],
      ['kernel', release()],
      ['node', process.version],
      ['wrk', found.version],
      ['load', `wrk -t1 -c${opts.connections}, GET /users/<0..${IDS - 1}>; ${opts.rounds} rounds of ${opts.seconds} s per variant (+ as many scraped), ${opts.warmupSeconds} s warm-up; a scrape every ${opts.intervalMs} ms`],
      ...['express', 'fastify', 'prom-client', 'express-prom-bundle', 'fastify-metrics', '@opentelemetry/sdk-metrics', '@opentelemetry/exporter-prometheus', '@opentelemetry/instrumentation-http', '@opentelemetry/instrumentation-express', '@fastify/otel'].map((p) => [p, version(p)]),
    ]);
    const results: Record<string, number> = {};
    for (const fw of opts.frameworks) await runFramework(fw, found.command, script, opts, results);

    const glueRows: Cell[][] = [];
    for (const fw of opts.frameworks)
      for (const v of METERED) {
        const g = glue(fw, v);
        glueRows.push([fw, LABEL[v], g.marked, g.changedFromNone, g.preload, g.marked + g.preload]);
        results[`${fw}_${v}_glue_lines`] = g.marked + g.preload;
      }
    table(
      "Glue lines: lines of the app that exist only for metrics (marked `// metrics`; the lines it differs from its none app, as a check), and the code lines of OpenTelemetry's preload",
      ['framework', 'variant', 'app lines marked', 'app lines added', 'preload lines', 'total'],
      glueRows,
    );
    finish('embed', { ...results, rounds: opts.rounds, round_seconds: opts.seconds });
  });
}

await main();
