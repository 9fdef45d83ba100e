// The dashboard (issue 18) in a real headless Chromium: the page an admin listener
// serves loads with no console error, shows the upstream's peers live over the
// WebSocket, edits a peer's weight through /config with If-Match, and shows a 412
// conflict when someone else changed the peer first.
import t from 'tap';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { checkConfig, eventually, freePorts, getJson, Zonal } from './zonal.js';

const CHROMIUM = '/usr/bin/chromium';
const absent = !existsSync(CHROMIUM) && `${CHROMIUM} is not installed (Debian's chromium package; .ci/run installs it): the dashboard is not tested in a browser`;
/** Where the screenshots go: the test run's own output, not the sources. */
const OUTPUT = fileURLToPath(new URL('../../.tap/dashboard/', import.meta.url));

function configText(p: { site: number; one: number; two: number; admin: number }): string {
  return `
worker_processes 2;
http {
    # zonal's histograms, for the percentiles the page shows.
    status_zone_histogram on;
    limit_req_zone $binary_remote_addr zone=perip:1m rate=1000r/s;
    upstream backend {
        zone backend 256k;
        server 127.0.0.1:${p.one} weight=2;
        server 127.0.0.1:${p.two} max_conns=50;
    }
    server {
        listen 127.0.0.1:${p.site};
        status_zone site;
        location /app/ {
            proxy_pass http://backend;
            status_zone app;
            limit_req zone=perip burst=100 nodelay;
        }
    }
    server { listen 127.0.0.1:${p.one}; location / { return 200 "one\\n"; } }
    server { listen 127.0.0.1:${p.two}; location / { return 200 "two\\n"; } }
    server {
        listen 127.0.0.1:${p.admin} admin;
        location / { api /; }
        location /dashboard/ { dashboard; }
    }
}
`;
}

t.test('dashboard: configuration checks', async (t) => {
  const [admin] = await freePorts(1);
  const wrong: Array<[string, RegExp]> = [
    [`location /d/ { dashboard status; }`, /invalid API prefix "status" in "dashboard" directive/],
    [`location /d/ { dashboard /api; }`, /invalid API prefix "\/api"/],
    [`location /d/ { dashboard / /x/; }`, /invalid number of arguments in "dashboard" directive/],
    [`location /d/ { dashboard; api /; }`, /"dashboard" and "api" in one location/],
    [`dashboard;`, /"dashboard" directive is not allowed here/],
  ];
  for (const [block, error] of wrong) {
    const r = await checkConfig(`http { server { listen 127.0.0.1:${admin} admin; ${block} } }\n`);
    t.not(r.code, 0, `${block}: refused`);
    t.match(r.err, error, block);
    t.match(r.err, /zonal\.conf:1/, 'names the file and line');
  }
});

t.test('dashboard: served with a strict policy, and the API prefix given to it', async (t) => {
  const [site, admin] = await freePorts(2);
  const z = await Zonal.start({
    'zonal.conf': `http { server { listen 127.0.0.1:${site}; location /api/ { api /; } location /board/ { dashboard /api/; } }
                        server { listen 127.0.0.1:${admin} admin; location /dashboard/ { dashboard; } } }`,
  });
  t.teardown(() => z.stop());
  for (const [port, path, api] of [
    [admin, '/dashboard/', '/'],
    [site, '/board/', '/api/'],
  ] as const) {
    const r = await fetch(`http://127.0.0.1:${port}${path}`);
    t.equal(r.status, 200, `${port}${path}`);
    t.equal(r.headers.get('content-type'), 'text/html; charset=utf-8');
    const csp = r.headers.get('content-security-policy') ?? '';
    t.match(csp, /default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+'; style-src 'sha256-/, 'only its own inline script and style');
    t.match(csp, /connect-src 'self'/);
    t.match(csp, /frame-ancestors 'none'/);
    const html = await r.text();
    t.match(html, `<meta name="zonal-api" content="${api}">`);
    t.match(html, `<meta name="zonal-push" content="${port === admin ? 'websocket' : 'poll'}">`, 'live over a WebSocket only where the API pushes');
    t.notMatch(html, /(src|href)="https?:/, 'nothing from another site');
    const head = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'HEAD' });
    t.equal(head.headers.get('content-length'), String(Buffer.byteLength(html)), 'HEAD: the length of the page');
    const post = await getJson(`http://127.0.0.1:${port}${path}`, { method: 'POST' });
    t.equal(post.status, 405);
    t.equal(post.body.error, 'MethodNotAllowed');
  }
});

t.test('dashboard in Chromium: live peers, an edit through /config, a 412 conflict shown', { skip: absent }, async (t) => {
  const [site, one, two, admin] = await freePorts(4);
  const z = await Zonal.start({ 'zonal.conf': configText({ site, one, two, admin }) });
  t.teardown(() => z.stop());
  const traffic = async (n: number) => {
    for (let i = 0; i < n; i++) await (await fetch(`http://127.0.0.1:${site}/app/x`)).text();
  };
  await traffic(6);

  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  const page: Page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
  const external: string[] = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(`http://127.0.0.1:${admin}/`) && !r.url().startsWith(`ws://127.0.0.1:${admin}/`) && !r.url().startsWith('data:')) external.push(r.url());
  });

  const response = await page.goto(`http://127.0.0.1:${admin}/dashboard/`);
  t.equal(response?.status(), 200);
  const peer = (port: number) => page.locator(`tr[data-peer="backend/127.0.0.1:${port}"]`);
  await peer(one).waitFor({ timeout: 10_000 });
  await page.locator('#mode', { hasText: 'live' }).waitFor({ timeout: 10_000 });
  t.pass('the peers show, and the page is live over the WebSocket');
  t.equal(await peer(one).locator('.state').textContent(), 'up');
  t.equal(await peer(one).locator('td.weight').textContent(), '2');
  t.equal(await peer(two).locator('td.max-conns').textContent(), '50');
  t.match(await page.locator('#server-zones tr[data-zone="site"]').textContent(), /site/);
  t.match(await page.locator('#location-zones tr[data-zone="app"]').textContent(), /app/);
  t.match(await page.locator('#limits tr[data-limit="perip"]').textContent(), /perip/);

  // Requests while the page watches: the rate (from two snapshots) rises above zero.
  const rated = await eventually(async () => {
    await traffic(5);
    const text = (await page.locator('#server-zones tr[data-zone="site"] td.req-rate').textContent()) ?? '';
    return /[1-9]/.test(text);
  }, 10_000);
  t.ok(rated, 'a request rate computed from successive snapshots');
  const selected = Number((await peer(one).locator('td.selected').textContent())?.replace(/,/g, ''));
  t.ok(selected > 0, `selections show (${selected})`);
  mkdirSync(OUTPUT, { recursive: true });
  await page.screenshot({ path: join(OUTPUT, 'dashboard.png'), fullPage: true });

  // Edit the weight: saved through /config, seen in the live table and in /config.
  const config = `http://127.0.0.1:${admin}/config/http/upstreams/backend/servers/127.0.0.1:${one}`;
  await peer(one).locator('button.edit').click();
  await page.locator('#editor').waitFor({ state: 'visible' });
  await page.locator('#edit-etag', { hasText: 'version' }).waitFor();
  t.equal(await page.inputValue('#edit-weight'), '2', 'the editor shows the configured weight');
  await page.fill('#edit-weight', '5');
  await page.click('#edit-save');
  await page.locator('#edit-message.ok', { hasText: 'Saved' }).waitFor({ timeout: 10_000 });
  await page.locator(`tr[data-peer="backend/127.0.0.1:${one}"] td.weight`, { hasText: /^5$/ }).waitFor({ timeout: 10_000 });
  t.pass('the table shows weight 5');
  t.equal((await getJson(config)).body.weight, 5, '/config has weight 5');
  t.same(problems, [], 'loaded, live, edited: no console error, page error or failed request');

  // Someone else changes the peer: the editor's version is stale, and saving is a conflict.
  const other = await getJson(config, { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: '{"weight":3}' });
  t.equal(other.status, 200, 'another client set weight 3');
  await page.fill('#edit-weight', '7');
  await page.check('#edit-down');
  await page.click('#edit-save');
  await page.locator('#edit-message.conflict', { hasText: 'Conflict' }).waitFor({ timeout: 10_000 });
  t.pass('the 412 is shown as a conflict');
  await page.screenshot({ path: join(OUTPUT, 'dashboard-conflict.png'), fullPage: true });
  const after = (await getJson(config)).body;
  t.equal(after.weight, 3, 'nothing was saved: the weight is the other client\'s');
  t.notOk(after.down, 'nor down');
  await page.click('#edit-reload');
  await page.locator('#edit-message.ok', { hasText: 'Loaded' }).waitFor();
  t.equal(await page.inputValue('#edit-weight'), '3', 'reloaded: the current weight');
  t.equal(await page.isChecked('#edit-down'), false);
  // Marked down from the dashboard: the live state follows.
  await page.check('#edit-down');
  await page.click('#edit-save');
  await page.locator('#edit-message.ok', { hasText: 'Saved' }).waitFor({ timeout: 10_000 });
  await page.click('#edit-cancel');
  await page.locator(`tr[data-peer="backend/127.0.0.1:${one}"] .state`, { hasText: 'down' }).waitFor({ timeout: 10_000 });
  t.pass('down: the peer\'s state shows down');

  // Chromium logs every answer of 400 or more as a console error: the 412 it was shown
  // is the one it may log.
  t.same(problems, ['console error: Failed to load resource: the server responded with a status of 412 (Precondition Failed)'], 'no other console error than the conflict\'s own 412');
  t.same(external, [], 'no request leaves the admin listener');
});

// What the page shows of what this server may not have configured, or of what another
// branch adds (`histograms`): fed a snapshot over a WebSocket the browser routes to the
// test, as the API would push it.
t.test('dashboard in Chromium: percentiles from histograms, stream peers, caches, limits and resolvers', { skip: absent }, async (t) => {
  const [admin] = await freePorts(1);
  const z = await Zonal.start({ 'zonal.conf': `http { server { listen 127.0.0.1:${admin} admin; location /dashboard/ { dashboard; } } }` });
  t.teardown(() => z.stop());
  const histogram = (p50: number | null, p90: number | null, p99: number | null, count: number) => ({ bounds: [1, 10, 100], buckets: [count, 0, 0, 0], count, sum: count, p50, p90, p99 });
  const peer = (server: string, extra: object) => ({ server, backup: false, weight: 1, state: 'up', selected: { current: 0, total: 4 }, data: { sent: 1, received: 1 }, health: { fails: 0, unavailable: 0, downtime: 0 }, ...extra });
  const snapshot = (total: number) => ({
    server: { version: '0.1.0', address: '127.0.0.1', generation: 0, load_time: '2026-01-01T00:00:00Z' },
    connections: { accepted: total, dropped: 0, active: 1, idle: 0 },
    http: {
      server_zones: { site: { requests: { total, processing: 0, discarded: 0 }, responses: { 200: total }, data: { received: 1, sent: 1 }, histograms: { response_time: histogram(2.5, 9, 42, total) } } },
      upstreams: { u: { peers: { '127.0.0.1:9001': peer('127.0.0.1:9001', { responses: { 200: 4 }, histograms: { response_time: histogram(1.5, 3, 7.5, 4) } }), '127.0.0.1:9002': peer('127.0.0.1:9002', { responses: {}, histograms: { response_time: histogram(null, null, null, 0) } }) }, keepalive: 0 } },
      caches: { pcache: { size: 8192, max_size: 1048576, cold: false, hit: { responses: 3, bytes: 3 }, miss: { responses: 1, bytes: 1 } } },
      limit_conns: { perip_conn: { passed: 1, skipped: 0, rejected: 2, exhausted: 0 } },
    },
    stream: {
      server_zones: { tcp: { connections: { total: 5, processing: 0, discarded: 0, passed: 0 }, sessions: { success: 5, invalid: 0 }, data: { received: 5, sent: 96 } } },
      upstreams: { s: { peers: { '127.0.0.1:9101': peer('127.0.0.1:9101', { histograms: { connect_time: histogram(0.5, 1, 2, 5), session_time: histogram(120, 480, 990, 5) } }) } } },
    },
    resolvers: { dns: { queries: { name: 2, srv: 0, addr: 0 }, sent: { a: 2, aaaa: 0, srv: 0, ptr: 0 }, responses: { success: 1, timedout: 1, not_found: 0 } } },
  });

  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  const page: Page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  let asked = '';
  await page.routeWebSocket(/\/status\//, (ws) => {
    asked = ws.url();
    ws.send(JSON.stringify(snapshot(10)));
    ws.send(JSON.stringify(snapshot(20)));
    ws.send(JSON.stringify({ error: 'PathNotFound', description: 'a pushed error is shown, not rendered' }));
  });
  await page.goto(`http://127.0.0.1:${admin}/dashboard/`);
  const row = (section: string, key: string) => page.locator(`#${section} tr[${key}]`);
  await row('upstreams', 'data-peer="u/127.0.0.1:9001"').waitFor({ timeout: 10_000 });
  t.match(asked, new RegExp(`^ws://127\\.0\\.0\\.1:${admin}/status/\\?interval=1000$`), 'the page asks for /status/ every second');
  const cells = async (section: string, key: string) => (await row(section, key).locator('td').allTextContents()).map((s) => s.trim());
  await page.locator('#server-zones tr[data-zone="site"] td', { hasText: '9.0 ms' }).waitFor({ timeout: 10_000 });
  const site = await cells('server-zones', 'data-zone="site"');
  t.same(site.slice(-3), ['2.5 ms', '9.0 ms', '42 ms'], 'a server zone\'s p50, p90, p99');
  t.same((await cells('upstreams', 'data-peer="u/127.0.0.1:9001"')).slice(-4, -1), ['1.5 ms', '3.0 ms', '7.5 ms'], 'a peer\'s');
  t.same((await cells('upstreams', 'data-peer="u/127.0.0.1:9002"')).slice(-4, -1), ['–', '–', '–'], 'no response yet: no percentile');
  t.same((await cells('stream-upstreams', 'data-peer="s/127.0.0.1:9101"')).slice(-4, -1), ['120 ms', '480 ms', '990 ms'], 'a stream peer\'s session time');
  t.match((await cells('caches', 'data-cache="pcache"')).join(' '), /pcache 8\.0 KiB 1\.0 MiB no 3 1 .* 75\.0 %/, 'the cache, with its hit ratio');
  t.match((await cells('limits', 'data-limit="perip_conn"')).join(' '), /perip_conn limit_conn 1 – 2/, 'the limit');
  t.match((await cells('stream-zones', 'data-zone="tcp"')).join(' '), /tcp .* 5/, 'the stream zone');
  t.match((await cells('resolvers', 'data-resolver="dns"')).join(' '), /dns 2 2 1 1 0/, 'the resolver');
  await page.locator('#problem.shown', { hasText: 'PathNotFound: a pushed error is shown' }).waitFor({ timeout: 10_000 });
  t.pass('a pushed error is shown above the last snapshot');
  await page.screenshot({ path: join(OUTPUT, 'dashboard-everything.png'), fullPage: true });
  t.same(problems, [], 'no console error');
});

t.test('dashboard in Chromium on a data-plane server: it polls the node:http API and edits through it', { skip: absent }, async (t) => {
  const [site, one, admin] = await freePorts(3);
  const z = await Zonal.start({
    'zonal.conf': `http {
        upstream backend { zone backend 64k; server 127.0.0.1:${one}; }
        server {
            listen 127.0.0.1:${site};
            location /api/ { api /; }
            location /board/ { dashboard /api/; }
            location /app/ { proxy_pass http://backend; }
        }
        server { listen 127.0.0.1:${one}; location / { return 200 "one\\n"; } }
        server { listen 127.0.0.1:${admin} admin; location / { api /; } }
    }`,
  });
  t.teardown(() => z.stop());
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  const page: Page = await browser.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  let sockets = 0;
  page.on('websocket', () => sockets++);
  await page.goto(`http://127.0.0.1:${site}/board/`);
  const row = page.locator(`tr[data-peer="backend/127.0.0.1:${one}"]`);
  await row.waitFor({ timeout: 10_000 });
  t.equal(await page.locator('#mode').textContent(), 'polling', 'it polls');
  await row.locator('button.edit').click();
  await page.locator('#edit-etag', { hasText: 'version' }).waitFor();
  await page.fill('#edit-weight', '4');
  await page.click('#edit-save');
  await page.locator('#edit-message.ok', { hasText: 'Saved' }).waitFor({ timeout: 10_000 });
  await page.click('#edit-cancel');
  await page.locator(`tr[data-peer="backend/127.0.0.1:${one}"] td.weight`, { hasText: /^4$/ }).waitFor({ timeout: 10_000 });
  t.equal((await getJson(`http://127.0.0.1:${admin}/config/http/upstreams/backend/servers/127.0.0.1:${one}`)).body.weight, 4, 'saved through the data plane\'s /api/config/');
  t.equal(sockets, 0, 'no WebSocket tried where the API does not push');
  t.same(problems, [], 'no console error');
});

t.test('dashboard in Chromium: the configuration store, unreachable', { skip: absent }, async (t) => {
  // A real instance whose etcd does not answer (a free port nothing listens on): the
  // panel shows the endpoint, not connected, and the error the primary last met.
  const [admin, nobody] = await freePorts(2);
  const z = await Zonal.start({
    'zonal.conf': `config_store etcd://127.0.0.1:${nobody}/zonal timeout=300ms cache=store.json;
http { upstream u { zone u 64k; server 127.0.0.1:1; }
       server { listen 127.0.0.1:${admin} admin; location / { api /; } location /dashboard/ { dashboard; } } }`,
  });
  t.teardown(() => z.stop());
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  const page: Page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${admin}/dashboard/`);
  const row = page.locator(`#config-store tr[data-store="127.0.0.1:${nobody}"]`);
  await row.waitFor({ timeout: 10_000 });
  t.match(await row.textContent(), /not connected/, 'not connected');
  await page.locator(`#config-store tr[data-store="127.0.0.1:${nobody}"]`, { hasText: /\d{4}-\d\d-\d\dT/ }).waitFor({ timeout: 10_000 });
  t.match(await row.textContent(), new RegExp(`127\\.0\\.0\\.1:${nobody}: .*\\(\\d{4}-\\d\\d-\\d\\dT`), 'the last error and its time');
  const status = await getJson(`http://127.0.0.1:${admin}/status/config_store`);
  t.match(status.body, { endpoint: `127.0.0.1:${nobody}`, connected: false, revision: 0, failed_writes: 0 }, 'what the panel shows');
});
