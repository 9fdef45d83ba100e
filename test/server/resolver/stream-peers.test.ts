// Peers from names in stream upstreams, through bin/zonal over 2 workers, against dnsmasq
// whose records the test changes while zonal runs: an A record followed within TTL + 1 s
// with bytes still proxied (a session on a peer that went away included), SRV weights
// and priorities, /status and /config keyed by address, stream resolver zones in the one
// /status/resolvers family.
import { connect, type Socket } from 'node:net';
import t from 'tap';
import { EchoBackend, exchange } from '../stream/peers.js';
import { checkConfig, eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { startDnsmasq } from './dns-servers.js';

/** Echo backends on loopback addresses, each greeting with its address and a newline. */
async function backends(port: number, hosts: readonly string[]): Promise<EchoBackend[]> {
  const list = hosts.map((host) => new EchoBackend(port, { host, greeting: `${host}\n` }));
  await Promise.all(list.map((b) => b.start()));
  return list;
}

/** One session through the proxy: who answered, and whether the bytes came back whole. */
async function through(site: number, data = 'ping'): Promise<{ peer: string; echoed: boolean }> {
  const r = await exchange(site, data, { expect: '127.0.0.x\n'.length + data.length, ms: 5000 });
  const text = r.received.toString();
  const nl = text.indexOf('\n');
  return { peer: text.slice(0, nl), echoed: text.slice(nl + 1) === data };
}

/** A session kept open: `say` writes and resolves with what came back for it. */
function openSession(port: number): Promise<{ greeting: string; say(text: string): Promise<string>; close(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const s: Socket = connect({ port, host: '127.0.0.1' });
    let buffer = '';
    let wake: (() => void) | undefined;
    s.on('data', (d) => {
      buffer += d;
      wake?.();
    });
    s.on('error', reject);
    const until = (n: number, ms = 5000) =>
      new Promise<void>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`only ${JSON.stringify(buffer)} within ${ms} ms`)), ms);
        const check = () => {
          if (buffer.length >= n) {
            clearTimeout(timer);
            wake = undefined;
            ok();
          } else wake = check;
        };
        check();
      });
    void until('127.0.0.x\n'.length).then(() => {
      const greeting = buffer.slice(0, buffer.indexOf('\n'));
      let seen = buffer.length;
      resolve({
        greeting,
        async say(text) {
          s.write(text);
          await until(seen + text.length);
          const back = buffer.slice(seen, seen + text.length);
          seen += text.length;
          return back;
        },
        close: () => new Promise<void>((done) => (s.once('close', () => done()), s.end())),
      });
    }, reject);
  });
}

t.test('stream A records: peers follow the name within TTL + 1 s and keep proxying bytes', async (t) => {
  const [port, site, admin] = await freePorts(3);
  const echoes = await backends(port, ['127.0.0.2', '127.0.0.3', '127.0.0.4']);
  t.teardown(() => Promise.all(echoes.map((b) => b.stop())));
  const dns = await startDnsmasq({ hosts: '127.0.0.2 app.test\n', ttl: 1 });
  t.teardown(() => dns.stop());
  const zonal = await Zonal.start({
    'zonal.conf': `
worker_processes 2;
http {
    resolver 127.0.0.1:${dns.port} ipv6=off status_zone=hdns;
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
stream {
    resolver 127.0.0.1:${dns.port} ipv6=off status_zone=sdns;
    resolver_timeout 5s;
    upstream app {
        zone app 64k;
        server app.test:${port} resolve max_fails=3;
        server 127.0.0.4:${port} weight=2;
    }
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        resolver 127.0.0.1:${dns.port} status_zone=quiet;
        proxy_pass app;
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  const peers = async () => (await getJson(`http://127.0.0.1:${admin}/status/stream/upstreams/app/peers`)).body as Record<string, any>;
  const named = async () => Object.keys(await peers()).filter((k) => k !== `127.0.0.4:${port}`).sort();

  t.ok(await eventually(async () => (await named()).length === 1, 5000), 'the name resolved');
  const first = await peers();
  t.same(Object.keys(first).sort(), [`127.0.0.2:${port}`, `127.0.0.4:${port}`], 'its address is a peer, beside the configured one');
  t.equal(first[`127.0.0.2:${port}`].server, `app.test:${port}`, '`server` is the configured name');
  t.equal(first[`127.0.0.2:${port}`].state, 'up');
  const config = (await getJson(`http://127.0.0.1:${admin}/config/stream/upstreams/app/servers`)).body;
  t.same(config[`127.0.0.2:${port}`], { server: `app.test:${port}`, max_fails: 3 }, '/config: keyed by address, `server` the name, its parameters carried over');

  const seen = new Set<string>();
  for (let i = 0; i < 9; i++) {
    const r = await through(site, `bytes ${i}`);
    t.ok(r.echoed, `session ${i}: its bytes came back whole`);
    seen.add(r.peer);
  }
  t.same([...seen].sort(), ['127.0.0.2', '127.0.0.4'], 'sessions reach the resolved address');

  // A session on the name's peer stays open across the change.
  let held = await openSession(site);
  for (let i = 0; held.greeting !== '127.0.0.2' && i < 10; i++) {
    await held.close();
    held = await openSession(site);
  }
  t.equal(held.greeting, '127.0.0.2', 'a session held on the resolved peer');
  t.equal(await held.say('before'), 'before');

  await dns.setHosts('127.0.0.3 app.test\n');
  const changed = Date.now();
  t.ok(await eventually(async () => (await named()).join() === `127.0.0.3:${port}`, 4000), 'the peer followed the address');
  const took = Date.now() - changed;
  t.ok(took <= 2000, `within TTL + 1 s (${took} ms)`);
  t.comment(`stream: address change seen after ${took} ms`);
  const after = new Set<string>();
  for (let i = 0; i < 9; i++) {
    const r = await through(site, `after ${i}`);
    t.ok(r.echoed, `session ${i} after the change: bytes whole`);
    after.add(r.peer);
  }
  t.same([...after].sort(), ['127.0.0.3', '127.0.0.4'], 'new sessions follow; none goes to the address that went away');
  t.equal(await held.say('still there'), 'still there', 'the session on the removed peer goes on');
  await held.close();
  t.ok(
    await eventually(async () => (await getJson(`http://127.0.0.1:${admin}/status/stream/server_zones/site`)).body.connections.processing === 0, 3000),
    'and ends as its client ends it',
  );

  // A name added through /config to the stream upstream: followed as a configured one.
  const nameUrl = `http://127.0.0.1:${admin}/config/stream/upstreams/app/servers/extra.test:${port}`;
  const created = await getJson(nameUrl, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: '{"weight":3}' });
  t.equal(created.status, 201, `a name is created in a stream upstream with a resolver: ${JSON.stringify(created.body)}`);
  await dns.setHosts('127.0.0.3 app.test\n127.0.0.2 extra.test\n');
  t.ok(await eventually(async () => Object.keys(await peers()).includes(`127.0.0.2:${port}`), 7000), 'its address becomes a peer');
  t.match((await peers())[`127.0.0.2:${port}`], { server: `extra.test:${port}`, weight: 3 }, 'with the name as server and its parameters');
  t.equal((await getJson(nameUrl, { method: 'DELETE' })).status, 200, 'deleted');
  t.notOk(Object.keys(await peers()).includes(`127.0.0.2:${port}`), 'its peers go with it');

  const resolvers = (await getJson(`http://127.0.0.1:${admin}/status/resolvers`)).body;
  t.same(Object.keys(resolvers).sort(), ['hdns', 'quiet', 'sdns'], "one resolvers family: http's and stream's zones, a stream server's too");
  const sdns = resolvers.sdns;
  t.ok(sdns.queries.name >= 2 && sdns.responses.success >= 2, `the stream upstream's lookups counted in its zone (${sdns.queries.name})`);
  t.equal(sdns.queries.name, Object.values(sdns.responses as Record<string, number>).reduce((a, b) => a + b, 0), 'one response count per query');
  t.equal(resolvers.quiet.queries.name, 0, "a stream server's resolver resolves nothing itself");
});

t.test('stream SRV records: ports, weights, lowest priority primary and the others backup', async (t) => {
  const [port, site, admin] = await freePorts(3);
  const echoes = await backends(port, ['127.0.0.2', '127.0.0.3', '127.0.0.4']);
  t.teardown(() => Promise.all(echoes.map((b) => b.stop())));
  const dns = await startDnsmasq({
    hosts: '127.0.0.2 w1.test\n127.0.0.3 w2.test\n127.0.0.4 w3.test\n',
    srv: [`_db._tcp.svc.test,w1.test,${port},0,3`, `_db._tcp.svc.test,w2.test,${port},0,1`, `_db._tcp.svc.test,w3.test,${port},1,1`],
  });
  t.teardown(() => dns.stop());
  const zonal = await Zonal.start({
    'zonal.conf': `
worker_processes 2;
http {
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
stream {
    upstream svc {
        zone svc 64k;
        resolver 127.0.0.1:${dns.port} ipv6=off;
        server svc.test service=_db._tcp resolve;
    }
    server {
        listen 127.0.0.1:${site};
        proxy_pass svc;
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  const peers = async () => (await getJson(`http://127.0.0.1:${admin}/status/stream/upstreams/svc/peers`)).body as Record<string, any>;
  t.ok(await eventually(async () => Object.keys(await peers()).length === 3, 5000), 'three targets');
  const p = await peers();
  t.same(
    Object.fromEntries(Object.entries(p).map(([k, v]) => [k, { server: v.server, service: v.service, weight: v.weight, backup: v.backup }])),
    {
      [`127.0.0.2:${port}`]: { server: 'svc.test', service: '_db._tcp', weight: 3, backup: false },
      [`127.0.0.3:${port}`]: { server: 'svc.test', service: '_db._tcp', weight: 1, backup: false },
      [`127.0.0.4:${port}`]: { server: 'svc.test', service: '_db._tcp', weight: 1, backup: true },
    },
    'SRV port and weight, priority 1 a backup, `service` on each',
  );
  const config = (await getJson(`http://127.0.0.1:${admin}/config/stream/upstreams/svc/servers`)).body;
  t.match(config[`127.0.0.2:${port}`], { server: 'svc.test', service: '_db._tcp', weight: 3 }, '/config shows the service too');
  const counts = new Map<string, number>();
  for (let i = 0; i < 40; i++) {
    const r = await through(site, `s${i}`);
    t.ok(r.echoed, `session ${i}: bytes whole`);
    counts.set(r.peer, (counts.get(r.peer) ?? 0) + 1);
  }
  t.equal(counts.get('127.0.0.4'), undefined, 'the backup takes nothing while primaries serve');
  const w1 = counts.get('127.0.0.2') ?? 0;
  const w2 = counts.get('127.0.0.3') ?? 0;
  // Two workers each run their own smooth round robin: 3:1 in each, within a session.
  t.ok(Math.abs(w1 - 30) <= 2 && Math.abs(w2 - 10) <= 2, `weights 3:1 (${w1}:${w2})`);

  // The primaries go: the backup serves.
  await Promise.all([echoes[0].stop(), echoes[1].stop()]);
  const r = await through(site, 'backup');
  t.same(r, { peer: '127.0.0.4', echoed: true }, 'with its primaries unreachable, the backup serves');
});

t.test('-t: stream resolve needs a resolver; stream resolver parameters are checked', async (t) => {
  const check = (body: string) => checkConfig(`stream {\n${body}\n}\n`);
  const noResolver = await check('upstream u { server a.test:80 resolve; }\nserver { listen 127.0.0.1:1; proxy_pass u; }');
  t.equal(noResolver.code, 1);
  t.match(noResolver.err, /no resolver defined to resolve "a\.test:80" in upstream "u" in <dir>\/zonal\.conf:2/);
  const plain = await check('resolver 127.0.0.1;\nupstream u { server a.test:80; }\nserver { listen 127.0.0.1:1; proxy_pass u; }');
  t.match(plain.err, /is a host name, which needs a resolver/);
  const bad = await check('upstream u { resolver 127.0.0.1:99999; server 127.0.0.1:80; }\nserver { listen 127.0.0.1:1; proxy_pass u; }');
  t.match(bad.err, /invalid resolver address "127\.0\.0\.1:99999".* in <dir>\/zonal\.conf:2/);
  const timeout = await check('server { listen 127.0.0.1:1; resolver_timeout never; proxy_pass 127.0.0.1:2; }');
  t.match(timeout.err, /invalid value "never" in "resolver_timeout" directive in <dir>\/zonal\.conf:2/);
  const good = await check(
    'resolver 127.0.0.1 valid=30s ipv6=off status_zone=dns;\nresolver_timeout 5s;\nupstream u { zone u 64k; server a.test:8080 resolve weight=2; server b.test service=_db._tcp resolve; }\nserver { listen 127.0.0.1:1; proxy_pass u; }',
  );
  t.equal(good.code, 0, good.err);
});
