// A real Prometheus (Debian's prometheus package) scrapes bin/zonal's text format every
// second while traffic goes through a zonal proxy to a backend of known delay; then its
// HTTP API answers a rate() of requests and a histogram_quantile() of the peer's response
// time, and both must be there and plausible.
import t from 'tap';
import { createServer, type Server } from 'node:http';
import { Prometheus, prometheusInstalled } from '../helpers/prometheus.js';
import { freePorts, Zonal } from './zonal.js';

const DELAY_MS = 20;

if (!prometheusInstalled()) {
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

  // docs/http-api.md's scrape configuration, with a 1 s interval for the test.
  const prometheus = Prometheus.start(
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
    promPort,
  );

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
    await prometheus.stop();
    await zonal.stop();
    await new Promise((r) => backend.close(r));
  });

  t.test('Prometheus scrapes zonal, and PromQL over it gives plausible answers', async (t) => {
    const up = await prometheus.until('up{job="zonal"}', (v) => v === 1);
    t.equal(up, 1, 'the target is up: the whole text format was scraped without error');
    if (up !== 1) t.comment(prometheus.log);

    const rate = await prometheus.until('sum(rate(zonal_http_upstreams_peers_selected_total{upstream="u"}[5s]))', (v) => v > 0);
    t.ok(rate !== undefined && rate > 0, `rate() of requests to the peer: ${rate} per second`);
    // Four clients, each waiting DELAY_MS per request: no more than 4 / 0.02 s.
    t.ok(rate !== undefined && rate <= 4 * (1000 / DELAY_MS) * 1.5, 'and no more than the clients can send');

    const p90 = await prometheus.until(
      'histogram_quantile(0.9, sum by (le) (rate(zonal_http_upstreams_peers_histograms_response_time_seconds_bucket{upstream="u"}[5s])))',
      (v) => Number.isFinite(v),
    );
    t.ok(p90 !== undefined && p90 >= DELAY_MS / 1000 && p90 <= 1, `histogram_quantile(0.9) of the peer's response time: ${p90} s, not below the backend's ${DELAY_MS} ms`);

    const zone = await prometheus.until('histogram_quantile(0.5, sum by (le) (rate(zonal_http_server_zones_histograms_response_time_seconds_bucket{zone="site"}[5s])))', (v) => Number.isFinite(v));
    t.ok(zone !== undefined && zone >= DELAY_MS / 1000 && zone <= 1, `the server zone's median: ${zone} s`);
    t.ok(sent > 0, `${sent} requests sent`);
  });
}
