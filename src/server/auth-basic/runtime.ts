// `auth_basic` with an htpasswd `auth_basic_user_file`, read as nginx reads it and checked
// with the password schemes nginx's ngx_crypt knows. The file is kept in memory and read
// again only when a stat (at most one per interval) shows it changed; successful
// verifications are remembered, so bcrypt's cost is paid once per credentials and hash.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { TextDecoder } from 'node:util';
import type { BasicAuthConfig } from '../config/model.js';
import { desCrypt } from './des-crypt.js';
import { shaCrypt } from './sha-crypt.js';

// bcryptjs and apache-md5 load with the first hash of theirs checked, not with every
// worker (the configuration's modules import this one): a worker's start is mostly
// loading (issue 32).
const require = createRequire(import.meta.url);
let aprMd5: typeof import('apache-md5') | undefined;

export interface BasicAuthOptions {
  /** How long one stat of the user file stands, in milliseconds: 1000. */
  readonly statInterval?: number;
  /** A clock in milliseconds (performance.now): tests move time without waiting. */
  readonly now?: () => number;
}

export interface Credentials {
  readonly user: string;
  readonly password: string;
}

/** Successful verifications remembered: enough for the active users of a site. */
const verifiedLimit = 256;

export class BasicAuth {
  private readonly userFile: string;
  private readonly statInterval: number;
  private readonly now: () => number;
  private readonly header: string;
  private users: ReadonlyMap<string, string> | undefined;
  /** dev, inode, size and mtime of the file the table was read from; '' when unreadable. */
  private signature = '';
  /** What nginx answers while the file cannot be read: 403 when it does not exist, 500
   * for any other failure (a directory, no permission). */
  private unreadable: 403 | 500 | undefined;
  private statedAt = -Infinity;
  private reading: Promise<ReadonlyMap<string, string>> | undefined;
  /** user, hash and sha256(password) -> true; in order of use, oldest first. */
  private readonly verified = new Map<string, true>();
  /** The same credentials arriving together wait for one bcrypt run. */
  private readonly verifying = new Map<string, Promise<boolean>>();

  constructor(config: BasicAuthConfig, options: BasicAuthOptions = {}) {
    this.userFile = config.userFile;
    this.statInterval = options.statInterval ?? 1000;
    this.now = options.now ?? (() => performance.now());
    this.header = basicChallenge(config.realm);
  }

  /** Whether the Authorization header names a user of the file with the right password.
   * Never rejects: a missing file, a malformed header or hash answer false. */
  async check(authorization: string | undefined): Promise<boolean> {
    return (await this.verdict(authorization)) === 0;
  }

  /** nginx's answer: 0 lets the request in; 401 for credentials absent (the file is not
   * read then) or wrong; 403 when the file does not exist, 500 when it cannot be read.
   * Never rejects. */
  async verdict(authorization: string | undefined): Promise<0 | 401 | 403 | 500> {
    const credentials = parseAuthorization(authorization);
    if (credentials === undefined) return 401;
    try {
      const users = await this.userTable();
      if (this.unreadable) return this.unreadable;
      const hash = users.get(credentials.user);
      if (hash === undefined) return 401;
      return (await this.verify(credentials.user, hash, credentials.password)) ? 0 : 401;
    } catch {
      return 401;
    }
  }

  /** The WWW-Authenticate value of a 401. */
  challenge(): string {
    return this.header;
  }

  private userTable(): ReadonlyMap<string, string> | Promise<ReadonlyMap<string, string>> {
    if (this.users !== undefined && this.now() - this.statedAt < this.statInterval) return this.users;
    return (this.reading ??= this.read().finally(() => {
      this.reading = undefined;
    }));
  }

  private async read(): Promise<ReadonlyMap<string, string>> {
    this.statedAt = this.now();
    try {
      const stats = await stat(this.userFile);
      const signature = `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
      // Should the file change between the stat and the read, the next stat sees a newer
      // signature than the one kept and reads it again.
      if (signature !== this.signature || this.users === undefined) {
        this.users = parseUserFile(await readFile(this.userFile, 'utf8'));
        this.signature = signature;
      }
      this.unreadable = undefined;
    } catch (e) {
      this.users = new Map();
      this.signature = '';
      this.unreadable = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 403 : 500;
    }
    return this.users;
  }

  private verify(user: string, hash: string, password: string): boolean | Promise<boolean> {
    // Lengths first, so that no two triples make the same key.
    const key = `${user.length}:${user}${hash.length}:${hash}${createHash('sha256').update(password).digest('base64')}`;
    if (this.verified.delete(key)) {
      this.verified.set(key, true);
      return true;
    }
    const pending = this.verifying.get(key);
    if (pending !== undefined) return pending;
    const result = verifyPassword(password, hash);
    if (typeof result === 'boolean') {
      if (result) this.remember(key);
      return result;
    }
    const settled = result.then(
      (ok) => {
        if (ok) this.remember(key);
        return ok;
      },
      () => false,
    );
    this.verifying.set(key, settled);
    void settled.finally(() => this.verifying.delete(key));
    return settled;
  }

  private remember(key: string): void {
    if (this.verified.size >= verifiedLimit) {
      const oldest = this.verified.keys().next();
      if (!oldest.done) this.verified.delete(oldest.value);
    }
    this.verified.set(key, true);
  }
}

/** The WWW-Authenticate value of a 401 for `realm`. */
export const basicChallenge = (realm: string): string => `Basic realm="${quoteRealm(realm)}"`;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** `Basic <base64 of user:password>`, as nginx takes it: the scheme in any case, a user that
 * is not empty, the password after the first colon. Bytes that are not UTF-8 are refused:
 * decoded loosely, two different passwords could become the same string. */
export function parseAuthorization(authorization: string | undefined): Credentials | undefined {
  if (authorization === undefined) return undefined;
  const match = /^basic +([A-Za-z0-9+/]+)(={0,2})$/i.exec(authorization);
  if (match === null) return undefined;
  const data = match[1] as string;
  const padding = match[2] as string;
  if (data.length % 4 === 1 || (padding.length > 0 && (data.length + padding.length) % 4 !== 0)) return undefined;
  const decoded = Buffer.from(data, 'base64');
  const colon = decoded.indexOf(0x3a);
  if (colon <= 0) return undefined;
  try {
    return { user: utf8.decode(decoded.subarray(0, colon)), password: utf8.decode(decoded.subarray(colon + 1)) };
  } catch {
    return undefined;
  }
}

/** `user:hash[:comment]` lines as nginx reads them: `#` starts a comment line, the hash ends
 * at a colon or the end of the line, nothing is trimmed, and the first line of a user counts. */
export function parseUserFile(text: string): ReadonlyMap<string, string> {
  const users = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '' || line.startsWith('#')) continue;
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const user = line.slice(0, colon);
    const end = line.indexOf(':', colon + 1);
    if (!users.has(user)) users.set(user, line.slice(colon + 1, end < 0 ? undefined : end));
  }
  return users;
}

/** Whether `password` has `hash`, in the schemes nginx reads: `$apr1$`, `{PLAIN}`, `{SHA}`
 * and `{SSHA}` its own, and of those it leaves to the system's crypt(3) bcrypt, `$1$`,
 * SHA-crypt (`$5$`, `$6$`) and the traditional DES one. Anything else (yescrypt) never matches;
 * a bare password is not plain text to nginx either: crypt(3) of it never equals it. */
export function verifyPassword(password: string, hash: string): boolean | Promise<boolean> {
  if (hash.startsWith('$2a$') || hash.startsWith('$2b$') || hash.startsWith('$2y$')) {
    // Asynchronous, so the event loop keeps serving during the key schedule.
    return import('bcryptjs').then(({ default: bcrypt }) => bcrypt.compare(password, hash));
  }
  if (hash.startsWith('$apr1$') || hash.startsWith('$1$')) {
    // apache-md5 hashes one byte per character: hand it the UTF-8 bytes, as htpasswd would hash them.
    aprMd5 ??= require('apache-md5') as typeof import('apache-md5');
    return same(aprMd5(Buffer.from(password, 'utf8').toString('latin1'), hash), hash);
  }
  if (hash.startsWith('{PLAIN}')) return same(password, hash.slice(7));
  if (hash.startsWith('{SHA}')) return same(createHash('sha1').update(password).digest('base64'), hash.slice(5));
  if (hash.startsWith('{SSHA}')) {
    const decoded = Buffer.from(hash.slice(6), 'base64');
    if (decoded.length < 20) return false;
    const digest = createHash('sha1').update(password).update(decoded.subarray(20)).digest();
    return timingSafeEqual(digest, decoded.subarray(0, 20));
  }
  if (hash.startsWith('$5$') || hash.startsWith('$6$')) {
    const crypted = shaCrypt(Buffer.from(password, 'utf8'), hash);
    return crypted !== undefined && same(crypted, hash);
  }
  if (hash.startsWith('$') || hash.startsWith('{')) return false;
  // crypt(3) takes the salt from the first two characters, and nginx compares the whole.
  const crypted = desCrypt(Buffer.from(password, 'utf8'), hash);
  return crypted !== undefined && same(crypted, hash);
}

/** Constant-time string equality: comparing digests hides the lengths too. */
function same(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/** The realm as a quoted-string, and as node:http sends header strings (one byte per
 * character): quotes and backslashes escaped, control characters (which node refuses in a
 * header) as spaces, and a realm beyond ASCII as its UTF-8 bytes, which is what nginx sends. */
function quoteRealm(realm: string): string {
  const quoted = realm.replace(/[\\"]/g, '\\$&').replace(/[\x00-\x08\x0a-\x1f\x7f]/g, ' ');
  return /[^\x00-\x7f]/.test(quoted) ? Buffer.from(quoted, 'utf8').toString('latin1') : quoted;
}
