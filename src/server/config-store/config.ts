// config_store, declared beside the store it starts (store.ts): a fleet of zonal
// instances keeps the upstreams' peers in one etcd (issue 34).
//
//   config_store etcd://host:port[,host:port...]/prefix [cert=file] [key=file] [ca=file]
//                [user=name] [password_file=file] [timeout=time] [cache=file];     main
//
// In the main context: it spans the http and the stream blocks, as the primary that
// holds the client does. `ca=` (with or without a client `cert=`/`key=`) speaks TLS to
// the endpoints; `user=`/`password_file=` authenticate. `timeout=` bounds a write and a
// connection attempt (default 3s). `cache=` is where the last applied configuration is
// kept for a start while etcd is unreachable (default `config_store.json` in the prefix).
import fs from 'node:fs';
import { define, milliseconds, type DirectiveSpec } from '../config/spec.js';
import type { Checker } from '../config/levels.js';
import type { Origin } from '../config/model.js';

/** What `config_store` says, as the primary's store uses it. */
export interface ConfigStoreConfig {
  /** `host:port` of each endpoint, in order. */
  readonly endpoints: readonly string[];
  /** The keys' prefix, without a trailing slash (`/zonal`). */
  readonly prefix: string;
  /** Absolute paths. */
  readonly cert?: string;
  readonly key?: string;
  readonly ca?: string;
  readonly user?: string;
  readonly passwordFile?: string;
  /** Milliseconds. */
  readonly timeout: number;
  /** Absolute: the last applied configuration, for a start without etcd. */
  readonly cache: string;
}

declare module '../config/levels.js' {
  interface MainLevel {
    configStore?: ConfigStoreConfig;
  }
}
declare module '../config/model.js' {
  interface ServerConfig {
    /** `config_store`: the upstreams' peers are kept in etcd. */
    readonly configStore?: ConfigStoreConfig;
  }
}

export const DEFAULT_STORE_TIMEOUT_MS = 3000;
const USAGE = 'it must be etcd://host:port[,host:port...]/prefix';
const FILES = ['cert', 'key', 'ca', 'password_file'] as const;

/** `host:port`, `[v6]:port`: the endpoint as the client dials it, or undefined. */
function endpoint(text: string): string | undefined {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(text);
  if (!m) return undefined;
  const port = Number(m[2]);
  return port >= 1 && port <= 65535 ? `${m[1]}:${port}` : undefined;
}

/** The URL's endpoints and prefix, or why it is refused. */
export function parseStoreUrl(url: string): { endpoints: string[]; prefix: string } | { error: string } {
  const m = /^etcd:\/\/([^/]*)(\/.*)?$/.exec(url);
  if (!m) return { error: `invalid URL "${url}" in "config_store" directive, ${USAGE}` };
  const endpoints: string[] = [];
  for (const part of m[1].split(',')) {
    const e = endpoint(part);
    if (!e) return { error: `invalid endpoint "${part}" in "config_store" directive, ${USAGE}` };
    endpoints.push(e);
  }
  const prefix = (m[2] ?? '').replace(/\/+$/, '');
  if (prefix === '' || /\/\/|[\s\0]/.test(prefix)) return { error: `invalid prefix "${m[2] ?? ''}" in "config_store" directive, ${USAGE}` };
  return { endpoints, prefix };
}

/** A file the primary reads at start: checked at `-t` (a worker, reading the primary's
 * snapshot, has no disk to look at). */
function readable(file: string, param: string, at: Origin, c: Checker): void {
  if (!c.disk) return;
  try {
    fs.accessSync(file, fs.constants.R_OK);
  } catch (e) {
    c.error(at, `cannot read "${file}" of "${param}=" in "config_store" directive (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

export const configStoreDirectives: Record<string, DirectiveSpec> = {
  config_store: define({
    contexts: ['main'],
    args: [1, 9],
    apply(d, main, c) {
      const url = parseStoreUrl(d.args[0]);
      if ('error' in url) return c.error(d.origin, url.error);
      const set: { -readonly [K in keyof ConfigStoreConfig]?: ConfigStoreConfig[K] } = { ...url, timeout: DEFAULT_STORE_TIMEOUT_MS };
      for (const arg of d.args.slice(1)) {
        const eq = arg.indexOf('=');
        const name = eq > 0 ? arg.slice(0, eq) : arg;
        const value = eq > 0 ? arg.slice(eq + 1) : '';
        if (eq <= 0 || value === '') return c.error(d.origin, `invalid parameter "${arg}"`);
        if ((FILES as readonly string[]).includes(name)) {
          const file = c.path(value, 'conf');
          readable(file, name, d.origin, c);
          if (name === 'password_file') set.passwordFile = file;
          else set[name as 'cert' | 'key' | 'ca'] = file;
        } else if (name === 'user') set.user = value;
        else if (name === 'cache') set.cache = c.path(value, 'prefix');
        else if (name === 'timeout') {
          const ms = milliseconds(value);
          if (ms === undefined) return c.error(d.origin, `invalid timeout "${value}" in "config_store" directive`);
          set.timeout = ms;
        } else return c.error(d.origin, `invalid parameter "${arg}"`);
      }
      if ((set.cert === undefined) !== (set.key === undefined))
        return c.error(d.origin, `"config_store" directive needs both "cert=" and "key=" for a client certificate`);
      if ((set.cert !== undefined || set.key !== undefined) && set.ca === undefined)
        return c.error(d.origin, `"config_store" directive needs "ca=" to speak TLS with a client certificate`);
      if ((set.user === undefined) !== (set.passwordFile === undefined))
        return c.error(d.origin, `"config_store" directive needs both "user=" and "password_file=" to authenticate`);
      set.cache ??= c.path('config_store.json', 'prefix');
      main.configStore = set as ConfigStoreConfig;
    },
  }),
};
