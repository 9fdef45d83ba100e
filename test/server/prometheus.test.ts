// A real Prometheus (Debian's prometheus package) scrapes bin/zonal's text format every
// second while traffic goes through a zonal proxy to a backend of known delay; then its
// HTTP API answers a rate() of requests and a histogram_quantile() of the peer's response
// time, and both must be there and plausible.
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, Zonal } from './zonal.js';

const DELAY_MS = 20;

if (spawnSync('prometheus', ['--version']).error) {
  t.test('prometheus is not installed (.ci/run installs Debian\'s prometheus package)', { skip: true }, () => {});
} else {
  const [site, admin, backendPort, promPort] = await freePorts(4);
  const backend: Server = createServer((req, res) => {
    req.resume();
    setTimeout(() => res.end('ok\n'), DELAY_MS);
  });
  await new Promise<void>((r) => backend.listen(backendPort, '127.0.0.1', r));
  const zonal = await Zonal.start({
    'zonal.conf': `
worker_processes 2;
http {
    status_zone_histogram on;
    upstream u {
        server 127.0.0.1:${backendPort};
    }
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        location / { proxy_pass http://u; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`,
  });

  const dir = mkdtempSync(join(tmpdir(), 'zonal-prometheus-'));
  // The README's scrape configuration, with a 1 s interval for the test.
  writeFileSync(
    join(dir, 'prometheus.yml'),
    `global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: zonal
    metrics_path: /status/
    params:
      format: [prometheus]
    static_configs:
      - targets: ['127.0.0.1:${admin}']
`,
  );
  let promLog = '';
  const prometheus: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  prometheus.stdout!.on('data', (d) => (promLog += d));
  prometheus.stderr!.on('data', (d) => (promLog += d));
  const promExit = new Promise<void>((resolve) => prometheus.once('exit', () => resolve()));

  // Traffic until the queries are answered: a few clients, each one request at a time.
  let driving = true;
  let sent = 0;
  const traffic = Promise.all(
    Array.from({ length: 4 }, async () => {
      const until = Date.now() + 90_000;
      while (driving && Date.now() < until) {
        const res = await fetch(`http://127.0.0.1:${site}/x`);
        await res.text();
        sent++;
      }
    }),
  );

  t.teardown(async () => {
    driving = false;
    await traffic;
    prometheus.kill('SIGTERM');
    const killed = setTimeout(() => prometheus.kill('SIGKILL'), 10_000);
    await promExit;
    clearTimeout(killed);
    await zonal.stop();
    await new Promise((r) => backend.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  /** A PromQL instant query's vector, through Prometheus's HTTP API. */
  async function query(promql: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
    const res = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await res.json()) as { status: string; data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> }; error?: string };
    if (body.status !== 'success') throw new Error(`${promql}: ${body.error}`);
    return body.data!.result;
  }

  /** Asks `promql` every 250 ms until `ok` holds of its answer, for at most `ms`. */
  async function until(promql: string, ok: (v: number) => boolean, ms = 45_000): Promise<number | undefined> {
    const deadline = Date.now() + ms;
    let last: number | undefined;
    for (let i = 0; i < 1000 && Date.now() < deadline; i++) {
      try {
        const r = await query(promql);
        last = r.length ? Number(r[0].value[1]) : undefined;
        if (last !== undefined && ok(last)) return last;
      } catch {
        // not up yet
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    return last;
  }

  t.test('Prometheus scrapes zonal, and PromQL over it gives plausible answers', async (t) => {
    const up = await until('up{job="zonal"}', (v) => v === 1);
    t.equal(up, 1, 'the target is up: the whole text format was scraped without error');
    if (up !== 1) t.comment(promLog);

    const rate = await until('sum(rate(zonal_http_upstreams_peers_selected_total{upstream="u"}[5s]))', (v) => v > 0);
    t.ok(rate !== undefined && rate > 0, `rate() of requests to the peer: ${rate} per second`);
    // Four clients, each waiting DELAY_MS per request: no more than 4 / 0.02 s.
    t.ok(rate !== undefined && rate <= 4 * (1000 / DELAY_MS) * 1.5, 'and no more than the clients can send');

    const p90 = await until(
      'histogram_quantile(0.9, sum by (le) (rate(zonal_http_upstreams_peers_histograms_response_time_seconds_bucket{upstream="u"}[5s])))',
      (v) => Number.isFinite(v),
    );
    t.ok(p90 !== undefined && p90 >= DELAY_MS / 1000 && p90 <= 1, `histogram_quantile(0.9) of the peer's response time: ${p90} s, not below the backend's ${DELAY_MS} ms`);

    const zone = await until('histogram_quantile(0.5, sum by (le) (rate(zonal_http_server_zones_histograms_response_time_seconds_bucket{zone="site"}[5s])))', (v) => Number.isFinite(v));
    t.ok(zone !== undefined && zone >= DELAY_MS / 1000 && zone <= 1, `the server zone's median: ${zone} s`);
    t.ok(sent > 0, `${sent} requests sent`);
  });
}
