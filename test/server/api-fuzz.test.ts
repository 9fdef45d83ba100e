// Issue 13: a generated fuzz of bad requests against /config and /status/ of a running
// zonal server, on both transports: node:http (an `api` location of a data-plane server,
// in the workers) and uWebSockets.js (the admin listener, in the primary). Every request
// generated is one the API must refuse; each must get a 4xx JSON { error, description },
// no worker may crash, and /config must read the same bytes afterwards.
import t from 'tap';
import { connect, type Socket } from 'node:net';
import { normalizeUri } from '../../src/server/http/uri.js';
import { prng, randomPath } from '../api/fuzz.js';
import { freePorts, Zonal } from './zonal.js';

const [site, admin, p1, p2, p3] = await freePorts(5);
const conf = `
worker_processes 2;
http {
    upstream u { zone u 64k; server 127.0.0.1:${p1} weight=2; server 127.0.0.1:${p2} max_fails=3; }
    server { listen 127.0.0.1:${site}; server_name example.test; location /api/ { api /; } }
    server { listen 127.0.0.1:${admin} admin; location / { api /; } }
}
`;
const zonal = await Zonal.start({ 'zonal.conf': conf });
t.teardown(() => zonal.stop());

/** Requests per transport, and how many are in flight at once on each. */
const PER_TRANSPORT = 5200;
const IN_FLIGHT = 16;
/** nginx's default large_client_header_buffers (4 8k), which the zonal server applies: a
 * request line or a header line longer than one buffer, or a head larger than all four,
 * is refused before the API. */
const LINE_LIMIT = 8 * 1024;
const NODE_HEAD_LIMIT = 4 * LINE_LIMIT;
/** uWS 20.30's limit on a request's head (UWS_HTTP_MAX_HEADERS_SIZE, default 4 KiB). */
const UWS_HEAD_LIMIT = 4 * 1024;

interface Fuzz {
  category: string;
  method: string;
  /** The request target, as bytes (latin1: \u0080-\u00ff are sent as single, invalid UTF-8, bytes). */
  path: string;
  headers: Array<[string, string]>;
  body?: Buffer;
  chunked?: boolean;
}

interface Transport {
  name: string;
  port: number;
  /** The mount prefix of the API on this listener. */
  prefix: string;
  /** A Host the listener answers writes for. */
  host: string;
  /** Whether a read with a foreign Host is refused (the admin listener) or answered (a data-plane server's default). */
  readsCheckHost: boolean;
}

const transports: Transport[] = [
  { name: 'node:http (workers, /api/)', port: site, prefix: '/api', host: 'example.test', readsCheckHost: false },
  { name: 'uWS (primary, admin)', port: admin, prefix: '', host: `127.0.0.1:${admin}`, readsCheckHost: true },
];

const servers = (name: string) => `/config/http/upstreams/u/servers/${name}`;
const S1 = servers(`127.0.0.1:${p1}`);
const S2 = servers(`127.0.0.1:${p2}`);
const NEW = servers(`127.0.0.1:${p3}`);
const JSON_TYPE: [string, string] = ['Content-Type', 'application/json'];

/** Leaves no path of the tree ends with: a path ending in one is refused whatever comes before. */
const BOGUS_LEAVES = ['nope', '%zz', '%2e%2e', '..', '%2E%2e', '.%2e', '%00', '%252e%252e', '\u00e9\u00ff', '%ff%fe', 'constructor',
  '__proto__', 'toString', 'hasOwnProperty', 'x'.repeat(300), 'peers\u0080', '127.0.0.1:1'];
const BAD_JSON = ['{', '{"weight":', 'weight=2', "{'weight':2}", '{"weight":2,}', '[1,2', 'tru', 'NaN', '{"weight":2}}', '{"weight":2}{"weight":3}',
  '{"weight":2} x', '\u0000', '{"weight":0x10}', '{"weight":+2}', '{"weight":.5}', '{weight:2}', '"', '{"weight":2', '//\n{}', ' '];
const WRONG_TYPES = ['{"weight":"2"}', '{"weight":true}', '{"down":"yes"}', '{"backup":1}', '{"max_fails":[1]}', '{"fail_timeout":{}}',
  '{"sid":5}', '{"weight":1.5}', '{"max_conns":false}', '{"slow_start":[]}', '[]', '2', '"weight"', 'true', '[{"weight":2}]'];
const UNKNOWN_FIELDS = ['{"foo":1}', '{"weight":2,"bar":true}', '{"__proto__":{"weight":2}}', '{"constructor":1}', '{"servers":[]}',
  '{"Weight":2}', '{"weight ":2}', '{"server":"127.0.0.1:1"}', '{"toString":"x"}', '{"":1}'];
const HUGE_NUMBERS = ['{"weight":2147483648}', '{"weight":1e308}', '{"weight":1e400}', '{"weight":-1}', '{"weight":0}', '{"weight":-0}',
  '{"weight":99999999999999999999999}', '{"max_fails":-1}', '{"fail_timeout":2147483648}', '{"max_conns":1e20}', '{"slow_start":"99999999999h"}',
  '{"fail_timeout":"10x"}', '{"max_fails":4294967297}', '{"weight":-1e-400}'];
/** A parameter path and values of the wrong type or range for it (`/down` takes true, so not `true`). */
const BAD_PARAMS: Array<[string, string[]]> = [
  ['weight', ['"x"', 'true', '{}', '[]', '-1', '0', '2147483648', '1e400']],
  ['down', ['"yes"', '1', '{}', 'null']],
  ['max_fails', ['-1', '"3"', '1.5']],
  ['fail_timeout', ['"forever"', '-5', '[]']],
];
/** Writes that would be applied from a caller the API trusts. */
const VALID_WRITES: Array<[string, string, string | undefined]> = [
  ['PATCH', S1, '{"weight":3}'],
  ['PUT', S2, '{"max_fails":2}'],
  ['PUT', NEW, '{"weight":1}'],
  ['DELETE', S1, undefined],
  ['DELETE', `${S2}/max_fails`, undefined],
  ['PUT', `${S1}/down`, 'true'],
  ['POST', servers(''), `{"server":"127.0.0.1:${p3}"}`],
];
const ODD_METHODS = ['TRACE', 'OPTIONS', 'BREW', 'PROPFIND', 'PURGE', 'MKCOL', 'LOCK', 'SEARCH', 'CONNECT', 'PATCH', 'POST', 'PUT', 'DELETE', 'G\u00c9T'];
/** Methods llhttp (node's parser) knows: any other is refused by node before JavaScript sees it. */
const LLHTTP_METHODS = new Set(['DELETE', 'GET', 'HEAD', 'POST', 'PUT', 'CONNECT', 'OPTIONS', 'TRACE', 'COPY', 'LOCK', 'MKCOL', 'MOVE',
  'PROPFIND', 'PROPPATCH', 'SEARCH', 'UNLOCK', 'BIND', 'REBIND', 'UNBIND', 'ACL', 'REPORT', 'MKACTIVITY', 'CHECKOUT', 'MERGE',
  'M-SEARCH', 'NOTIFY', 'SUBSCRIBE', 'UNSUBSCRIBE', 'PATCH', 'PURGE', 'MKCALENDAR', 'LINK', 'UNLINK', 'SOURCE', 'QUERY']);

const CATEGORIES = ['bad JSON', 'wrong types', 'unknown fields', 'huge numbers', 'deep nesting', 'large bodies', 'invalid UTF-8',
  'odd methods', 'dot and percent paths', 'long paths', 'long headers', 'Host/Origin', 'no JSON Content-Type', 'If-Match'];

/** The generator: deterministic for a seed, every request one the API must refuse. */
function generate(tr: Transport, seed: number, n: number): Fuzz[] {
  const g = prng(seed);
  const { rnd, pick } = g;
  const host: [string, string] = ['Host', tr.host];
  const out: Fuzz[] = [];
  const write = (category: string, path: string, body: string | Buffer, extra: Array<[string, string]> = [JSON_TYPE]): Fuzz => ({
    category,
    method: pick(['PUT', 'PATCH']),
    path: tr.prefix + path,
    headers: [host, ...extra],
    body: typeof body === 'string' ? Buffer.from(body) : body,
    chunked: rnd(8) === 0,
  });
  const target = () => pick([S1, S2, NEW]);
  /** A GET of a path that does not exist, under /status/ or /config/. */
  const bogusPath = () => tr.prefix + randomPath(g, ['/status', '/config', '/config/http/upstreams/u/servers', '/status/http/upstreams/u']).replace(/\/$/, '') + '/' + pick(BOGUS_LEAVES);
  for (let i = 0; i < n; i++) {
    const category = CATEGORIES[i % CATEGORIES.length];
    switch (category) {
      case 'bad JSON':
        out.push(write(category, target(), pick(BAD_JSON)));
        break;
      case 'wrong types': {
        if (rnd(3) === 0) {
          const [param, values] = pick(BAD_PARAMS);
          out.push({ ...write(category, `${target()}/${param}`, pick(values)), method: 'PUT' });
        } else out.push(write(category, target(), pick(WRONG_TYPES)));
        break;
      }
      case 'unknown fields':
        out.push(rnd(4) === 0 ? write(category, `${target()}/${pick(['nope', 'Weight', 'constructor', '__proto__'])}`, '1') : write(category, target(), pick(UNKNOWN_FIELDS)));
        break;
      case 'huge numbers':
        out.push(write(category, target(), pick(HUGE_NUMBERS)));
        break;
      case 'deep nesting': {
        // Up to 30,000 levels: below the 64 KiB body limit, so they reach JSON.parse and the checks.
        const depth = 1 + rnd(30000);
        const [open, close] = pick([['[', ']'], ['{"a":', '}'], ['{"weight":[', ']}']]);
        out.push(write(category, target(), `{"weight":${open.repeat(depth)}1${close.repeat(depth)}}`.slice(0, 65536)));
        break;
      }
      case 'large bodies': {
        // Above the 64 KiB limit, up to 1 MiB: 413 (1 in 4 of them a full 1 MiB).
        const size = rnd(4) === 0 ? 1024 * 1024 : 65537 + rnd(200_000);
        const body = Buffer.alloc(size, ' ');
        body.write('{"weight":2');
        body.write('}', size - 1);
        out.push(write(category, target(), body, rnd(5) === 0 ? [] : [JSON_TYPE]));
        break;
      }
      case 'invalid UTF-8': {
        const bad = pick([[0xff], [0xc3, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80], [0xe2, 0x82]]);
        if (rnd(3) === 0) out.push({ category, method: 'GET', path: bogusPath() + '\u00ff\u00c3(', headers: [host] });
        else out.push(write(category, target(), Buffer.concat([Buffer.from('{"sid":"'), Buffer.from(bad), Buffer.from('"}')])));
        break;
      }
      case 'odd methods': {
        const method = pick(ODD_METHODS);
        // Read-only paths: every method but GET and HEAD is refused there (405).
        const path = pick(['/status/', '/status/connections', '/status/http/upstreams/u', '/config', '/config/http', '/config/http/upstreams']);
        out.push({ category, method, path: tr.prefix + path, headers: [host, JSON_TYPE], body: method === 'CONNECT' || rnd(2) ? undefined : Buffer.from('{"weight":2}') });
        break;
      }
      case 'dot and percent paths':
        out.push({ category, method: pick(['GET', 'GET', 'PUT', 'DELETE']), path: bogusPath(), headers: [host, JSON_TYPE] });
        break;
      case 'long paths': {
        const size = pick([2000, 4000, 8000, 12_000, 20_000, 65536, 300_000]);
        out.push({ category, method: 'GET', path: (tr.prefix + '/status/' + 'a/'.repeat(size / 2)).slice(0, size) + 'z', headers: [host] });
        break;
      }
      case 'long headers': {
        const many = rnd(3) === 0;
        const size = pick([1000, 3000, 5000, 10_000, 20_000, 100_000]);
        const headers: Array<[string, string]> = many
          ? Array.from({ length: size / 50 }, (_, k) => [`X-Fuzz-${k}`, 'v'.repeat(40)])
          : [['X-Fuzz', 'v'.repeat(size)]];
        out.push({ category, method: 'GET', path: bogusPath(), headers: [host, ...headers] });
        break;
      }
      case 'Host/Origin': {
        // Valid writes (and, on the admin listener, reads) from a foreign Host or Origin: 403.
        const [method, path, body] = pick(VALID_WRITES);
        const foreign = pick([['Host', 'evil.example'], ['Host', `evil.example:${tr.port}`], ['Host', '10.0.0.1'],
          ['Origin', 'http://evil.example'], ['Origin', 'null'], ['Origin', `http://127.0.0.1:${tr.port + 1}`]] as Array<[string, string]>);
        if (tr.readsCheckHost && rnd(3) === 0)
          out.push({ category, method: 'GET', path: pick(['/config/', '/status/', `${S1}`]), headers: [['Host', pick(['evil.example', 'rebound.test', 'localhost.evil'])]] });
        else
          out.push({
            category,
            method,
            path: tr.prefix + path,
            headers: foreign[0] === 'Host' ? [foreign, JSON_TYPE] : [host, foreign, JSON_TYPE],
            body: body === undefined ? undefined : Buffer.from(body),
          });
        break;
      }
      case 'no JSON Content-Type': {
        // A write of a valid body without application/json: 415.
        const [method, path, body] = pick(VALID_WRITES.filter(([, , b]) => b !== undefined));
        const type = pick([[], [['Content-Type', 'text/plain']], [['Content-Type', 'application/x-www-form-urlencoded']],
          [['Content-Type', 'multipart/form-data; boundary=x']], [['Content-Type', 'application/jsonx']]] as Array<Array<[string, string]>>);
        out.push({ category, method, path: tr.prefix + path, headers: [host, ...type], body: Buffer.from(body!) });
        break;
      }
      case 'If-Match': {
        // A valid write with a tag that matches nothing: 412.
        const [method, path, body] = pick(VALID_WRITES.filter(([m]) => m !== 'POST'));
        const tag = pick(['"fuzz-not-a-tag"', 'W/"fuzz"', '"' + 'x'.repeat(200) + '"', '"a", "b"']);
        out.push({ category, method, path: tr.prefix + path, headers: [host, JSON_TYPE, ['If-Match', tag]], body: body === undefined ? undefined : Buffer.from(body) });
        break;
      }
    }
  }
  return out;
}

/** Methods uWS 20.30 routes; it closes the connection on a request of any other method. */
const UWS_METHODS = new Set(['GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

/** What answers a request that never reaches the API, on each transport (undefined: the API answers).
 * - node:http: llhttp refuses a method it does not know and a byte outside visible ASCII in
 *   the target (400); the zonal server refuses, as nginx's large_client_header_buffers
 *   does, a request line above 8 KiB (414), a header line above 8 KiB or a head above
 *   32 KiB (400); it answers those with its
 *   nginx-style HTML page, as it does a target nginx would refuse before choosing a location
 *   (bad percent-encoding, a NUL, `..` above `/`: 400) and one whose `..` segments lead out
 *   of the /api/ location (404, no location there), CONNECT (400) and TRACE (405), as nginx.
 * - uWS: a method it does not route is closed unanswered (uWS has no handler to call), and
 *   its parser waits on a method that is not a token (as README says of HTTP/1.0) or on more
 *   headers than it keeps, until the idle timeout: counted as unanswered (closed or timed out);
 *   a head above 4 KiB (UWS_HTTP_MAX_HEADERS_SIZE) is refused only when it spans more
 *   than one read, so it may be closed or reach the API, by the segmentation of the moment;
 *   an unknown method with a body is closed. The admin listener answers every target it
 *   parses, even one it cannot normalise, with the API's JSON. */
function beforeApi(tr: Transport, f: Fuzz): 'page' | 'closed' | 'closed or api' | undefined {
  const head = f.method.length + f.path.length + 12 + f.headers.reduce((n, [k, v]) => n + k.length + v.length + 4, 0);
  if (tr.port === site) {
    // nginx answers CONNECT over HTTP/1.x with 400 and TRACE with 405, and so does the
    // zonal server, before any location.
    if (f.method === 'CONNECT' || f.method === 'TRACE') return 'page';
    const longLine = f.method.length + f.path.length + 10 > LINE_LIMIT || f.headers.some(([k, v]) => k.length + v.length + 4 > LINE_LIMIT);
    if (!LLHTTP_METHODS.has(f.method) || head > NODE_HEAD_LIMIT || longLine || /[^\x21-\x7e]/.test(f.path)) return 'page';
    const uri = normalizeUri(f.path);
    return uri === undefined || !uri.startsWith('/api/') ? 'page' : undefined;
  }
  // uWS 20.30 keeps 50 headers (its MAX_HEADERS); with more, its parser waits.
  if (!UWS_METHODS.has(f.method) || f.headers.length + (f.body ? 1 : 0) >= 50) return 'closed';
  return head > UWS_HEAD_LIMIT ? 'closed or api' : undefined;
}

interface Outcome {
  status?: number;
  contentType?: string;
  body?: Buffer;
  /** Closed (or reset) by the server with no status line. */
  closed?: boolean;
  timeout?: boolean;
}

function wire(f: Fuzz): Buffer {
  const headers = [...f.headers];
  if (f.body) headers.push(f.chunked ? ['Transfer-Encoding', 'chunked'] : ['Content-Length', String(f.body.length)]);
  const head = Buffer.from(`${f.method} ${f.path} HTTP/1.1\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`, 'latin1');
  if (!f.body) return head;
  if (!f.chunked) return Buffer.concat([head, f.body]);
  return Buffer.concat([head, Buffer.from(`${f.body.length.toString(16)}\r\n`), f.body, Buffer.from('\r\n0\r\n\r\n')]);
}

/** A keep-alive connection that sends one request at a time and reads its response. */
class Client {
  private socket: Socket | undefined;
  private buf: Buffer = Buffer.alloc(0);
  private onChange: (() => void) | undefined;
  private ended = false;

  constructor(private readonly port: number) {}

  private open(): Socket {
    const s = connect(this.port, '127.0.0.1');
    s.setNoDelay(true);
    this.buf = Buffer.alloc(0);
    this.ended = false;
    // Events of a socket dropped earlier must not touch the current one's state.
    s.on('data', (d) => this.socket === s && ((this.buf = Buffer.concat([this.buf, d])), this.onChange?.()));
    s.on('error', () => {});
    s.on('close', () => this.socket === s && ((this.ended = true), this.onChange?.()));
    return (this.socket = s);
  }

  drop(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }

  async send(f: Fuzz, ms = 5000): Promise<Outcome> {
    const s = this.socket && !this.ended ? this.socket : this.open();
    s.write(wire(f));
    const outcome = await new Promise<Outcome>((resolve) => {
      const timer = setTimeout(() => ((this.onChange = undefined), resolve({ timeout: true })), ms);
      const done = (o: Outcome) => ((this.onChange = undefined), clearTimeout(timer), resolve(o));
      this.onChange = () => {
        const parsed = this.parse(f.method === 'HEAD');
        if (parsed) done(parsed);
        else if (this.ended) done({ closed: true });
      };
      this.onChange();
    });
    if (outcome.closed || outcome.timeout || this.ended || this.buf.length > 0) this.drop();
    return outcome;
  }

  /** A whole response from the buffer (Content-Length or chunked), consumed; undefined if not yet complete. */
  private parse(head: boolean): Outcome | undefined {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const lines = this.buf.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0])?.[1]);
    const headers = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    let body: Buffer;
    let rest: Buffer;
    const start = end + 4;
    if (head) {
      body = Buffer.alloc(0);
      rest = this.buf.subarray(start);
    } else if (headers.has('content-length')) {
      const length = Number(headers.get('content-length'));
      if (this.buf.length < start + length) return undefined;
      body = this.buf.subarray(start, start + length);
      rest = this.buf.subarray(start + length);
    } else if (headers.get('transfer-encoding') === 'chunked') {
      const chunks: Buffer[] = [];
      let at = start;
      for (;;) {
        const eol = this.buf.indexOf('\r\n', at);
        if (eol < 0) return undefined;
        const size = parseInt(this.buf.subarray(at, eol).toString('latin1'), 16);
        if (this.buf.length < eol + 2 + size + 2) return undefined;
        if (size === 0) break;
        chunks.push(this.buf.subarray(eol + 2, eol + 2 + size));
        at = eol + 2 + size + 2;
      }
      body = Buffer.concat(chunks);
      rest = Buffer.alloc(0);
    } else {
      // No length: the body runs to the close.
      if (!this.ended) return undefined;
      body = this.buf.subarray(start);
      rest = Buffer.alloc(0);
    }
    this.buf = rest;
    if (headers.get('connection')?.toLowerCase() === 'close') this.ended = true;
    return { status, contentType: headers.get('content-type'), body };
  }
}

/** Whether an answer is the API's refusal: 4xx, JSON, { error, description } strings. */
function isApiRefusal(o: Outcome, head: boolean): boolean {
  if (o.status === undefined || o.status < 400 || o.status > 499 || o.contentType !== 'application/json') return false;
  if (head) return true;
  try {
    const body = JSON.parse(o.body!.toString('utf8'));
    return typeof body.error === 'string' && typeof body.description === 'string';
  } catch {
    return false;
  }
}

async function readConfig(): Promise<Buffer> {
  const c = new Client(admin);
  const o = await c.send({ category: '', method: 'GET', path: '/config/', headers: [['Host', `127.0.0.1:${admin}`]] });
  c.drop();
  if (o.status !== 200) throw new Error(`GET /config/: ${o.status}`);
  return o.body!;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

t.test('10,000+ generated bad requests on both transports: all refused with a JSON 4xx, nothing crashed, nothing changed', async (t) => {
  const configBefore = await readConfig();
  const primary = zonal.child.pid!;
  const workersBefore = zonal.workers();
  t.equal(workersBefore.length, 2, 'two workers');
  t.comment(`PIDs before: primary ${primary}, workers ${workersBefore.join(', ')}`);
  const started = Date.now();
  let total = 0;

  for (const [k, tr] of transports.entries()) {
    const requests = generate(tr, 13 + k, PER_TRANSPORT);
    const codes = new Map<string, number>();
    const byCategory = new Map<string, number>();
    const parserExpected: Fuzz[] = [];
    const problems: string[] = [];
    // Requests refused before the API (see beforeApi), and how many of them were.
    let refusedByParser = 0;
    let closed = 0;
    let timedOut = 0;
    let next = 0;
    const count = (m: Map<string, number>, key: string) => m.set(key, (m.get(key) ?? 0) + 1);
    const lane = async () => {
      const client = new Client(tr.port);
      while (next < requests.length) {
        const f = requests[next++];
        count(byCategory, f.category);
        const o = await client.send(f);
        const what = `${f.category}: ${f.method} ${f.path.slice(0, 120)} -> ${o.timeout ? 'timeout' : o.closed ? 'closed' : `${o.status} ${o.contentType} ${o.body?.subarray(0, 120)}`}`;
        if (o.status !== undefined) count(codes, `${o.status}${isApiRefusal(o, f.method === 'HEAD') ? '' : ' (not JSON)'}`);
        if (o.closed) closed++;
        if (o.timeout) timedOut++;
        const before = beforeApi(tr, f);
        if (before) {
          parserExpected.push(f);
          const page = o.status !== undefined && [400, 404, 405, 414, 431].includes(o.status) && o.contentType === 'text/html';
          const unanswered = !!(o.closed || (tr.port === admin && o.timeout));
          const ok = before === 'page' ? page : before === 'closed' ? unanswered : unanswered || isApiRefusal(o, false);
          if (ok && !isApiRefusal(o, false)) refusedByParser++;
          if (!ok) problems.push(`expected ${before}: ${what}`);
        } else if (!isApiRefusal(o, f.method === 'HEAD')) problems.push(what);
      }
      client.drop();
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
    total += requests.length;
    t.comment(`${tr.name}: ${requests.length} requests tried`);
    t.comment(`  by category: ${[...byCategory].map(([c, n]) => `${c} ${n}`).join(', ')}`);
    t.comment(`  status codes: ${[...codes].sort().map(([c, n]) => `${c}: ${n}`).join(', ')}`);
    t.comment(`  never reached the API (refused by the HTTP parser or the server before its location): ${refusedByParser} of ${parserExpected.length} that may not; of them closed without an answer: ${closed}, unanswered within 5 s: ${timedOut}`);
    t.same(problems.slice(0, 20), [], `${tr.name}: every request the API saw got a 4xx JSON { error, description }`);
    t.equal(problems.length, 0, `${tr.name}: no unexpected answer`);
  }
  t.comment(`total tried: ${total} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  t.ok(total >= 10_000, `${total} requests`);

  const workersAfter = zonal.workers();
  t.comment(`PIDs after: primary ${primary} (${alive(primary) ? 'alive' : 'DEAD'}), workers ${workersAfter.join(', ')}`);
  t.ok(alive(primary) && !zonal.exited, 'the primary is alive');
  t.same(workersAfter, workersBefore, '0 crashed workers: the same PIDs');
  const configAfter = await readConfig();
  t.ok(configAfter.equals(configBefore), `/config/ byte-identical (${configAfter.length} bytes)`);
  t.notMatch(zonal.log, /\[(error|crit|alert|emerg)\]|exited|Error:/, 'nothing went wrong in the log');
});
