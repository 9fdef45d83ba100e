// npm run bench -- resolver [--seconds N]: the resolver of issue 17 against dnsmasq on a
// loopback port.
//   1. Lookups per second with a warm cache (DnsResolver.lookup of a name whose answer
//      is cached) beside node:dns Resolver.resolve4 of the same name on the same server
//      (node:dns keeps no cache: each is a query), both with 64 lookups in flight.
//      Target: the cached lookup at least 10 times faster.
//   2. The time from a DNS change (hosts file rewritten, dnsmasq told with SIGHUP) to
//      the new address serving requests through bin/zonal, TTL 1 s. Target: TTL + 1 s.
import { promises as dnsPromises } from 'node:dns';
import { chmodSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { DnsResolver } from '../src/server/resolver/dns.js';
import { Broken, freePort, getOnce, HOST, ready, runBench, start, ZONAL } from './processes.js';
import { finish, fmt, median, table } from './report.js';

const seconds = Number(process.argv[process.argv.indexOf('--seconds') + 1]) || 2;
const IN_FLIGHT = 64;
const TTL_S = 1;
const CHANGES = 5;

/** Lookups per second of `lookup` with IN_FLIGHT at once, for about `ms`. */
async function rate(lookup: () => Promise<unknown>, ms: number): Promise<number> {
  let done = 0;
  const until = performance.now() + ms;
  const started = performance.now();
  const lane = async () => {
    while (performance.now() < until) {
      await lookup();
      done++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return (done * 1000) / (performance.now() - started);
}

function backend(host: string, port: number): Promise<Server> {
  const s = createServer((_req, res) => res.end(host));
  return new Promise((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, host, () => resolve(s));
  });
}

await runBench('resolver', async (dir) => {
  chmodSync(dir, 0o755);
  const hosts = join(dir, 'hosts');
  writeFileSync(hosts, '127.0.0.2 app.test\n', { mode: 0o644 });
  const dnsPort = await freePort();
  const dnsmasq = start('dnsmasq', '/usr/sbin/dnsmasq', [
    '--keep-in-foreground',
    `--port=${dnsPort}`,
    `--listen-address=${HOST}`,
    '--bind-interfaces',
    '--no-resolv',
    '--no-hosts',
    `--addn-hosts=${hosts}`,
    '--local=/test/',
    `--local-ttl=${TTL_S}`,
    '--cache-size=0',
    '--log-facility=-',
  ]);
  const servers = [{ host: HOST, port: dnsPort }];
  const ours = new DnsResolver({ servers, timeout: 2000, ipv6: false });
  const theirs = new dnsPromises.Resolver({ timeout: 2000, tries: 1 });
  theirs.setServers([`${HOST}:${dnsPort}`]);
  // dnsmasq answers once it has read its hosts file.
  for (let i = 0; ; i++) {
    try {
      await theirs.resolve4('app.test');
      break;
    } catch (e) {
      if (i >= 100) throw new Broken(`dnsmasq does not answer: ${(e as Error).message}\n${dnsmasq.output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const first = await ours.lookup('app.test');
  if (first.addresses.join() !== '127.0.0.2') throw new Broken(`the resolver found ${first.addresses.join()}, not 127.0.0.2`);

  // 1. The cache keeps its answer for the TTL (1 s): each round of ours starts with a
  // fresh answer and stays inside its life, so every lookup it counts is a cached one.
  const cachedRates: number[] = [];
  const nodeRates: number[] = [];
  for (let round = 0; round < Math.max(1, seconds); round++) {
    await ours.lookup('app.test', Date.now() + TTL_S * 1000 + 1);
    cachedRates.push(await rate(() => ours.lookup('app.test'), 500));
    nodeRates.push(await rate(() => theirs.resolve4('app.test'), 500));
  }
  const cached = median(cachedRates);
  const node = median(nodeRates);

  // 2. A change through bin/zonal.
  const [port, site] = [await freePort(), await freePort()];
  const backends = await Promise.all(['127.0.0.2', '127.0.0.3'].map((h) => backend(h, port)));
  const conf = join(dir, 'zonal.conf');
  writeFileSync(
    conf,
    `worker_processes 2;
http {
    resolver ${HOST}:${dnsPort} ipv6=off;
    upstream app {
        zone app;
        server app.test:${port} resolve;
    }
    server {
        listen ${HOST}:${site};
        location / { proxy_pass http://app; }
    }
}
`,
  );
  const zonal = start('zonal', process.execPath, [ZONAL, '-c', conf]);
  await ready(zonal, site);
  const changes: number[] = [];
  let current = '127.0.0.2';
  for (let i = 0; i < CHANGES; i++) {
    for (let j = 0; (await getOnce(site, '/')).body !== current; j++)
      if (j > 400) throw new Broken(`zonal does not serve ${current}:\n${zonal.output}`);
    const next = current === '127.0.0.2' ? '127.0.0.3' : '127.0.0.2';
    const signalled = new Promise<void>((resolve) => {
      const before = dnsmasq.output.length;
      const check = setInterval(() => {
        if (/read .*hosts/.test(dnsmasq.output.slice(Math.max(0, before - 100)))) (clearInterval(check), resolve());
      }, 2);
    });
    writeFileSync(hosts, `${next} app.test\n`, { mode: 0o644 });
    const changed = performance.now();
    dnsmasq.process.kill('SIGHUP');
    await signalled;
    for (let j = 0; (await getOnce(site, '/')).body !== next; j++) {
      if (j > 2000) throw new Broken(`zonal did not follow the change to ${next}:\n${zonal.output}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    changes.push(performance.now() - changed);
    current = next;
  }
  ours.close();
  await Promise.all(backends.map((b) => new Promise((r) => b.close(r))));

  const ratio = cached / node;
  table(
    'Lookups per second, 64 in flight, dnsmasq on loopback',
    ['resolver', 'lookups/s'],
    [
      ['zonal DnsResolver.lookup, warm cache', Math.round(cached)],
      ['node:dns Resolver.resolve4 (no cache)', Math.round(node)],
      ['ratio', ratio],
    ],
  );
  table(
    `From a DNS change to the new peer serving through bin/zonal (TTL ${TTL_S} s, ${CHANGES} changes)`,
    ['', 'ms'],
    [
      ['median', Math.round(median(changes))],
      ['max', Math.round(Math.max(...changes))],
      ['target (TTL + 1 s)', (TTL_S + 1) * 1000],
    ],
  );
  console.log(`\ncached lookup ${fmt(ratio)}x node:dns (target 10x); change seen in at most ${fmt(Math.max(...changes), 0)} ms (target ${(TTL_S + 1) * 1000})`);
  finish('resolver', {
    cached_lookups_per_s: cached,
    node_dns_resolve4_per_s: node,
    cached_vs_node_ratio: ratio,
    change_to_serving_ms_median: median(changes),
    change_to_serving_ms_max: Math.max(...changes),
  });
});
