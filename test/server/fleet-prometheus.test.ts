// The README's fleet example, run: three bin/zonal instances, each proxying to one shared
// backend through two upstreams with a zone, and one real Prometheus (Debian's prometheus
// package) scraping all three with the README's scrape configuration (its targets moved to
// the instances' admin ports, a 1 s interval added). Known request counts go through each
// instance; then the README's PromQL, asked through Prometheus's HTTP API, must sum them
// per upstream across the fleet exactly. Where etcd is installed the instances share their
// upstreams through a 3-member cluster (`config_store`), and docs/fleet.md's queries of
// /status/config_store must say that all are connected and, after a write on one, at one
// revision.
import t from 'tap';
import { createServer, type Server } from 'node:http';
import { ETCD_MISSING, EtcdCluster } from '../helpers/etcd.js';
import { blocksOf } from '../helpers/markdown.js';
import { Prometheus, prometheusInstalled, type Sample } from '../helpers/prometheus.js';
import { freePorts, Zonal } from './zonal.js';

const ME = 'test/server/fleet-prometheus.test.ts';
/** Requests each instance proxies, per upstream: different everywhere, so that a sum that
 * missed an instance or counted one twice cannot come out right. */
const SENT: Record<string, number[]> = { api: [30, 45, 60], web: [7, 14, 21] };

// The README's blocks that name this test: its scrape configuration and its queries.
const mine = blocksOf('README.md').filter((b) => b.marker?.includes(ME));
const scrape = mine.find((b) => b.lang === 'yaml')?.text;
/** The queries of a promql block, one a line, without its comments. */
const queriesOf = (text = '') =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
const queries = queriesOf(mine.find((b) => b.lang === 'promql')?.text);
// docs/fleet.md's queries of the configuration store.
const storeQueries = queriesOf(blocksOf('docs/fleet.md').find((b) => b.lang === 'promql' && b.marker?.includes(ME))?.text);

t.test("the README's fleet example is there", async (t) => {
  t.ok(scrape, `README.md has a yaml block marked as run by ${ME}`);
  t.equal(queries.length, 2, 'and a promql block of two queries: the sum per upstream, and its rate');
  t.equal(storeQueries.length, 2, 'docs/fleet.md has a promql block of two queries of the configuration store');
});

if (!prometheusInstalled()) {
  t.test('prometheus is not installed (.ci/run installs Debian\'s prometheus package)', { skip: true }, () => {});
} else if (scrape && queries.length === 2) {
  const ports = await freePorts(8);
  const [backendPort, promPort] = ports;
  const sites = ports.slice(2, 5);
  const admins = ports.slice(5, 8);
  const backend: Server = createServer((req, res) => {
    req.resume();
    res.end('ok\n');
  });
  await new Promise<void>((r) => backend.listen(backendPort, '127.0.0.1', r));
  const etcd = ETCD_MISSING ? undefined : await EtcdCluster.start(3);

  const fleet = await Promise.all(
    sites.map((site, i) =>
      Zonal.start({
        'zonal.conf': `
worker_processes 2;
${etcd ? `config_store etcd://${etcd.endpoints}/zonal-fleet;` : ''}
http {
    upstream api {
        zone api 64k;
        server 127.0.0.1:${backendPort};
    }
    upstream web {
        zone web 64k;
        server 127.0.0.1:${backendPort};
    }
    server {
        listen 127.0.0.1:${site};
        location /api/ { proxy_pass http://api; }
        location / { proxy_pass http://web; }
    }
    server {
        listen 127.0.0.1:${admins[i]} admin;
        location / { api /; }
    }
}
`,
      }),
    ),
  );

  // The README names its instances zonal-a:8081, zonal-b:8081...: here, the admin ports.
  const targets = [...scrape.matchAll(/'([\w.-]+:\d+)'/g)].map((m) => m[1]);
  let config = scrape;
  targets.forEach((target, i) => (config = config.replace(`'${target}'`, `'127.0.0.1:${admins[i]}'`)));
  const prometheus = Prometheus.start(`global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n${config}\n`, promPort);

  t.teardown(async () => {
    await prometheus.stop();
    await Promise.all(fleet.map((z) => z.stop()));
    await etcd?.close();
    await new Promise((r) => backend.close(r));
  });

  /** The vector as upstream -> value. */
  const byUpstream = (v: Sample[]) => Object.fromEntries(v.map((s) => [s.metric.upstream, Number(s.value[1])]));
  const total = (upstream: string) => SENT[upstream].reduce((a, b) => a + b, 0);

  t.test('one Prometheus sums the three instances per upstream', async (t) => {
    t.equal(targets.length, 3, `the README's scrape configuration has three targets: ${targets.join(', ')}`);
    const up = await prometheus.untilVector('up', (v) => v.length === 3 && v.every((s) => s.value[1] === '1'));
    t.equal(up.filter((s) => s.value[1] === '1').length, 3, 'all three targets are up: each whole text format scraped without error');
    if (up.length !== 3) t.comment(prometheus.log);

    // Each instance's requests, a few clients at a time, every answer checked.
    let failed = 0;
    await Promise.all(
      sites.flatMap((site, i) =>
        Object.entries(SENT).map(async ([upstream, counts]) => {
          const path = upstream === 'api' ? '/api/x' : '/x';
          for (let n = 0; n < counts[i]; n++) {
            const res = await fetch(`http://127.0.0.1:${site}${path}`);
            if (res.status !== 200 || (await res.text()) !== 'ok\n') failed++;
          }
        }),
      ),
    );
    t.equal(failed, 0, 'every proxied request was answered 200 by the backend');

    const [sum, rate] = queries;
    const want = { api: total('api'), web: total('web') };
    const got = await prometheus.untilVector(sum, (v) => JSON.stringify(byUpstream(v)) === JSON.stringify(want));
    t.same(byUpstream(got), want, `${sum}: the requests sent to all three instances, per upstream`);
    // What makes it a fleet's sum: each instance's own part is in it.
    const parts = await prometheus.query('sum by (instance) (zonal_http_upstreams_peers_selected_total)');
    t.same(
      parts.map((s) => Number(s.value[1])).sort((a, b) => a - b),
      sites.map((_, i) => SENT.api[i] + SENT.web[i]),
      'three instances contribute, each with its own count',
    );

    const rates = await prometheus.untilVector(rate, (v) => v.length === 2 && v.every((s) => Number(s.value[1]) > 0));
    t.same(Object.keys(byUpstream(rates)).sort(), ['api', 'web'], `${rate}: a rate for each upstream`);
    t.ok(
      rates.every((s) => Number(s.value[1]) > 0),
      `and each is positive: ${rates.map((s) => `${s.metric.upstream} ${Number(s.value[1]).toFixed(3)}/s`).join(', ')}`,
    );
  });

  t.test("the configuration store, seen across the fleet", { skip: ETCD_MISSING }, async (t) => {
    const [down, apart] = storeQueries;
    const connected = await prometheus.until('count(zonal_config_store_connected == 1)', (v) => v === 3);
    t.equal(connected, 3, 'all three instances export zonal_config_store_connected 1');
    t.same(await prometheus.query(down), [], `${down}: no instance`);

    // A write on the first instance: the others apply it from their watch.
    const res = await fetch(`http://127.0.0.1:${admins[0]}/config/http/upstreams/api/servers/127.0.0.1:${backendPort}`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ weight: 3 }),
    });
    await res.text();
    t.equal(res.status, 200, 'a PATCH on one instance is committed');
    const revision = Number(/^"r(\d+)"$/.exec(res.headers.get('etag') ?? '')?.[1]);
    t.ok(revision > 0, `its ETag names the revision: ${res.headers.get('etag')}`);
    const lowest = await prometheus.until('min(zonal_config_store_revision)', (v) => v >= revision);
    t.ok(lowest !== undefined && lowest >= revision, `every instance has applied revision ${revision} (the lowest: ${lowest})`);
    t.equal(await prometheus.until(apart, (v) => v === 0), 0, `${apart}: 0, all at one revision`);
  });
}
