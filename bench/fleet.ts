// npm run bench -- fleet [--rounds N] [--seconds S] [--writers W]: three zonal instances
// sharing one upstream configuration through a 3-member etcd cluster (`config_store`), all
// on loopback ports (the members' data on this machine's disk, as etcd syncs it). Measured:
// - the floor, for S seconds: etcd alone, one put after another through a member's HTTP
//   gateway; a change cannot reach the fleet sooner than etcd commits it;
// - propagation: a PATCH of a peer's weight (a new one each round) on one instance, the
//   writer turning round the three, sent to its admin listener (the primary, which holds
//   the etcd client); from the moment it is sent, the two others' /status/ are read on a
//   listener of their workers (what their traffic sees; the primary is not kept busy by the
//   reads) over keep-alive connections, one GET after another with nothing in between,
//   until each shows the new weight. N rounds (200) after 10 of warm-up; p50, p99 and max
//   for each other instance and for the later of the two, beside the target (p99
//   at most 100 ms), and how long the writer took to answer (etcd's commit included);
// - writes per second for S seconds (5) each: one writer on one instance, each PATCH sent
//   when the last was answered; W writers (3) on the three instances in turn, each the
//   same, on one upstream (their writes race for its key), then each on an upstream of
//   its own (of three); the W writers on one upstream each reading the peer's ETag and
//   writing with If-Match, so that they race. Each with its answers by status: a 412 is a
//   lost If-Match race, a 503 etcd not answering in time; any other status fails the run.
// After the writes, the three instances must show one weight in each upstream within 2 s,
// or the run fails.
// Every loop is bounded in count and time; the zonal instances are stopped by runBench(),
// the etcd members by the cluster's close(). The machine's load average is printed before
// and after.
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { EtcdCluster } from './etcd.js';
import { Broken, broken, debianCommand, freePort, HOST, ready, runBench, start, wholeOption, ZONAL } from './processes.js';
import { finish, median, nowNs, quantile, round2, table } from './report.js';

const INSTANCES = 3;
/** The upstreams of each instance: the propagation changes the first; writers spread over all. */
const UPSTREAMS = ['u0', 'u1', 'u2'];
const WARMUP = 10;
const TARGET_P99_MS = 100;
/** How long an instance may take to show a change before the run fails. */
const SEEN_WITHIN_MS = 5000;
const MAX_READS = 100_000;

const rounds = wholeOption('--rounds', 200, 10_000);
const seconds = wholeOption('--seconds', 5, 60);
const writers = wholeOption('--writers', 3, 30);

interface Answer {
  status: number;
  etag?: string;
  text: string;
}

interface Instance {
  name: string;
  /** The admin listener (the primary): the writes. */
  admin: number;
  /** A listener of the workers with the API at /status/: the reads. */
  site: number;
  agent: Agent;
}

/** One request over the instance's keep-alive connections, with a 5 s timeout: to its
 * admin listener, or to `port`. */
function call(to: Instance, method: string, path: string, body?: string, headers: Record<string, string> = {}, port = to.admin): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: HOST, port, method, path, agent: to.agent, timeout: 5000, headers: body === undefined ? headers : { 'Content-Type': 'application/json', ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, etag: res.headers.etag, text }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} on ${to.name} took over 5 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');
const ms = (fromNs: number) => (nowNs() - fromNs) / 1e6;

/** etcd, installed by apt-get when missing and this runs as root. */
function etcdCommand(): string {
  const etcd = debianCommand('etcd', 'etcd-server');
  if ('reason' in etcd) throw new Broken(`etcd: ${etcd.reason}`);
  return etcd.command;
}

await runBench('fleet', async (dir) => {
  const loadBefore = load();
  const etcd = await EtcdCluster.start(3, { command: etcdCommand() });
  try {
    await measure(dir, etcd, loadBefore);
  } finally {
    await etcd.close();
  }
});

async function measure(dir: string, etcd: EtcdCluster, loadBefore: string): Promise<void> {
  const peers = [await freePort(), await freePort()];
  const PEER = `${HOST}:${peers[0]}`;
  const configPath = (u: string) => `/config/http/upstreams/${u}/servers/${PEER}`;
  const statusPath = (u: string) => `/status/http/upstreams/${u}/peers/${PEER}/weight`;
  const upstreams = UPSTREAMS.map(
    (u) => `    upstream ${u} {
        zone ${u} 256k;
        server ${PEER};
        server ${HOST}:${peers[1]};
    }`,
  ).join('\n');

  const fleet: Instance[] = [];
  for (let i = 0; i < INSTANCES; i++) {
    const name = `zonal-${'abc'[i]}`;
    const admin = await freePort();
    const site = await freePort();
    const conf = join(dir, `${name}.conf`);
    writeFileSync(
      conf,
      `worker_processes 2;
config_store etcd://${etcd.endpoints}/zonal-bench;
http {
${upstreams}
    server {
        listen ${HOST}:${site};
        location /status/ { api /status/; }
    }
    server {
        listen ${HOST}:${admin} admin;
        location / { api /; }
    }
}
`,
    );
    const child = start(name, process.execPath, [ZONAL, '-c', conf]);
    await ready(child, admin);
    fleet.push({ name, admin, site, agent: new Agent({ keepAlive: true, maxSockets: writers + 2 }) });
  }

  /** The weight of the peer in upstream `u` that `to`'s /status/ shows. */
  const weightOn = async (to: Instance, u = UPSTREAMS[0]) => {
    const a = await call(to, 'GET', statusPath(u), undefined, {}, to.site);
    if (a.status !== 200) broken(`GET ${statusPath(u)} on ${to.name} answered ${a.status}: ${a.text.slice(0, 300)}`);
    return Number(a.text);
  };
  /** Milliseconds from `sentNs` until `to` shows `weight`, reading as fast as it answers. */
  const seen = async (to: Instance, weight: number, sentNs: number) => {
    for (let i = 0; i < MAX_READS; i++) {
      if ((await weightOn(to)) === weight) return ms(sentNs);
      if (ms(sentNs) > SEEN_WITHIN_MS) break;
    }
    broken(`${to.name} did not show weight ${weight} within ${SEEN_WITHIN_MS} ms (and ${MAX_READS} reads): is config_store on?`);
  };
  const patch = (to: Instance, weight: number, u = UPSTREAMS[0], headers?: Record<string, string>) => call(to, 'PATCH', configPath(u), JSON.stringify({ weight }), headers);

  // ---- The floor: etcd alone, one put after another through its HTTP gateway ----
  const puts: number[] = [];
  const putsFrom = nowNs();
  for (let i = 0; i < 1_000_000 && ms(putsFrom) < seconds * 1000; i++) {
    const sent = nowNs();
    if (!(await etcd.call(i % 3, '/v3/kv/put', { key: b64('/bench-floor'), value: b64(String(i)) }))) broken(`etcd did not take put ${i} within 1 s`);
    puts.push(ms(sent));
  }
  const putsPerS = (puts.length / ms(putsFrom)) * 1000;

  // ---- Propagation ----
  const each: number[] = [];
  const all: number[] = [];
  const answered: number[] = [];
  for (let r = 0; r < WARMUP + rounds; r++) {
    const writer = fleet[r % INSTANCES];
    const others = fleet.filter((f) => f !== writer);
    // 2..99, never the weight of the round before.
    const weight = 2 + (r % 98);
    const sent = nowNs();
    const [answer, ...times] = await Promise.all([
      patch(writer, weight).then((a) => {
        if (a.status !== 200) broken(`PATCH weight=${weight} on ${writer.name} answered ${a.status}: ${a.text.slice(0, 300)}`);
        return ms(sent);
      }),
      ...others.map((o) => seen(o, weight, sent)),
    ]);
    if (r < WARMUP) continue;
    each.push(...times);
    all.push(Math.max(...times));
    answered.push(answer);
  }
  const row = (what: string, v: number[], target = '') => [what, v.length, round2(median(v)), round2(quantile(v, 0.99)), round2(Math.max(...v)), target];
  const goal = (v: number[]) => `<= ${TARGET_P99_MS}: ${quantile(v, 0.99) <= TARGET_P99_MS ? 'met' : 'MISSED'}`;
  table(
    `Propagation: a PATCH on one instance until the other two show it in /status/, ${rounds} rounds after ${WARMUP} of warm-up (ms from the PATCH sent)`,
    ['what', 'samples', 'p50 ms', 'p99 ms', 'max ms', 'target p99 ms'],
    [
      row('each other instance', each, goal(each)),
      row('both other instances (the later)', all, goal(all)),
      row('the writer answered (etcd committed)', answered),
      row('  floor: etcd alone, a put through its HTTP gateway', puts),
    ],
  );

  // ---- Writes per second ----
  type Counts = { ok: number; 412: number; 503: number; other: number; perS: number; first503?: string };
  let next = 0;
  /** `count` writers on the instances in turn, for `seconds`; each on the first upstream,
   * or on upstreams in turn (`spread`), reading the ETag first with `ifMatch`. */
  const phase = async (count: number, { ifMatch = false, spread = false } = {}): Promise<Counts> => {
    const c: Counts = { ok: 0, 412: 0, 503: 0, other: 0, perS: 0 };
    let firstOther = '';
    const began = nowNs();
    const end = began + seconds * 1e9;
    await Promise.all(
      Array.from({ length: count }, async (_, w) => {
        const to = fleet[w % INSTANCES];
        const u = UPSTREAMS[spread ? w % UPSTREAMS.length : 0];
        for (let i = 0; i < 1_000_000 && nowNs() < end; i++) {
          let headers: Record<string, string> | undefined;
          if (ifMatch) {
            const read = await call(to, 'GET', configPath(u));
            if (read.status !== 200 || !read.etag) broken(`GET ${configPath(u)} on ${to.name} answered ${read.status} with ETag ${read.etag}: ${read.text.slice(0, 300)}`);
            headers = { 'If-Match': read.etag };
          }
          const a = await patch(to, 2 + (next++ % 98), u, headers);
          if (a.status === 200) c.ok++;
          else if (a.status === 412) c[412]++;
          else if (a.status === 503) {
            c[503]++;
            c.first503 ??= a.text.replace(/\s+/g, ' ').slice(0, 300);
          }
          else {
            c.other++;
            firstOther ||= `${a.status} ${a.text.slice(0, 300)}`;
          }
        }
      }),
    );
    c.perS = (c.ok / ms(began)) * 1000;
    if (c.other) broken(`${c.other} writes answered neither 200, 412 nor 503; the first: ${firstOther}`);
    return c;
  };
  const phases: Array<[key: string, what: string, counts: Counts]> = [
    ['sequential', '1 writer, one instance', await phase(1)],
    ['concurrent', `${writers} writers over ${INSTANCES} instances, one upstream`, await phase(writers)],
    ['spread', `${writers} writers over ${INSTANCES} instances, ${UPSTREAMS.length} upstreams`, await phase(writers, { spread: true })],
    ['if_match', `${writers} writers, one upstream, GET then If-Match`, await phase(writers, { ifMatch: true })],
  ];
  table(
    `Writes: PATCH of a peer's weight for ${seconds} s each, every writer waiting for its answer`,
    ['what', 'writes/s', '200', '412', '503'],
    [
      ...phases.map(([, what, c]) => [what, round2(c.perS), c.ok, c[412], c[503]]),
      ['  floor: etcd alone, 1 writer of puts', round2(putsPerS), puts.length, '', ''],
    ],
  );
  // A 503 is etcd's failing to commit in `timeout=`: what the instance said of it.
  for (const [, what, c] of phases) if (c.first503) console.log(`${what}: the first 503 answered ${c.first503}`);

  // The writes all ended: every instance must come to the same weight.
  for (const u of UPSTREAMS) {
    let weights: number[] = [];
    for (let i = 0, since = nowNs(); i < 10_000 && ms(since) < 2000; i++) {
      weights = await Promise.all(fleet.map((f) => weightOn(f, u)));
      if (weights.every((w) => w === weights[0])) break;
    }
    if (!weights.every((w) => w === weights[0])) broken(`after the writes the instances show weights ${weights.join(', ')} in upstream ${u}, not one`);
  }

  const loadAfter = load();
  table('Machine', ['what', 'value'], [
    ['load average before (1, 5, 15 min)', loadBefore],
    ['load average after', loadAfter],
    ['etcd members / zonal instances (2 workers each)', `3 / ${INSTANCES}`],
  ]);
  finish('fleet', {
    propagation_p50_ms: median(each),
    propagation_p99_ms: quantile(each, 0.99),
    propagation_max_ms: Math.max(...each),
    propagation_both_p99_ms: quantile(all, 0.99),
    patch_p50_ms: median(answered),
    patch_p99_ms: quantile(answered, 0.99),
    etcd_put_p50_ms: median(puts),
    etcd_put_p99_ms: quantile(puts, 0.99),
    etcd_puts_per_s: putsPerS,
    ...Object.fromEntries(phases.flatMap(([key, , c]) => [[`writes_per_s_${key}`, c.perS], [`writes_412_${key}`, c[412]], [`writes_503_${key}`, c[503]]])),
    load_1m_before: Number(loadBefore.split(' ')[0]),
    load_1m_after: Number(loadAfter.split(' ')[0]),
  });
}
