// access_log at run time: each place's formats compiled once into functions of the
// request's record, and one line written per request when its response is over (sent,
// or cut short), the way nginx's log phase runs. The data plane calls noteRequest once
// the request's place is known and logRequest where it counts the response.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { connectionNumber, countRequest } from '../core/connection.js';
import { streamVariables } from '../config/variables.js';
import { markStart } from '../http/variables.js';
import type { Inherited } from '../config/model.js';
import type { AccessLogSpec, Escape, LogFormat } from './config.js';
import { LineBuffer, logFile } from './files.js';
import { attemptsOf, traceUpstreams } from './upstream-trace.js';
import { isUpstreamVariable, logVariable, type LogRecord } from './variables.js';
import type { StreamRecord } from '../stream/variables.js';

// `$name` or `${name}`, as the configuration's check reads them.
const VARIABLE = /\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g;

const hex = (c: number) => `\\x${c.toString(16).toUpperCase().padStart(2, '0')}`;

/** nginx's `escape=default`: `"`, `\`, control characters and bytes above 0x7e as \xXX;
 * `escape=json`: what a JSON string cannot hold as it is. */
const ESCAPES: Record<Escape, (s: string) => string> = {
  default: (s) => (/^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(s) ? s : [...Buffer.from(s)].map((b) => (b < 0x20 || b > 0x7e || b === 0x22 || b === 0x5c ? hex(b) : String.fromCharCode(b))).join('')),
  json: (s) => (/^[^"\\\x00-\x1f]*$/.test(s) ? s : JSON.stringify(s).slice(1, -1)),
  none: (s) => s,
};

type Line<R = LogRecord> = (r: R) => string;

/** A format as one function: text and variables in order; a variable nginx does not find
 * is `-` (nothing under `escape=json`), a found one is escaped. */
function compileFormat<R = LogRecord>(format: LogFormat, lookup: (name: string) => ((r: R) => string | undefined) | undefined = logVariable as never): Line<R> {
  const escape = ESCAPES[format.escape];
  const missing = format.escape === 'json' ? '' : '-';
  const parts: Array<string | ((r: R) => string | undefined)> = [];
  let last = 0;
  for (const m of format.text.matchAll(VARIABLE)) {
    if (m.index > last) parts.push(format.text.slice(last, m.index));
    parts.push(lookup(m[1] ?? m[2]) ?? (() => undefined));
    last = m.index + m[0].length;
  }
  if (last < format.text.length) parts.push(format.text.slice(last));
  return (r) => {
    let out = '';
    for (const p of parts) {
      if (typeof p === 'string') out += p;
      else {
        const v = p(r);
        out += v === undefined ? missing : v === '' ? '' : escape(v);
      }
    }
    return out + '\n';
  };
}

/** `if=`: its text evaluated; a line is written unless it is empty or "0". */
function compileCondition<R>(text: string, lookup: (name: string) => ((r: R) => string | undefined) | undefined): (r: R) => boolean {
  const line = compileFormat<R>({ name: '', escape: 'none', text }, lookup);
  return (r) => {
    const v = line(r);
    return v !== '\n' && v !== '0\n' && v !== '-\n';
  };
}

interface Writer<R = LogRecord> {
  readonly line: Line<R>;
  readonly out: { write(text: string): void };
  readonly condition?: (r: R) => boolean;
}

/** What a place logs: its access logs, compiled. */
export interface PlaceLog {
  readonly writers: readonly Writer[];
  readonly serverName: string;
}

const compiled = new Map<string, Line<never>>();
const buffered = new Map<string, LineBuffer>();

function writerOf<R = LogRecord>(spec: AccessLogSpec, lookup: (name: string) => ((r: R) => string | undefined) | undefined = logVariable as never, module = 'http'): Writer<R> {
  const key = `${module}\0${spec.format.escape}\0${spec.format.text}`;
  let line = compiled.get(key) as Line<R> | undefined;
  if (!line) compiled.set(key, (line = compileFormat<R>(spec.format, lookup)) as Line<never>);
  let out: Writer['out'];
  if (spec.buffer > 0) {
    // Logs of one path with one buffer= and flush= share the buffer, as one file's lines.
    const b = `${spec.path}\0${spec.buffer}\0${spec.flush}`;
    let buffer = buffered.get(b);
    if (!buffer) buffered.set(b, (buffer = new LineBuffer(logFile(spec.path), spec.buffer, spec.flush)));
    out = buffer;
  } else out = logFile(spec.path);
  if (spec.condition === undefined) return { line, out };
  return { line, out, condition: compileCondition<R>(spec.condition, lookup) };
}

/** A stream server's access logs, compiled; undefined when it logs nothing. */
export function streamLog(specs: readonly AccessLogSpec[] | undefined): ReadonlyArray<Writer<StreamRecord>> | undefined {
  return specs?.length ? specs.map((s) => writerOf<StreamRecord>(s, (name) => streamVariables.get(name), 'stream')) : undefined;
}

/** A stream session is over: its line in each of its server's logs. */
export function logSession(writers: ReadonlyArray<Writer<StreamRecord>>, record: StreamRecord): void {
  for (const w of writers) {
    if (w.condition && !w.condition(record)) continue;
    w.out.write(w.line(record));
  }
}

/** The log of a place (a location, an `if` block, a server), undefined when it logs nothing. */
export function placeLog(config: Inherited, serverName: string): { log?: PlaceLog } {
  const specs = config.accessLogs;
  if (!specs?.length) return {};
  if (specs.some((s) => [...(s.format.text + (s.condition ?? '')).matchAll(VARIABLE)].some((m) => isUpstreamVariable(m[1] ?? m[2])))) traceUpstreams(true);
  return { log: { writers: specs.map((s) => writerOf(s)), serverName } };
}

const NOTE = Symbol('zonal.accessLog');
const READ = Symbol('zonal.bytesReadAtRequest');
interface Note {
  readonly log: PlaceLog;
  readonly uri: string;
  readonly start: number;
  readonly requests: number;
  readonly pipelined: boolean;
}
type Noted = ServerResponse & { [NOTE]?: Note };
type Numbered = Socket & { [READ]?: number };

/** A request reached its place (`log` is the place's): its line is written when its
 * response is over. Every request counts in its connection's `$connection_requests`. */
export function noteRequest(res: ServerResponse, place: { readonly log?: PlaceLog }, uri: string | undefined): void {
  const socket = res.req.socket as Numbered;
  const requests = countRequest(socket);
  // $request_time in the phases before the log's counts from here.
  const start = performance.now();
  markStart(res, start);
  const log = place.log;
  if (!log) return;
  // A request that came with no read since the last one logged was pipelined ($pipe).
  const read = socket.bytesRead;
  const pipelined = requests > 1 && socket[READ] === read;
  socket[READ] = read;
  (res as Noted)[NOTE] = { log, uri: uri ?? res.req.url ?? '', start, requests, pipelined };
}

/** The response is over: `received` and `written` are its bytes on the connection. */
export function logRequest(res: ServerResponse, received: number, written: number): void {
  const note = (res as Noted)[NOTE];
  if (!note) return;
  (res as Noted)[NOTE] = undefined;
  const req = res.req;
  const socket = req.socket as Numbered;
  const upstream = attemptsOf(res);
  const record: LogRecord = {
    req,
    res,
    uri: note.uri,
    serverName: note.log.serverName,
    start: note.start,
    received,
    written,
    connection: connectionNumber(socket),
    connectionRequests: note.requests,
    pipelined: note.pipelined,
    ...(upstream ? { upstream } : {}),
  };
  for (const w of note.log.writers) {
    if (w.condition && !w.condition(record)) continue;
    w.out.write(w.line(record));
  }
}
