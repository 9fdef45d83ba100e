// A DNS client that speaks the wire protocol itself (dns-packet encodes and decodes), so
// that every response code is seen and counted: node:dns folds them into a few error
// codes. It knows nothing of upstreams or of HTTP: the server's peers from names (both
// protocols) and an embedding program's own lookups use it alike.
//
// A query goes to the first server over UDP; without an answer it goes again every
// RESEND_MS to the next server, answers from any of them counting, until the resolver's
// timeout. A server that answers SERVFAIL, REFUSED, NOTIMP or FORMERR is passed over for
// the next one not asked yet; the last answer is the query's. A truncated answer is asked
// again over TCP of the same server. Answers are cached for their TTL (or `valid`), and a
// cached lookup costs a map lookup: it returns the promise of the query that made it.
import dgram from 'node:dgram';
import net from 'node:net';
import packet from 'dns-packet';

/** What counts lookups: metrics/resolvers.ts's Resolver has this shape. */
export interface ResolverRecorder {
  query(type: 'name' | 'srv' | 'addr'): void;
  response(rcode: number): void;
  timedOut(): void;
}

export interface DnsServer {
  readonly host: string;
  readonly port: number;
}

export interface DnsResolverOptions {
  readonly servers: readonly DnsServer[];
  /** Milliseconds a query may take over all its tries (resolver_timeout, default 30 s). */
  readonly timeout?: number;
  /** Seconds every answer is kept, instead of its TTL (`valid=`). */
  readonly valid?: number;
  /** Ask for A records (default true) and AAAA records (default true), as nginx. */
  readonly ipv4?: boolean;
  readonly ipv6?: boolean;
  readonly recorder?: ResolverRecorder;
}

/** RFC 1035 response codes, and node:dns's names of them. */
export const RCODE = { success: 0, format_error: 1, server_failure: 2, not_found: 3, unimplemented: 4, refused: 5 } as const;
const CODES = ['NOERROR', 'EFORMERR', 'ESERVFAIL', 'ENOTFOUND', 'ENOTIMP', 'EREFUSED'];

/** A lookup that found nothing: `rcode` as the server answered, or `timedout`. */
export class DnsError extends Error {
  readonly code: string;
  constructor(
    readonly name_: string,
    readonly rcode: number | 'timedout',
  ) {
    const code = rcode === 'timedout' ? 'ETIMEOUT' : (CODES[rcode] ?? `ERCODE${rcode}`);
    super(`${name_}: ${rcode === 'timedout' ? 'timed out' : rcode === 0 ? 'no records' : `DNS response code ${rcode}`} (${code})`);
    this.code = code;
  }
}

export interface Addresses {
  readonly addresses: readonly string[];
  /** Epoch milliseconds at which the answer expires. */
  readonly expires: number;
}

export interface ServiceRecord {
  readonly target: string;
  readonly port: number;
  readonly priority: number;
  readonly weight: number;
}

export interface Services {
  readonly records: readonly ServiceRecord[];
  readonly expires: number;
}

interface Answer {
  readonly rcode: number;
  readonly answers: readonly packet.Answer[];
  readonly authorities: readonly packet.Answer[];
}

/** How long a server is waited for before the query goes to the next one (nginx's resend). */
const RESEND_MS = 1000;
/** How long an error (NXDOMAIN, SERVFAIL...) is kept, at most. */
const NEGATIVE_S = 5;
/** At least this long between two queries of one name, whatever the TTL says. */
const MIN_TTL_S = 1;

interface Pending {
  readonly resolve: (a: Answer) => void;
  readonly name: string;
  readonly type: string;
  readonly server: DnsServer;
}

export class DnsResolver {
  private readonly servers: readonly DnsServer[];
  private readonly timeout: number;
  private readonly valid?: number;
  private readonly ipv4: boolean;
  private readonly ipv6: boolean;
  private readonly recorder?: ResolverRecorder;
  private readonly cache = new Map<string, { readonly expires: number; readonly promise: Promise<unknown> }>();
  private readonly pending = new Map<number, Pending>();
  private sockets: { udp4?: dgram.Socket; udp6?: dgram.Socket } = {};
  private closed = false;

  constructor(options: DnsResolverOptions) {
    if (options.servers.length === 0) throw new Error('a resolver needs at least one server');
    this.servers = options.servers;
    this.timeout = options.timeout ?? 30_000;
    this.valid = options.valid;
    this.ipv4 = options.ipv4 ?? true;
    this.ipv6 = options.ipv6 ?? true;
    if (!this.ipv4 && !this.ipv6) throw new Error('a resolver needs ipv4 or ipv6 on');
    this.recorder = options.recorder;
  }

  /** A name's addresses (A, AAAA): rejects with DnsError when it has none. */
  lookup(name: string, now = Date.now()): Promise<Addresses> {
    return this.cached(`n:${name.toLowerCase()}`, now, () => this.lookupNow(name));
  }

  /** A name's SRV records, in the order the server gave. */
  resolveSrv(name: string, now = Date.now()): Promise<Services> {
    return this.cached(`s:${name.toLowerCase()}`, now, async () => {
      const a = await this.ask(name, 'SRV', 'srv');
      const records = a.answers.filter((r): r is packet.SrvAnswer => r.type === 'SRV').map((r) => ({ target: r.data.target, port: r.data.port, priority: r.data.priority ?? 0, weight: r.data.weight ?? 0 }));
      if (a.rcode !== 0 || records.length === 0) throw new DnsError(name, a.rcode);
      return { records, expires: this.expiry(a) };
    });
  }

  /** An address's names (PTR). */
  reverse(address: string, now = Date.now()): Promise<{ readonly names: readonly string[]; readonly expires: number }> {
    return this.cached(`r:${address}`, now, async () => {
      const name = reverseName(address);
      const a = await this.ask(name, 'PTR', 'addr');
      const names = a.answers.filter((r) => r.type === 'PTR').map((r) => String((r as packet.StringAnswer).data));
      if (a.rcode !== 0 || names.length === 0) throw new DnsError(address, a.rcode);
      return { names, expires: this.expiry(a) };
    });
  }

  /** Forgets every cached answer. */
  flush(): void {
    this.cache.clear();
  }

  close(): void {
    this.closed = true;
    this.sockets.udp4?.close();
    this.sockets.udp6?.close();
    this.sockets = {};
    for (const p of this.pending.values()) p.resolve({ rcode: -1, answers: [], authorities: [] });
    this.pending.clear();
  }

  private async lookupNow(name: string): Promise<Addresses> {
    const asks: Array<Promise<Answer | DnsError>> = [];
    // A time-out of one family is the lookup's only if the other finds nothing either.
    const settle = (p: Promise<Answer>) => p.catch((e: unknown) => (e instanceof DnsError ? e : new DnsError(name, 'timedout')));
    if (this.ipv4) asks.push(settle(this.ask(name, 'A', 'name')));
    if (this.ipv6) asks.push(settle(this.ask(name, 'AAAA', 'name')));
    const results = await Promise.all(asks);
    const addresses: string[] = [];
    let expires = Infinity;
    let failure: DnsError | undefined;
    for (const r of results) {
      if (r instanceof DnsError) {
        failure ??= r;
        continue;
      }
      const found = r.answers.filter((x) => x.type === 'A' || x.type === 'AAAA').map((x) => String((x as packet.StringAnswer).data));
      if (r.rcode !== 0) failure ??= new DnsError(name, r.rcode);
      if (found.length === 0) continue;
      addresses.push(...found);
      expires = Math.min(expires, this.expiry(r));
    }
    if (addresses.length === 0) throw failure ?? new DnsError(name, 0);
    return { addresses, expires };
  }

  /** The cache: a live entry's promise, else a new query's, kept until its answer
   * expires (an error for NEGATIVE_S at most, a time-out not at all). */
  private cached<T>(key: string, now: number, run: () => Promise<T>): Promise<T> {
    const hit = this.cache.get(key);
    if (hit && hit.expires > now) return hit.promise as Promise<T>;
    const promise = run();
    // In flight: every caller of this name waits for the same query.
    this.cache.set(key, { expires: Infinity, promise });
    promise.then(
      (v) => this.cache.get(key)?.promise === promise && this.cache.set(key, { expires: (v as { expires: number }).expires, promise }),
      (e: unknown) => {
        if (this.cache.get(key)?.promise !== promise) return;
        const keep = e instanceof DnsError && e.rcode !== 'timedout' ? 1000 * (this.valid ?? NEGATIVE_S) : 0;
        if (keep > 0) this.cache.set(key, { expires: Date.now() + keep, promise });
        else this.cache.delete(key);
      },
    );
    return promise;
  }

  private expiry(a: Answer): number {
    if (this.valid !== undefined) return Date.now() + this.valid * 1000;
    let ttl = Infinity;
    for (const r of a.answers) if ('ttl' in r && r.ttl !== undefined) ttl = Math.min(ttl, r.ttl);
    if (ttl === Infinity) ttl = NEGATIVE_S;
    return Date.now() + Math.max(MIN_TTL_S, ttl) * 1000;
  }

  /**
   * One query, counted once: by `kind` when sent, by its final response code or time-out
   * when it ends. Resolves with the answer (any rcode); rejects with a time-out.
   */
  private ask(name: string, type: 'A' | 'AAAA' | 'SRV' | 'PTR', kind: 'name' | 'srv' | 'addr'): Promise<Answer> {
    if (this.closed) return Promise.reject(new Error('the resolver is closed'));
    this.recorder?.query(kind);
    return new Promise<Answer>((resolve, reject) => {
      const started = Date.now();
      let next = 0;
      let done = false;
      let last: Answer | undefined;
      const ids: number[] = [];
      let resend: NodeJS.Timeout | undefined;
      const finish = (a: Answer | undefined) => {
        if (done) return;
        done = true;
        clearTimeout(resend);
        clearTimeout(deadline);
        for (const id of ids) this.pending.delete(id);
        if (a === undefined) {
          // Closed under it: no answer came, and none was waited for in vain either.
          if (!this.closed) this.recorder?.timedOut();
          reject(new DnsError(name, 'timedout'));
        } else {
          if (a.rcode >= 0) this.recorder?.response(a.rcode);
          resolve(a);
        }
      };
      const deadline = setTimeout(() => finish(last), this.timeout);
      deadline.unref();
      const send = () => {
        if (done) return;
        const server = this.servers[next++ % this.servers.length];
        const id = this.freeId();
        ids.push(id);
        this.pending.set(id, {
          name,
          type,
          server,
          resolve: (a) => {
            if (done) return;
            if (a.rcode < 0) return finish(undefined);
            last = a;
            // The next server may know better; the last one's answer stands.
            if (a.rcode !== 0 && a.rcode !== RCODE.not_found && next < this.servers.length) {
              clearTimeout(resend);
              return send();
            }
            finish(a);
          },
        });
        const query = packet.encode({ type: 'query', id, flags: packet.RECURSION_DESIRED, questions: [{ type, name }] });
        this.socket(server).send(query, server.port, server.host);
        const left = this.timeout - (Date.now() - started);
        if (left > RESEND_MS) {
          clearTimeout(resend);
          resend = setTimeout(send, RESEND_MS);
          resend.unref();
        }
      };
      send();
    });
  }

  private freeId(): number {
    for (;;) {
      const id = (Math.random() * 65536) | 0;
      if (!this.pending.has(id)) return id;
    }
  }

  private socket(server: DnsServer): dgram.Socket {
    const family = net.isIPv6(server.host) ? 'udp6' : 'udp4';
    let s = this.sockets[family];
    if (!s) {
      s = dgram.createSocket(family);
      s.on('message', (msg, rinfo) => this.received(msg, rinfo));
      // A port that refuses (ICMP) is a server that does not answer: its resend covers it.
      s.on('error', () => {});
      s.unref();
      this.sockets[family] = s;
    }
    return s;
  }

  private received(msg: Buffer, from: { address: string; port: number }): void {
    let decoded: packet.Packet;
    try {
      decoded = packet.decode(msg);
    } catch {
      // Not a DNS message: nothing can say which query it answers.
      return;
    }
    const p = decoded.id === undefined ? undefined : this.pending.get(decoded.id);
    if (!p || from.port !== p.server.port || !sameHost(from.address, p.server.host)) return;
    const q = decoded.questions?.[0];
    // A reply whose question is another (a spoof, a late reply to a reused id) is no answer.
    if (decoded.type !== 'response' || (q && (q.name.toLowerCase() !== p.name.toLowerCase() || q.type !== p.type))) return;
    const rcode = (decoded.flags ?? 0) & 0xf;
    if ((decoded.flags ?? 0) & packet.TRUNCATED_RESPONSE) {
      this.pending.delete(decoded.id!);
      void tcpQuery(p.server, p.name, p.type, Math.max(1, this.timeout)).then(p.resolve, () => {
        // The TCP try failed: the resend timer goes on to the next server.
      });
      return;
    }
    this.pending.delete(decoded.id!);
    p.resolve({ rcode, answers: decoded.answers ?? [], authorities: decoded.authorities ?? [] });
  }
}

function sameHost(a: string, b: string): boolean {
  return a === b || a === `::ffff:${b}`;
}

/** The question over TCP (RFC 7766): two bytes of length, then the message. */
function tcpQuery(server: DnsServer, name: string, type: string, timeout: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const id = (Math.random() * 65536) | 0;
    const socket = net.connect({ host: server.host, port: server.port });
    let data = Buffer.alloc(0);
    const fail = (e: Error) => {
      socket.destroy();
      reject(e);
    };
    socket.setTimeout(timeout, () => fail(new Error('TCP query timed out')));
    socket.on('error', fail);
    socket.on('connect', () => socket.write(packet.streamEncode({ type: 'query', id, flags: packet.RECURSION_DESIRED, questions: [{ type: type as 'A', name }] })));
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (data.length < 2 || data.length < 2 + data.readUInt16BE(0)) return;
      socket.destroy();
      try {
        const d = packet.decode(data.subarray(2, 2 + data.readUInt16BE(0)));
        if (d.id !== id) return reject(new Error('TCP answer to another query'));
        resolve({ rcode: (d.flags ?? 0) & 0xf, answers: d.answers ?? [], authorities: d.authorities ?? [] });
      } catch (e) {
        reject(e as Error);
      }
    });
    socket.on('end', () => fail(new Error('TCP connection closed before the answer')));
  });
}

/** `1.2.3.4` -> `4.3.2.1.in-addr.arpa`; IPv6 by nibbles under ip6.arpa. */
export function reverseName(address: string): string {
  if (net.isIPv4(address)) return `${address.split('.').reverse().join('.')}.in-addr.arpa`;
  if (!net.isIPv6(address)) throw new Error(`"${address}" is no IP address`);
  const [head, tail = ''] = address.split('::');
  const words = (s: string) => (s ? s.split(':') : []);
  const h = words(head);
  const t = address.includes('::') ? words(tail) : [];
  const all = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const hex = all.map((w) => w.padStart(4, '0')).join('');
  return `${[...hex].reverse().join('.')}.ip6.arpa`;
}
