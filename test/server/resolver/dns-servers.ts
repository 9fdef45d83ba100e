// The DNS servers resolver tests talk to: dnsmasq (Debian's dnsmasq-base) run
// unprivileged on a loopback port, with records the test rewrites (hosts file + SIGHUP),
// and a small responder that answers what dnsmasq will not: FORMERR, NOTIMP, SERVFAIL,
// silence, and truncated answers completed over TCP.
import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import packet from 'dns-packet';
import { freePorts } from '../zonal.js';

export interface Dnsmasq {
  readonly port: number;
  /** Rewrites the hosts file (`<ip> <name>` lines) and makes dnsmasq read it again;
   * resolves once dnsmasq says it did. */
  setHosts(text: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * dnsmasq answering for `test.`: names of the hosts file, SRV records as given
 * (`_http._tcp.svc.test,a.test,8080,<priority>,<weight>`), NXDOMAIN for any other
 * name under test., REFUSED outside it (no upstream servers). Answers carry `ttl`.
 */
export async function startDnsmasq(options: { hosts: string; srv?: string[]; ttl?: number }): Promise<Dnsmasq> {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-dnsmasq-'));
  // dnsmasq started by root reads files as nobody.
  chmodSync(dir, 0o755);
  const hosts = join(dir, 'hosts');
  writeFileSync(hosts, options.hosts, { mode: 0o644 });
  const [port] = await freePorts(1);
  const args = [
    '--keep-in-foreground',
    `--port=${port}`,
    '--listen-address=127.0.0.1',
    '--bind-interfaces',
    '--no-resolv',
    '--no-hosts',
    `--addn-hosts=${hosts}`,
    '--local=/test/',
    `--local-ttl=${options.ttl ?? 1}`,
    '--cache-size=0',
    '--log-facility=-',
    `--pid-file=${join(dir, 'pid')}`,
    ...(options.srv ?? []).map((s) => `--srv-host=${s}`),
  ];
  const child: ChildProcess = spawn('/usr/sbin/dnsmasq', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const waiters: Array<() => void> = [];
  const onData = (d: Buffer) => {
    log += d;
    waiters.splice(0).forEach((w) => w());
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  let exited = false;
  child.on('exit', () => ((exited = true), waiters.splice(0).forEach((w) => w())));
  const waitFor = (re: RegExp, from: number, ms = 5000) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`dnsmasq: no ${re} within ${ms} ms:\n${log}`)), ms);
      const check = () => {
        if (re.test(log.slice(from))) {
          clearTimeout(timer);
          resolve();
        } else if (exited) {
          clearTimeout(timer);
          reject(new Error(`dnsmasq exited:\n${log}`));
        } else waiters.push(check);
      };
      check();
    });
  try {
    await waitFor(/read .*hosts/, 0);
  } catch (e) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    port,
    async setHosts(text) {
      const from = log.length;
      writeFileSync(hosts, text, { mode: 0o644 });
      child.kill('SIGHUP');
      await waitFor(/read .*hosts/, from);
    },
    async stop() {
      if (!exited) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await gone;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type Fault = 'formerr' | 'servfail' | 'notimp' | 'refused' | 'rcode9' | 'silent' | 'truncate' | 'ok' | 'garbage' | 'wrong-question';

export interface FaultServer {
  readonly port: number;
  /** Queries received over UDP and TCP, by name. */
  readonly udp: string[];
  readonly tcp: string[];
  stop(): Promise<void>;
}

/**
 * A responder on UDP and TCP of one loopback port: the first label of the name says
 * what it does (`formerr.x`, `silent.x`, `truncate.x`...); `ok` and `truncate` answer
 * `address` (truncate: 40 A records over TCP, an empty answer with TC over UDP).
 */
export async function startFaultServer(address = '127.0.0.9', fault?: Fault): Promise<FaultServer> {
  const [port] = await freePorts(1);
  const udp: string[] = [];
  const tcp: string[] = [];
  const answer = (q: packet.Packet, overTcp: boolean): Buffer | undefined => {
    const question = q.questions![0];
    const what = (fault ?? question.name.split('.')[0]) as Fault;
    const base = { type: 'response' as const, id: q.id, questions: q.questions };
    const rcode: Partial<Record<Fault, number>> = { formerr: 1, servfail: 2, notimp: 4, refused: 5, rcode9: 9 };
    if (what === 'silent') return undefined;
    if (what === 'garbage') return Buffer.from('not a DNS message');
    if (rcode[what] !== undefined) return packet.encode({ ...base, flags: packet.RECURSION_DESIRED | rcode[what]! });
    if (what === 'wrong-question') return packet.encode({ ...base, questions: [{ type: 'A', name: 'other.test' }], answers: [{ type: 'A', name: 'other.test', ttl: 60, data: '127.0.0.66' }] });
    if (what === 'truncate' && !overTcp) return packet.encode({ ...base, flags: packet.TRUNCATED_RESPONSE });
    const count = what === 'truncate' ? 40 : 1;
    const answers = question.type !== 'A' ? [] : Array.from({ length: count }, (_, i) => ({ type: 'A' as const, name: question.name, ttl: 60, data: count === 1 ? address : `127.0.1.${i + 1}` }));
    return packet.encode({ ...base, answers });
  };
  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    const q = packet.decode(msg);
    udp.push(q.questions![0].name);
    const a = answer(q, false);
    if (a) socket.send(a, rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => socket.bind(port, '127.0.0.1', r));
  const server = net.createServer((conn) => {
    let data = Buffer.alloc(0);
    conn.on('data', (d) => {
      data = Buffer.concat([data, d]);
      if (data.length < 2 || data.length < 2 + data.readUInt16BE(0)) return;
      const q = packet.decode(data.subarray(2, 2 + data.readUInt16BE(0)));
      tcp.push(q.questions![0].name);
      const a = answer(q, true);
      if (!a) return;
      const len = Buffer.alloc(2);
      len.writeUInt16BE(a.length);
      conn.end(Buffer.concat([len, a]));
    });
    conn.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    port,
    udp,
    tcp,
    async stop() {
      socket.close();
      await new Promise((r) => server.close(r));
    },
  };
}
