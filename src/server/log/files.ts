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

  constructor(readonly path: string) {
    // Lines written while a write is in flight are joined up to sonic-boom's 16k; a
    // `buffer=` chunk larger than that stays one piece, one write(2) of whole lines.
    this.boom = new SonicBoom({ dest: path, append: true, sync: false, minLength: 0 }) as Writer;
    // A file that cannot be opened or written (a missing directory, a full disk) is told
    // once on standard error; it never takes the process down.
    this.boom.on('error', (e: Error) => {
      if (this.failed) return;
      this.failed = true;
      process.stderr.write(`zonal: [error] log file "${path}": ${e.message}\n`);
    });
    this.boom.on('ready', () => (this.failed = false));
  }

  write(text: string): void {
    if (this.boom.destroyed) return;
    this.boom.write(text);
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
 * reopen and at exit (nginx's rules). Lines are kept as one string: its length in bytes
 * is counted line by line, never rescanned.
 */
export class LineBuffer {
  private text = '';
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly file: LogFile,
    private readonly size: number,
    private readonly flushMs: number,
  ) {
    buffers.add(this);
  }

  write(line: string): void {
    const n = line.length;
    if (this.bytes + n > this.size && this.bytes > 0) this.flush();
    this.text += line;
    // Lines are ASCII but under `escape=none` (UTF-8): counted as characters until then.
    this.bytes += n;
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
    if (this.bytes === 0) return;
    const text = this.text;
    this.text = '';
    this.bytes = 0;
    this.file.write(text);
  }

  /** At exit, when the file may not be open yet. */
  flushSync(): void {
    if (this.bytes === 0) return;
    const text = this.text;
    this.text = '';
    this.bytes = 0;
    try {
      if (this.file.boom.fd >= 0) {
        this.file.write(text);
        this.file.flushSync();
      } else appendFileSync(this.file.path, text);
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
