// The log files a process writes: one sonic-boom writer per path (the error log and every
// access_log naming it share it), opened in append mode so that the lines of every worker
// land whole in one file (O_APPEND, as nginx's workers write theirs). Writes never block
// the event loop; USR1 reopens them all (logrotate's postrotate), and a process that
// exits writes out what it still holds.
import { appendFileSync } from 'node:fs';
import sonicBoom from 'sonic-boom';

// sonic-boom is CommonJS: its class is the module, and its typings name it SonicBoom.
const SonicBoom = sonicBoom.SonicBoom;
/** What zonal uses of a writer, `fd` and `destroyed` included (the typings leave them out). */
type Writer = InstanceType<typeof SonicBoom> & { readonly fd: number; readonly destroyed: boolean };

class LogFile {
  readonly boom: Writer;
  /** An error was told, and not since the file opened again. */
  private failed = false;
  /** Bytes handed to the writer, and bytes it wrote (its 'write' event): equal when it
   * holds none. */
  private handed = 0;
  private written = 0;

  constructor(readonly path: string) {
    // Bytes, not strings: a `buffer=` chunk is handed over as the Buffer it was gathered
    // in. Lines written while a write is in flight are joined up to sonic-boom's 16k; a
    // chunk larger than that stays one piece, one write(2) of whole lines.
    this.boom = new SonicBoom({ dest: path, append: true, sync: false, minLength: 0, contentMode: 'buffer' }) as Writer;
    // A file that cannot be opened or written (a missing directory, a full disk) is told
    // once on standard error; it never takes the process down.
    this.boom.on('error', (e: Error) => {
      if (this.failed) return;
      this.failed = true;
      process.stderr.write(`zonal: [error] log file "${path}": ${e.message}\n`);
    });
    this.boom.on('ready', () => (this.failed = false));
    this.boom.on('write', (n: number) => (this.written += n));
  }

  write(text: string): void {
    this.writeBytes(Buffer.from(text));
  }

  /** Bytes the caller does not touch until the writer is `idle`. */
  writeBytes(bytes: Buffer): void {
    if (this.boom.destroyed) return;
    this.handed += bytes.length;
    this.boom.write(bytes as unknown as string);
  }

  /** Everything handed over is written: the writer holds no bytes of its callers. */
  get idle(): boolean {
    return this.written === this.handed;
  }

  /** At exit: whatever is still queued, synchronously. */
  flushSync(): void {
    try {
      this.boom.flushSync();
    } catch {
      // Not open yet (or gone): what it holds is lost with the process either way.
    }
  }
}

const files = new Map<string, LogFile>();
/** The `buffer=` writers, flushed before a reopen and at exit. */
const buffers = new Set<LineBuffer>();

/** The process's writer of `path` (absolute), opened at its first use. */
export function logFile(path: string): LogFile {
  let f = files.get(path);
  if (!f) files.set(path, (f = new LogFile(path)));
  return f;
}

export type { LogFile };

/**
 * access_log's `buffer=size [flush=time]`: lines gathered in memory and handed to the file
 * as one write when the next one would not fit, when the oldest has waited `flush`, at a
 * reopen and at exit (nginx's rules). Each line is copied into the buffer's bytes as it
 * comes, so that its string dies young: strings kept until a flush would each outlive a
 * few hundred requests and burden the garbage collector.
 */
export class LineBuffer {
  private bytes: Buffer;
  /** Bytes filled: where the next line starts. */
  used = 0;
  /** The bytes of the last flush: the next flush's, once the file has written them. */
  private spare: Buffer | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly file: LogFile,
    private readonly size: number,
    private readonly flushMs: number,
  ) {
    this.bytes = Buffer.allocUnsafeSlow(size);
    buffers.add(this);
  }

  /** A line of one character per byte. */
  write(line: string): void {
    if (line.length > this.size - this.used) {
      if (this.used > 0) this.flush();
      // A line larger than the whole buffer goes as it is.
      if (line.length > this.size) return this.file.writeBytes(Buffer.from(line, 'latin1'));
    }
    this.used += this.bytes.write(line, this.used, 'latin1');
    this.held();
  }

  /** Room for a line of at most `n` bytes at `used` in the bytes returned, written to
   * with `wrote`; undefined when it may not fit, for `write` to measure it. */
  room(n: number): Buffer | undefined {
    return n <= this.size - this.used ? this.bytes : undefined;
  }

  /** The line given `room` ends at `end`. */
  wrote(end: number): void {
    this.used = end;
    this.held();
  }

  /** A line is held: flush= starts counting, if it has not. */
  private held(): void {
    if (this.flushMs > 0 && this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  flush(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.used === 0) return;
    // The filled bytes are the writer's until written: the next lines go to those of the
    // flush before when the file has written everything (as it has, nearly always, a
    // buffer's worth of lines later), else to new ones. Bytes used again cost no
    // allocation, no page faults and no garbage.
    const full = this.bytes;
    const next = this.spare !== undefined && this.file.idle ? this.spare : Buffer.allocUnsafeSlow(this.size);
    this.file.writeBytes(full.subarray(0, this.used));
    this.spare = full;
    this.bytes = next;
    this.used = 0;
  }

  /** At exit, when the file may not be open yet. */
  flushSync(): void {
    if (this.used === 0) return;
    const full = this.bytes.subarray(0, this.used);
    this.used = 0;
    try {
      if (this.file.boom.fd >= 0) {
        this.file.writeBytes(full);
        this.file.flushSync();
      } else appendFileSync(this.file.path, full);
    } catch {
      // nothing more to do at exit
    }
  }
}

/** USR1: every file closed and opened again by its name; a file renamed away (logrotate)
 * is left with what was written before, and new lines go to a new file of the name. */
export function reopenLogFiles(): void {
  for (const b of buffers) b.flush();
  for (const f of files.values()) {
    try {
      f.boom.reopen();
    } catch (e) {
      process.stderr.write(`zonal: [error] reopening "${f.path}": ${(e as Error).message}\n`);
    }
  }
}

function flushAllSync(): void {
  for (const b of buffers) b.flushSync();
  for (const f of files.values()) f.flushSync();
}

process.once('exit', flushAllSync);
