// A chunked request body read in full before it is proxied, as nginx reads every body
// (its default, `proxy_request_buffering on`): held in memory up to
// client_body_buffer_size, written to a file of client_body_temp_path past it; refused
// with 413 past client_max_body_size, and with 408 when the client sends nothing for
// client_body_timeout. Only a chunked body: no header says its size, which nginx checks
// against client_max_body_size before anything goes to the peer. A body with a
// Content-Length (already checked against the limit) streams to the peer as it comes,
// with backpressure both ways, as zonal has always proxied it (nginx's
// `proxy_request_buffering off`).
import { createReadStream, createWriteStream, mkdirSync, unlink, type WriteStream } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { CoreSettings, TempPath } from './config.js';

const BODY = Symbol('zonal.body');
type Buffered = IncomingMessage & { [BODY]?: { readonly chunks?: Buffer[]; readonly file?: string } };

/** Whether the request has a body to read (RFC 9112 6.3). */
export const isChunked = (req: IncomingMessage): boolean => req.headers['transfer-encoding'] !== undefined;

/** Temporary files of this process: nginx's names are numbers, made unique per process. */
let sequence = 0;

/** `<path>/<levels...>/<name>` as nginx makes it: each level is that many characters
 * taken from the end of the name. */
function tempFile(temp: TempPath): string {
  const name = String(process.pid * 100_000 + (sequence++ % 100_000)).padStart(10, '0');
  let dir = temp.path;
  let end = name.length;
  for (const n of temp.levels) {
    dir = join(dir, name.slice(end - n, end));
    end -= n;
  }
  if (temp.levels.length > 0) mkdirSync(dir, { recursive: true, mode: 0o700 });
  return join(dir, name);
}

/**
 * Reads the request's (chunked) body, then calls `done(0)`; or `done(413)`, `done(408)`,
 * `done(500)` when nginx would answer so. A file written is removed when the request's
 * response closes.
 */
export function readBody(req: IncomingMessage, core: CoreSettings, onClose: (listener: () => void) => void, done: (status: number) => void): void {
  const max = core.clientMaxBodySize;
  const chunks: Buffer[] = [];
  let size = 0;
  let file: WriteStream | undefined;
  let path: string | undefined;
  let over = false;
  const finish = (status: number) => {
    if (over) return;
    over = true;
    clearTimeout(timer);
    req.removeListener('data', onData);
    req.removeListener('end', onEnd);
    if (status !== 0) {
      // What is left of the body is not read: the answer closes the connection.
      req.pause();
      file?.destroy();
      return done(status);
    }
    (req as Buffered)[BODY] = path !== undefined ? { file: path } : { chunks };
    done(0);
  };
  let timer = setTimeout(() => finish(408), core.clientBodyTimeout);
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (max > 0 && size > max) return finish(413);
    timer.refresh();
    if (file) {
      if (!file.write(chunk)) {
        req.pause();
        file.once('drain', () => req.resume());
      }
      return;
    }
    chunks.push(chunk);
    if (size > core.clientBodyBufferSize && core.clientBodyTempPath) {
      try {
        path = tempFile(core.clientBodyTempPath);
      } catch {
        return finish(500);
      }
      const written = path;
      onClose(() => unlink(written, () => {}));
      file = createWriteStream(written, { mode: 0o600 });
      file.on('error', () => finish(500));
      for (const c of chunks.splice(0)) file.write(c);
    }
  };
  const onEnd = () => {
    if (!file) return finish(0);
    clearTimeout(timer);
    file.end(() => finish(0));
  };
  req.on('data', onData);
  req.on('end', onEnd);
}

/** `$request_body`: the body readBody() held in memory, one character per byte; none for
 * one it wrote to a file or did not read (streamed), as nginx's has none unless the body
 * was read into a memory buffer. */
export function bufferedBody(req: IncomingMessage): string | undefined {
  const chunks = (req as Buffered)[BODY]?.chunks;
  return chunks && Buffer.concat(chunks).toString('latin1');
}

/** The body to send upstream: the one readBody() read (from memory or its file), else
 * the request itself, streamed. */
export function requestBody(req: IncomingMessage): NodeJS.ReadableStream {
  const read = (req as Buffered)[BODY];
  if (!read) return req;
  return read.file !== undefined ? createReadStream(read.file) : Readable.from(read.chunks!, { objectMode: false });
}
