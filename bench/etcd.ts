// A local etcd cluster for the benchmarks that need one (bench/fleet.ts): Debian's
// etcd-server (`/usr/bin/etcd`, 3.4) started as N members on loopback ports, each with its
// data in the run's temporary folder, and waited for until every member reports itself
// healthy (the cluster has a leader and a quorum). Not a benchmark: scripts/bench.mjs lists
// it among its HELPERS. Its members are started with processes.ts's start(), so that
// runBench() stops them with the rest.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Broken, debianCommand, freePort, HOST, start, type Child } from './processes.js';

export interface EtcdCluster {
  /** host:port of each member's client listener, in the order started. */
  readonly endpoints: string[];
  readonly members: Child[];
}

const HEALTH_TRIES = 300;
const HEALTH_DELAY_MS = 100;

/** The etcd command, or why there is none (installed by apt-get when run as root). */
export function etcdCommand(): string {
  const etcd = debianCommand('etcd', 'etcd-server');
  if ('reason' in etcd) throw new Broken(`etcd: ${etcd.reason}`);
  return etcd.command;
}

/** Starts a `size`-member cluster with its data under `dir`; resolves once every member
 * answers /health with {"health":"true"}. */
export async function startEtcd(dir: string, size = 3): Promise<EtcdCluster> {
  const command = etcdCommand();
  const names = Array.from({ length: size }, (_, i) => `m${i}`);
  const client: number[] = [];
  const peer: number[] = [];
  for (let i = 0; i < size; i++) {
    client.push(await freePort());
    peer.push(await freePort());
  }
  const initial = names.map((n, i) => `${n}=http://${HOST}:${peer[i]}`).join(',');
  const members = names.map((name, i) => {
    const data = join(dir, `etcd-${name}`);
    mkdirSync(data, { recursive: true });
    return start(`etcd ${name}`, command, [
      `--name=${name}`,
      `--data-dir=${data}`,
      `--listen-client-urls=http://${HOST}:${client[i]}`,
      `--advertise-client-urls=http://${HOST}:${client[i]}`,
      `--listen-peer-urls=http://${HOST}:${peer[i]}`,
      `--initial-advertise-peer-urls=http://${HOST}:${peer[i]}`,
      `--initial-cluster=${initial}`,
      '--initial-cluster-token=zonal-bench',
      '--initial-cluster-state=new',
      '--logger=zap',
      '--log-outputs=stderr',
      '--log-level=warn',
    ]);
  });
  const endpoints = client.map((p) => `${HOST}:${p}`);
  await Promise.all(members.map((m, i) => healthy(m, endpoints[i])));
  return { endpoints, members };
}

async function healthy(member: Child, endpoint: string): Promise<void> {
  let last = '';
  for (let i = 0; i < HEALTH_TRIES; i++) {
    if (member.process.exitCode !== null || member.process.signalCode !== null)
      throw new Broken(`${member.name} exited (${member.process.signalCode ?? `code ${member.process.exitCode}`}):\n${member.output}`);
    try {
      const res = await fetch(`http://${endpoint}/health`, { signal: AbortSignal.timeout(2000) });
      last = await res.text();
      if (res.ok && (JSON.parse(last) as { health?: string }).health === 'true') return;
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, HEALTH_DELAY_MS));
  }
  throw new Broken(`${member.name} on ${endpoint} was not healthy after ${HEALTH_TRIES} tries (last: ${last}):\n${member.output}`);
}
