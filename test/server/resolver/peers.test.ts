// Peers from names, through bin/zonal over 2 workers, against dnsmasq whose records the
// test changes while zonal runs: A records followed within TTL + 1 s, SRV weights and
// priorities, a name that does not resolve at start, /status and /config keyed by
// address with `server` the configured name, the resolver zone's counters.
import { createServer, type Server } from 'node:http';
import t from 'tap';
import { checkConfig, eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { startDnsmasq } from './dns-servers.js';

/** An HTTP backend on a loopback address that answers with that address. */
async function backend(host: string, port: number): Promise<Server> {
  const s = createServer((_req, res) => res.end(host));
  await new Promise<void>((r) => s.listen(port, host, r));
  return s;
}

async function get(url: string): Promise<string> {
  const res = await fetch(url);
  return res.text();
}

t.test('A records: peers follow the name, in /status and /config keyed by address', async (t) => {
  const [port, site, admin] = await freePorts(3);
  const backends = await Promise.all(['127.0.0.2', '127.0.0.3', '127.0.0.4'].map((h) => backend(h, port)));
  t.teardown(() => Promise.all(backends.map((b) => new Promise((r) => b.close(r)))));
  const dns = await startDnsmasq({ hosts: '127.0.0.2 app.test\n', ttl: 1 });
  t.teardown(() => dns.stop());
  const zonal = await Zonal.start({
    'zonal.conf': `
worker_processes 2;
http {
    resolver 127.0.0.1:${dns.port} ipv6=off status_zone=dns;
    upstream app {
        zone app;
        server app.test:${port} resolve max_fails=3;
        server 127.0.0.4:${port} weight=2;
    }
    upstream ghost {
        server nowhere.test:${port} resolve;
    }
    server {
        listen 127.0.0.1:${site};
        location / { proxy_pass http://app; }
        location /ghost/ { proxy_pass http://ghost; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  const peers = async (u = 'app') => (await getJson(`http://127.0.0.1:${admin}/status/http/upstreams/${u}/peers`)).body as Record<string, any>;
  const named = async () => Object.keys(await peers()).filter((k) => k !== `127.0.0.4:${port}`).sort();

  t.ok(await eventually(async () => (await named()).length === 1, 5000), 'the name resolved');
  const first = await peers();
  t.same(Object.keys(first).sort(), [`127.0.0.2:${port}`, `127.0.0.4:${port}`], 'its address is a peer, beside the configured one');
  t.equal(first[`127.0.0.2:${port}`].server, `app.test:${port}`, '`server` is the configured name');
  t.equal(first[`127.0.0.4:${port}`].server, `127.0.0.4:${port}`);
  const config = (await getJson(`http://127.0.0.1:${admin}/config/http/upstreams/app/servers`)).body;
  t.same(config[`127.0.0.2:${port}`], { server: `app.test:${port}`, max_fails: 3 }, '/config: keyed by address, `server` the name, its parameters carried over');
  t.same(config[`127.0.0.4:${port}`], { weight: 2 }, 'a peer written by address shows no server');
  const peerUrl = `http://127.0.0.1:${admin}/config/http/upstreams/app/servers/127.0.0.2:${port}`;
  const patch = (body: unknown) => getJson(peerUrl, { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const written = await patch({ ...config[`127.0.0.2:${port}`], weight: 4 });
  t.equal(written.status, 200, 'what GET shows can be written back, with a change');
  t.same((await getJson(peerUrl)).body, { server: `app.test:${port}`, weight: 4, max_fails: 3 });
  const renamed = await patch({ server: 'other.test:80' });
  t.equal(renamed.status, 400);
  t.match(renamed.body, { error: 'FormatError', description: /"server" field of a server from "app\.test:\d+" is the resolver's/ }, 'its server cannot be changed');

  const answers = new Set<string>();
  for (let i = 0; i < 12; i++) answers.add(await get(`http://127.0.0.1:${site}/`));
  t.same([...answers].sort(), ['127.0.0.2', '127.0.0.4'], 'requests reach the resolved address');

  // The record changes: within TTL (1 s) + 1 s the new address serves, the old is gone.
  await dns.setHosts('127.0.0.3 app.test\n');
  const changed = Date.now();
  t.ok(await eventually(async () => (await named()).join() === `127.0.0.3:${port}`, 4000), 'the peer followed the address');
  const took = Date.now() - changed;
  t.ok(took <= 2000, `within TTL + 1 s (${took} ms)`);
  t.comment(`address change seen by zonal after ${took} ms`);
  const after = new Set<string>();
  for (let i = 0; i < 12; i++) after.add(await get(`http://127.0.0.1:${site}/`));
  t.same([...after].sort(), ['127.0.0.3', '127.0.0.4'], 'requests follow');

  // Two addresses: both become peers.
  await dns.setHosts('127.0.0.2 app.test\n127.0.0.3 app.test\n');
  t.ok(await eventually(async () => (await named()).length === 2, 4000), 'a second address is a second peer');

  // A reload keeps the name's peers and their counters.
  const total = (await peers())[`127.0.0.3:${port}`].selected.total;
  t.ok(total >= 1, `the peer counted its requests (${total})`);
  t.ok(await zonal.reload(), 'reloaded');
  const reloaded = await peers();
  t.same(Object.keys(reloaded).sort(), [`127.0.0.2:${port}`, `127.0.0.3:${port}`, `127.0.0.4:${port}`], 'the same peers after a reload');
  t.equal(reloaded[`127.0.0.3:${port}`].selected.total, total, 'their counters go on');

  // A name that does not resolve at start: the server runs, with a warning and no peers.
  t.match(zonal.log, /\[warn\] "nowhere\.test:\d+" of upstream "ghost" could not be resolved: .*ENOTFOUND/, 'a warn names it');
  t.same(await peers('ghost'), {}, 'no peers until it resolves');
  t.equal((await fetch(`http://127.0.0.1:${site}/ghost/`)).status, 502, 'its requests fail as for an upstream without peers');
  await dns.setHosts('127.0.0.2 app.test\n127.0.0.3 app.test\n127.0.0.4 nowhere.test\n');
  t.ok(await eventually(async () => Object.keys(await peers('ghost')).join() === `127.0.0.4:${port}`, 7000), 'it gets its peer once it resolves');

  // A name added through /config: followed as a configured one is.
  const nameUrl = `http://127.0.0.1:${admin}/config/http/upstreams/ghost/servers/extra.test:${port}`;
  const send = (method: string, body?: unknown) =>
    getJson(nameUrl, { method, ...(body === undefined ? {} : { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) }) });
  const created = await send('PUT', { weight: 3 });
  t.equal(created.status, 201, `a name is created in an upstream with a resolver: ${JSON.stringify(created.body)}`);
  t.same((await getJson(nameUrl)).body, { server: `extra.test:${port}`, resolve: true, weight: 3 }, 'its path shows it, with its parameters');
  t.equal((await send('PATCH', { max_fails: 2 })).status, 200, 'and takes changes');
  await dns.setHosts('127.0.0.2 app.test\n127.0.0.3 app.test\n127.0.0.4 nowhere.test\n127.0.0.2 extra.test\n');
  t.ok(await eventually(async () => Object.keys(await peers('ghost')).includes(`127.0.0.2:${port}`), 7000), 'its address becomes a peer');
  const extra = (await peers('ghost'))[`127.0.0.2:${port}`];
  t.same({ server: extra.server, weight: extra.weight }, { server: `extra.test:${port}`, weight: 3 }, 'with the name as server and its parameters');
  t.same((await getJson(`http://127.0.0.1:${admin}/config/http/upstreams/ghost/servers/127.0.0.2:${port}`)).body, { server: `extra.test:${port}`, weight: 3, max_fails: 2 });
  t.equal((await send('DELETE')).status, 200, 'deleted');
  t.notOk(Object.keys(await peers('ghost')).includes(`127.0.0.2:${port}`), 'its peers go with it');
  t.equal((await getJson(nameUrl)).status, 404);
  const configured = await getJson(`http://127.0.0.1:${admin}/config/http/upstreams/app/servers/app.test:${port}`, { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: '{"weight":2}' });
  t.equal(configured.status, 400, 'a name of the configuration file is changed there');

  const counters = (await getJson(`http://127.0.0.1:${admin}/status/resolvers/dns`)).body;
  t.ok(counters.queries.name >= 4, `queries counted (${counters.queries.name})`);
  t.ok(counters.responses.success >= 3 && counters.responses.not_found >= 1, 'successes and NXDOMAIN counted');
  t.equal(counters.queries.name, Object.values(counters.responses as Record<string, number>).reduce((a, b) => a + b, 0), 'one response count per query');
});

t.test('SRV records: ports, weights, lowest priority primary and the others backup', async (t) => {
  const [port, site, admin] = await freePorts(3);
  const backends = await Promise.all(['127.0.0.2', '127.0.0.3', '127.0.0.4'].map((h) => backend(h, port)));
  t.teardown(() => Promise.all(backends.map((b) => new Promise((r) => b.close(r)))));
  const dns = await startDnsmasq({
    hosts: '127.0.0.2 w1.test\n127.0.0.3 w2.test\n127.0.0.4 w3.test\n',
    srv: [`_http._tcp.svc.test,w1.test,${port},0,3`, `_http._tcp.svc.test,w2.test,${port},0,1`, `_http._tcp.svc.test,w3.test,${port},1,1`],
  });
  t.teardown(() => dns.stop());
  const zonal = await Zonal.start({
    'zonal.conf': `
worker_processes 2;
http {
    upstream svc {
        zone svc;
        resolver 127.0.0.1:${dns.port} ipv6=off;
        server svc.test service=_http._tcp resolve;
    }
    server {
        listen 127.0.0.1:${site};
        location / { proxy_pass http://svc; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  const peers = async () => (await getJson(`http://127.0.0.1:${admin}/status/http/upstreams/svc/peers`)).body as Record<string, any>;
  t.ok(await eventually(async () => Object.keys(await peers()).length === 3, 5000), 'three targets');
  const p = await peers();
  t.same(
    Object.fromEntries(Object.entries(p).map(([k, v]) => [k, { server: v.server, service: v.service, weight: v.weight, backup: v.backup }])),
    {
      [`127.0.0.2:${port}`]: { server: 'svc.test', service: '_http._tcp', weight: 3, backup: false },
      [`127.0.0.3:${port}`]: { server: 'svc.test', service: '_http._tcp', weight: 1, backup: false },
      [`127.0.0.4:${port}`]: { server: 'svc.test', service: '_http._tcp', weight: 1, backup: true },
    },
    'SRV port and weight, priority 1 a backup, `service` on each',
  );
  const counts = new Map<string, number>();
  for (let i = 0; i < 40; i++) {
    const who = await get(`http://127.0.0.1:${site}/`);
    counts.set(who, (counts.get(who) ?? 0) + 1);
  }
  t.equal(counts.get('127.0.0.4'), undefined, 'the backup takes nothing while primaries serve');
  const w1 = counts.get('127.0.0.2') ?? 0;
  const w2 = counts.get('127.0.0.3') ?? 0;
  // Two workers each run their own smooth round robin: 3:1 in each, within a request.
  t.ok(Math.abs(w1 - 30) <= 2 && Math.abs(w2 - 10) <= 2, `weights 3:1 (${w1}:${w2})`);
});

t.test('-t: resolve needs a resolver, service needs resolve, names need resolve', async (t) => {
  const check = (body: string) => checkConfig(`http {\n${body}\n}\n`);
  const noResolver = await check('upstream u { server a.test:80 resolve; }');
  t.equal(noResolver.code, 1);
  t.match(noResolver.err, /no resolver defined to resolve "a\.test:80" in upstream "u" in <dir>\/zonal\.conf:2/);
  const plain = await check('resolver 127.0.0.1;\nupstream u { server a.test:80; }');
  t.match(plain.err, /is a host name, which needs a resolver/);
  const service = await check('resolver 127.0.0.1;\nupstream u { server 127.0.0.1 service=http; }');
  t.match(service.err, /"service" parameter requires "resolve"/);
  const port = await check('resolver 127.0.0.1;\nupstream u { server a.test:80 service=http resolve; }');
  t.match(port.err, /has a port and a "service"/);
  const bad = await check('resolver 127.0.0.1:99999;');
  t.match(bad.err, /invalid resolver address "127\.0\.0\.1:99999"/);
  const badValid = await check('resolver 127.0.0.1 valid=soon;');
  t.match(badValid.err, /invalid parameter "valid=soon"/);
  const timeout = await check('resolver_timeout never;');
  t.match(timeout.err, /invalid value "never" in "resolver_timeout"/);
  const good = await check('resolver 127.0.0.1 [::1]:5353 valid=30s ipv6=off status_zone=dns;\nresolver_timeout 5s;\nupstream u { zone u; server a.test:8080 resolve weight=2; server b.test service=_http._tcp resolve; }');
  t.equal(good.code, 0, good.err);
});
