// access_log at run time: each place's formats compiled once into functions of the
// request's record, and one line written per request when its response is over (sent,
// or cut short), the way nginx's log phase runs. The data plane calls noteRequest once
// the request's place is known and logRequest where it counts the response.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { connectionNumber, countRequest } from '../core/connection.js';
import { streamVariables } from '../config/variables.js';
import { markStart, requestsTimed, timeRequests } from '../http/variables.js';
import type { Inherited } from '../config/model.js';
import type { AccessLogSpec, Escape, LogFormat } from './config.js';
import { wireBytes } from '../core/bytes.js';
import { LineBuffer, logFile } from './files.js';
import { attemptsOf, traceUpstreams } from './upstream-trace.js';
import { isUpstreamVariable, logVariable, type LogRecord } from './variables.js';
import type { StreamRecord } from '../stream/variables.js';

// `$name` or `${name}`, as the configuration's check reads them.
const VARIABLE = /\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g;

const hex = (c: number) => `\\x${c.toString(16).toUpperCase().padStart(2, '0')}`;

// A line is written as bytes, one character each (core/bytes.ts): every value is made one
// before it is written, the format's own text is its UTF-8, and a value that is plain
// ASCII, as nearly all are, passes its test unchanged.
const PRINTABLE = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/;
const JSON_SAFE = /^[^"\\\x00-\x1f\u0100-\uffff]*$/;

function escapeBytes(s: string): string {
  const b = wireBytes(s);
  let out = '';
  for (let i = 0; i < b.length; i++) {
    const c = b.charCodeAt(i);
    out += c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c ? hex(c) : b[i];
  }
  return out;
}

/** nginx's `escape=default`: `"`, `\`, control characters and bytes above 0x7e as \xXX;
 * `escape=json`: what a JSON string cannot hold (bytes above 0x7f go as they are, as
 * nginx writes them); `escape=none`: the bytes as they are. */
const ESCAPES: Record<Escape, (s: string) => string> = {
  default: (s) => (PRINTABLE.test(s) ? s : escapeBytes(s)),
  json: (s) => (JSON_SAFE.test(s) ? s : JSON.stringify(wireBytes(s)).slice(1, -1)),
  none: wireBytes,
};

type Line<R = LogRecord> = (r: R) => string;
type Lookup<R> = (name: string) => ((r: R) => string | undefined) | undefined;

/** A format compiled: its line as a string, and the same line written straight into a
 * `buffer=`'s bytes. */
interface Compiled<R> {
  readonly line: Line<R>;
  readonly put: (r: R, out: LineBuffer) => void;
}

/** `$request` is written as the parts it is made of (http/variables.ts's requestLine),
 * each a string the request already has: no line of them is made for each request. */
const PARTS: Readonly<Record<string, string>> = { request: '$request_method $request_uri $server_protocol' };

/** A format's text cut at its variables: `texts` has one more item than `names`. */
function pieces(format: string): { texts: string[]; names: string[] } {
  const text = format.replace(VARIABLE, (whole, braced?: string, bare?: string) => PARTS[braced ?? bare!] ?? whole);
  const texts: string[] = [];
  const names: string[] = [];
  let last = 0;
  for (const m of text.matchAll(VARIABLE)) {
    texts.push(text.slice(last, m.index));
    names.push(m[1] ?? m[2]);
    last = m.index + m[0].length;
  }
  texts.push(text.slice(last) + '\n');
  return { texts, names };
}

/** Writes the byte string `s` at `p` of `b`, which has room for it; returns its end. A
 * short value byte by byte (a call into the encoder costs more than its bytes), a longer
 * one through the encoder, which copies it whole (a JS loop over a string made of pieces
 * walks them for every char). */
function putString(b: Buffer, p: number, s: string): number {
  if (s.length > 16) return p + b.write(s, p, 'latin1');
  for (let i = 0; i < s.length; i++) b[p + i] = s.charCodeAt(i);
  return p + s.length;
}

/**
 * A format as functions of the record: text and variables in order; a variable nginx does
 * not find is `-` (nothing under `escape=json` and `escape=none`, as nginx), a found one is escaped. They are written
 * once per format (no array walked, no piece tested per line), and each variable keeps
 * its last value and that value escaped: a variable's value is often the one of the line
 * before (the time, the client's address, the status, the user agent), and testing it for
 * escapes is what a line cost most. `put` writes the line into a buffer's bytes as it
 * goes, the format's text as constant bytes: building the string and encoding it cost
 * more than the rest of the line.
 */
function compileFormat<R = LogRecord>(format: LogFormat, lookup: Lookup<R> = logVariable as never): Compiled<R> {
  const { texts, names } = pieces(format.text);
  const none = format.escape === 'none';
  const bytes = texts.map((t) => Buffer.from(t));
  // Outside the functions: each variable's function, and (escaping) its last value and
  // that value escaped. `l` starts as null, which no variable returns.
  let outer = '';
  // The variables' values as the line shows them, `e0`, `e1`...
  let values = '';
  bytes.forEach((t, i) => {
    if (t.length > 32) outer += `const t${i} = t[${i}];\n`;
  });
  for (let i = 0; i < names.length; i++) {
    outer += `const f${i} = a[${i}];\n`;
    if (none) values += `const v${i} = f${i}(r), e${i} = v${i} === undefined ? m : x(v${i});\n`;
    else {
      // k: the value's bytes, kept while it repeats (a long one is copied, not encoded again).
      outer += `let l${i} = null, e${i} = '', w${i} = null, k${i} = null;\n`;
      values += `const v${i} = f${i}(r);\nif (v${i} !== l${i}) { l${i} = v${i}; e${i} = v${i} === undefined ? m : v${i} === '' ? '' : x(v${i}); }\n`;
    }
  }
  const e = names.map((_, i) => `e${i}`);
  const line = bytes.map((t, i) => JSON.stringify(t.toString('latin1')) + (i < e.length ? ` + ${e[i]}` : '')).join(' + ');
  // One byte a character: the room a line takes.
  const room = [String(bytes.reduce((n, t) => n + t.length, 0)), ...e.map((v) => `${v}.length`)].join(' + ');
  let put = '';
  bytes.forEach((t, i) => {
    // Short text as stores of constants, longer as a loop (a call to copy costs more).
    if (t.length <= 32) for (const c of t) put += `b[p++] = ${c};\n`;
    else put += `for (let i = 0; i < ${t.length}; i++) b[p + i] = t${i}[i];\np += ${t.length};\n`;
    if (i < e.length) {
      if (none) put += `p = s(b, p, ${e[i]});\n`;
      else put += `if (${e[i]}.length <= 16) p = s(b, p, ${e[i]});\nelse {\nif (w${i} !== ${e[i]}) { w${i} = ${e[i]}; k${i} = Buffer.from(${e[i]}, 'latin1'); }\nb.set(k${i}, p);\np += k${i}.length;\n}\n`;
    }
  });
  const make = new Function(
    'a',
    'x',
    'm',
    't',
    's',
    `${outer}return {
line(r) {\n${values}return ${line};\n},
put(r, o) {\n${values}const b = o.room(${room});
if (b === undefined) return o.write(${line});
let p = o.used;\n${put}o.wrote(p);\n},
};`,
  );
  return make(
    names.map((n) => lookup(n) ?? (() => undefined)),
    ESCAPES[format.escape],
    format.escape === 'default' ? '-' : '',
    bytes,
    putString,
  ) as Compiled<R>;
}

/** `if=`: its text evaluated; a line is written unless it is empty or "0". */
function compileCondition<R>(text: string, lookup: Lookup<R>): (r: R) => boolean {
  const { line } = compileFormat<R>({ name: '', escape: 'none', text }, lookup);
  return (r) => {
    const v = line(r);
    return v !== '\n' && v !== '0\n' && v !== '-\n';
  };
}

interface Writer<R = LogRecord> {
  /** The request's line into its log. */
  readonly write: (r: R) => void;
  readonly condition?: (r: R) => boolean;
}

/** What a place logs: its access logs, compiled. */
export interface PlaceLog {
  readonly writers: readonly Writer[];
  readonly serverName: string;
}

const compiled = new Map<string, Compiled<never>>();
const buffered = new Map<string, LineBuffer>();

function writerOf<R = LogRecord>(spec: AccessLogSpec, lookup: Lookup<R> = logVariable as never, module = 'http'): Writer<R> {
  const key = `${module}\0${spec.format.escape}\0${spec.format.text}`;
  let format = compiled.get(key) as Compiled<R> | undefined;
  if (!format) compiled.set(key, (format = compileFormat<R>(spec.format, lookup)) as Compiled<never>);
  let write: Writer<R>['write'];
  if (spec.buffer > 0) {
    // Logs of one path with one buffer= and flush= share the buffer, as one file's lines.
    const b = `${spec.path}\0${spec.buffer}\0${spec.flush}`;
    let buffer = buffered.get(b);
    if (!buffer) buffered.set(b, (buffer = new LineBuffer(logFile(spec.path), spec.buffer, spec.flush)));
    const { put } = format;
    write = (r) => put(r, buffer);
  } else {
    const { line } = format;
    const file = logFile(spec.path);
    write = (r) => file.writeBytes(Buffer.from(line(r), 'latin1'));
  }
  if (spec.condition === undefined) return { write };
  return { write, condition: compileCondition<R>(spec.condition, lookup) };
}

/** A stream server's access logs, compiled; undefined when it logs nothing. */
export function streamLog(specs: readonly AccessLogSpec[] | undefined): ReadonlyArray<Writer<StreamRecord>> | undefined {
  return specs?.length ? specs.map((s) => writerOf<StreamRecord>(s, (name) => streamVariables.get(name), 'stream')) : undefined;
}

/** A stream session is over: its line in each of its server's logs. */
export function logSession(writers: ReadonlyArray<Writer<StreamRecord>>, record: StreamRecord): void {
  for (const w of writers) {
    if (w.condition && !w.condition(record)) continue;
    w.write(record);
  }
}

/** Some log of the process names $pipe: each logged request's connection keeps how far
 * it had read (kept process-wide, as the connection's requests may log in other places). */
let piping = false;

/** The log of a place (a location, an `if` block, a server), undefined when it logs nothing. */
export function placeLog(config: Inherited, serverName: string): { log?: PlaceLog } {
  const specs = config.accessLogs;
  if (!specs?.length) return {};
  const names = new Set(specs.flatMap((s) => [...pieces(s.format.text).names, ...pieces(s.condition ?? '').names]));
  if ([...names].some(isUpstreamVariable)) traceUpstreams(true);
  if (names.has('pipe')) piping = true;
  if (names.has('request_time')) timeRequests();
  return { log: { writers: specs.map((s) => writerOf(s)), serverName } };
}

const NOTE = Symbol('zonal.accessLog');
const READ = Symbol('zonal.bytesReadAtRequest');
/** A request's record, made when it reaches its place and completed when it is over;
 * every field is set from the start, so that all records have one shape. */
type Pending = { -readonly [K in keyof LogRecord]: LogRecord[K] } & { readonly writers: readonly Writer[] };
type Noted = ServerResponse & { [NOTE]?: Pending };
type Numbered = Socket & { [READ]?: number };

/** A request reached its place (`log` is the place's): its line is written when its
 * response is over. Every request counts in its connection's `$connection_requests`.
 * What only $pipe reads (the connection's reads) is taken only when a format names it. */
export function noteRequest(res: ServerResponse, place: { readonly log?: PlaceLog }, uri: string): void {
  const req = res.req;
  const socket = req.socket as Numbered;
  const requests = countRequest(socket);
  // $request_time, in the log or before it, counts from here (when some value names it).
  const start = requestsTimed() ? performance.now() : 0;
  if (start !== 0) markStart(res, start);
  const log = place.log;
  if (!log) return;
  let pipelined = false;
  if (piping) {
    // A request that came with no read since the last one logged was pipelined ($pipe).
    const read = socket.bytesRead;
    pipelined = requests > 1 && socket[READ] === read;
    socket[READ] = read;
  }
  (res as Noted)[NOTE] = {
    req,
    res,
    uri,
    serverName: log.serverName,
    start,
    received: 0,
    written: 0,
    connection: connectionNumber(socket),
    connectionRequests: requests,
    pipelined,
    upstream: undefined,
    writers: log.writers,
  };
}

/** The response is over: `received` and `written` are its bytes on the connection. */
export function logRequest(res: ServerResponse, received: number, written: number): void {
  const record = (res as Noted)[NOTE];
  if (!record) return;
  (res as Noted)[NOTE] = undefined;
  record.received = received;
  record.written = written;
  record.upstream = attemptsOf(res);
  for (const w of record.writers) {
    if (w.condition && !w.condition(record)) continue;
    w.write(record);
  }
}
