// A real etcd cluster on loopback ports, for the config_store tests and for
// `npm run bench -- fleet` (issue 34): members of Debian's etcd-server, each with its own
// data folder, with short heartbeat and election times so that the fault cases run fast.
// A member can be killed, stopped (SIGSTOP), continued and restarted; the leader is found
// by asking the members. It lives in bench/ because the benchmarks import nothing from
// test/, while the tests (run from their sources) may import bench/: one launcher for both.
// Not a benchmark: scripts/bench.mjs lists it among its HELPERS.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes.js';

export const ETCD = '/usr/bin/etcd';

interface Member {
  readonly name: string;
  readonly client: number;
  readonly peer: number;
  readonly dir: string;
  child?: ChildProcess;
  log: string;
}

/** Files of a test certificate authority, a server certificate for 127.0.0.1 and a
 * client certificate, made with openssl. */
export interface TestCertificates {
  readonly ca: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

export function makeCertificates(dir: string): TestCertificates {
  const f = (name: string) => join(dir, name);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=zonal test CA');
  for (const [who, ext] of [
    ['server', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth'],
    ['client', 'extendedKeyUsage=clientAuth'],
  ]) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${who}.key`), '-out', f(`${who}.csr`), '-subj', `/CN=${who === 'server' ? '127.0.0.1' : 'zonal'}`);
    writeFileSync(f(`${who}.ext`), ext);
    ssl('x509', '-req', '-in', f(`${who}.csr`), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f(`${who}.crt`), '-days', '2', '-extfile', f(`${who}.ext`));
  }
  return { ca: f('ca.crt'), serverCert: f('server.crt'), serverKey: f('server.key'), clientCert: f('client.crt'), clientKey: f('client.key') };
}

/** Every member started in this process: none outlives it, however it ends. */
const started = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

export class EtcdCluster {
  private constructor(
    readonly root: string,
    readonly members: Member[],
    /** Clients must speak TLS with a certificate of this authority. */
    readonly tls: TestCertificates | undefined,
    private readonly command: string,
  ) {}

  /** Starts `n` members (of `command`, Debian's etcd by default) and resolves once the
   * cluster has a leader that answers. With `tls`, clients speak TLS and must show a
   * client certificate of the test authority. */
  static async start(n = 3, options: { tls?: boolean; command?: string } = {}): Promise<EtcdCluster> {
    const root = mkdtempSync(join(tmpdir(), 'zonal-etcd-'));
    const ports: number[] = [];
    for (let i = 0; i < 2 * n; i++) ports.push(await freePort());
    const members = Array.from({ length: n }, (_, i): Member => ({ name: `m${i}`, client: ports[2 * i], peer: ports[2 * i + 1], dir: join(root, `m${i}`), log: '' }));
    const cluster = new EtcdCluster(root, members, options.tls ? makeCertificates(root) : undefined, options.command ?? ETCD);
    for (let i = 0; i < n; i++) cluster.run(i);
    try {
      await cluster.waitReady();
    } catch (e) {
      await cluster.close();
      throw e;
    }
    return cluster;
  }

  /** `127.0.0.1:<port>,...`: what `config_store etcd://` lists. */
  get endpoints(): string {
    return this.members.map((m) => `127.0.0.1:${m.client}`).join(',');
  }

  private run(i: number): void {
    const m = this.members[i];
    const initial = this.members.map((x) => `${x.name}=http://127.0.0.1:${x.peer}`).join(',');
    const scheme = this.tls ? 'https' : 'http';
    const tls = this.tls ? ['--cert-file', this.tls.serverCert, '--key-file', this.tls.serverKey, '--client-cert-auth', '--trusted-ca-file', this.tls.ca] : [];
    const child = spawn(
      this.command,
      [
        '--name', m.name,
        '--data-dir', m.dir,
        '--listen-client-urls', `${scheme}://127.0.0.1:${m.client}`,
        '--advertise-client-urls', `${scheme}://127.0.0.1:${m.client}`,
        ...tls,
        '--listen-peer-urls', `http://127.0.0.1:${m.peer}`,
        '--initial-advertise-peer-urls', `http://127.0.0.1:${m.peer}`,
        '--initial-cluster', initial,
        '--initial-cluster-state', 'new',
        '--initial-cluster-token', `zonal-${process.pid}`,
        '--heartbeat-interval', '50',
        '--election-timeout', '500',
        '--log-level', 'warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout!.on('data', (d) => (m.log += d));
    child.stderr!.on('data', (d) => (m.log += d));
    child.on('error', (e) => (m.log += `${e.message}\n`));
    started.add(child);
    child.once('exit', () => started.delete(child));
    m.child = child;
  }

  /** POSTs to a member's gRPC gateway; undefined when it does not answer in `ms`. */
  async call(i: number, path: string, body: unknown, ms = 1000): Promise<any> {
    if (this.tls) return this.callTls(i, path, body, ms);
    try {
      const res = await fetch(`http://127.0.0.1:${this.members[i].client}${path}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(ms) });
      return res.ok ? await res.json() : undefined;
    } catch {
      return undefined;
    }
  }

  /** call() over TLS, with the client certificate (fetch takes none). */
  private callTls(i: number, path: string, body: unknown, ms: number): Promise<any> {
    const tls = this.tls!;
    return new Promise((resolve) => {
      const req = request(
        { host: '127.0.0.1', port: this.members[i].client, path, method: 'POST', ca: readFileSync(tls.ca), cert: readFileSync(tls.clientCert), key: readFileSync(tls.clientKey), timeout: ms },
        (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve(res.statusCode === 200 ? JSON.parse(text) : undefined));
          res.on('error', () => resolve(undefined));
        },
      );
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(undefined));
      req.end(JSON.stringify(body));
    });
  }

  /** Until a member answers a linearizable read (a leader and a quorum). */
  async waitReady(ms = 20_000): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      for (let i = 0; i < this.members.length; i++) if (this.members[i].child && (await this.call(i, '/v3/kv/range', { key: b64('/') }, 500))) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`etcd has no quorum after ${ms} ms:\n${this.members.map((m) => m.log).join('\n')}`);
  }

  /** The index of the leader, by asking the members that answer. */
  async leader(): Promise<number> {
    for (let attempt = 0; attempt < 100; attempt++) {
      for (let i = 0; i < this.members.length; i++) {
        const s = await this.call(i, '/v3/maintenance/status', {}, 500);
        if (s && s.leader && s.leader === s.header?.member_id) return i;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('etcd has no leader');
  }

  /** A key's value (parsed JSON) and mod revision, read from any member that answers. */
  async get(key: string): Promise<{ value: any; revision: number } | undefined> {
    for (let i = 0; i < this.members.length; i++) {
      if (!this.members[i].child) continue;
      const r = await this.call(i, '/v3/kv/range', { key: b64(key) });
      if (!r) continue;
      const kv = r.kvs?.[0];
      return kv ? { value: JSON.parse(Buffer.from(kv.value, 'base64').toString('utf8')), revision: Number(kv.mod_revision) } : undefined;
    }
    throw new Error('no etcd member answers');
  }

  /** Writes a key through any member (an operator's `etcdctl put`). */
  async put(key: string, value: unknown): Promise<number> {
    for (let i = 0; i < this.members.length; i++) {
      const r = this.members[i].child && (await this.call(i, '/v3/kv/put', { key: b64(key), value: b64(JSON.stringify(value)) }));
      if (r) return Number(r.header.revision);
    }
    throw new Error('no etcd member answers');
  }

  signal(i: number, signal: NodeJS.Signals): void {
    this.members[i].child?.kill(signal);
  }

  /** SIGKILL, and wait until it is gone. */
  async kill(i: number): Promise<void> {
    const child = this.members[i].child;
    if (!child) return;
    this.members[i].child = undefined;
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    }
  }

  /** Starts a killed member again, from its data folder. */
  restart(i: number): void {
    if (!this.members[i].child) this.run(i);
  }

  async close(): Promise<void> {
    for (let i = 0; i < this.members.length; i++) {
      this.members[i].child?.kill('SIGCONT');
      await this.kill(i);
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
