// The directive table: one entry per directive with where it may be written, how many
// arguments it takes and what it does to its block. Adding a directive (`upstream`,
// `proxy_pass`) is adding an entry; walk.ts applies the generic checks for every entry.
import fs from 'node:fs';
import path from 'node:path';
import type { Checker, Context, AnyLevel, InheritableLevel, LocationLevel, ServerLevel } from './levels.js';
import { parseTime } from '../../metrics/peers.js';
import { compileRegex } from './regex.js';
import { checkServerAddresses, checkServer } from './servers.js';
import { eachDirective, type Directive } from './syntax.js';
import { checkAccessAddress, checkApiPath, checkServerName, isZoneName, parseListenAddress, parseLocation, parseReturn } from './values.js';

export interface DirectiveSpec<L extends AnyLevel = AnyLevel> {
  readonly contexts: readonly L['kind'][];
  /** Least and most arguments. */
  readonly args: readonly [number, number];
  /** Takes a `{ ... }` block instead of ending with `;`. */
  readonly block?: boolean;
  /** May appear more than once in a block; otherwise a second one `is duplicate`. */
  readonly multiple?: boolean;
  /** May appear in an admin server and its locations. */
  readonly admin?: boolean;
  /** Called once the generic checks passed: the arguments' count is right. */
  apply(d: Directive, level: L, c: Checker): void;
}

type LevelOf<K extends Context> = Extract<AnyLevel, { kind: K }>;

/** Types an entry by its contexts, so `apply` gets the blocks it can be in. */
const define = <const K extends Context>(spec: DirectiveSpec<LevelOf<K>> & { contexts: readonly K[] }) =>
  spec as unknown as DirectiveSpec;

const inheritable = ['http', 'server', 'location'] as const;

/** A path in a directive is relative to the file the directive is written in. */
const resolvePath = (d: Directive, arg: string) => path.resolve(path.dirname(d.origin.file), arg);

/** Certificates, keys and htpasswd files are read by others at run time; a typo should
 * still fail `zonal -t`, so when reading from the disk they must be readable files now. */
function checkReadable(file: string, d: Directive, c: Checker): void {
  if (!c.disk) return;
  try {
    if (!fs.statSync(file).isFile()) {
      c.error(d.origin, `"${file}" of the "${d.name}" directive is not a file`);
      return;
    }
    fs.accessSync(file, fs.constants.R_OK);
  } catch (e) {
    c.error(d.origin, `cannot read "${file}" of the "${d.name}" directive (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

function access(allow: boolean) {
  return define({
    contexts: inheritable,
    args: [1, 1],
    multiple: true,
    admin: true,
    apply(d, level: InheritableLevel, c) {
      const error = checkAccessAddress(d.args[0]);
      if (error) c.error(d.origin, `${error} in "${d.name}" directive`);
      else level.access.push({ allow, address: d.args[0], origin: d.origin });
    },
  });
}

function newLocation(d: Directive, parent: ServerLevel | LocationLevel, c: Checker): LocationLevel | undefined {
  const parsed = parseLocation(d.args);
  if (parsed.error !== undefined) {
    c.error(d.origin, parsed.error);
    return undefined;
  }
  const { modifier, path: uri } = parsed.value;
  let regex: RegExp | undefined;
  if (modifier === '~' || modifier === '~*') {
    try {
      regex = compileRegex(uri, modifier === '~*');
    } catch (e) {
      c.error(d.origin, `invalid regular expression "${uri}" in "location" directive: ${(e as Error).message}`);
    }
  }
  if (parent.kind === 'location') {
    // nginx's rules for nested locations.
    if (parent.modifier === '=') c.error(d.origin, `location "${uri}" cannot be inside the exact location "${parent.path}"`);
    else if (modifier !== '~' && modifier !== '~*' && !uri.startsWith(parent.path)) c.error(d.origin, `location "${uri}" is outside location "${parent.path}"`);
  }
  // A `^~` location is a prefix location: it and a plain one of the same path collide.
  const prefix = (m: string) => (m === '^~' ? '' : m);
  if (parent.locations.some((l) => l.path === uri && prefix(l.modifier) === prefix(modifier))) c.error(d.origin, `duplicate location "${uri}"`);
  return {
    kind: 'location',
    seen: new Set(),
    origin: d.origin,
    modifier,
    path: uri,
    ...(regex ? { regex } : {}),
    access: [],
    locations: [],
  };
}

/** An admin server is served by the primary's API listener: it answers API requests,
 * redirects and access checks, and nothing that serves files or counts traffic. */
function checkAdminDirectives(block: readonly Directive[], c: Checker): void {
  eachDirective(block, (d) => {
    const spec = Object.hasOwn(directives, d.name) ? directives[d.name] : undefined;
    // Directives already wrong where they are (unknown, wrong context) are reported once.
    const here = spec?.contexts.some((k) => k === 'server' || k === 'location');
    if (spec && here && !spec.admin) c.error(d.origin, `"${d.name}" directive is not allowed in an admin server`);
  });
}

export const directives: Readonly<Record<string, DirectiveSpec>> = {
  include: define({
    contexts: ['main', 'http', 'server', 'location'],
    args: [1, 1],
    multiple: true,
    admin: true,
    apply: (d, level, c) => c.walk(d.included ?? [], level),
  }),

  worker_processes: define({
    contexts: ['main'],
    args: [1, 1],
    apply(d, main, c) {
      const [arg] = d.args;
      if (arg === 'auto') main.workerProcesses = c.cpus;
      else if (/^\d{1,3}$/.test(arg) && Number(arg) >= 1 && Number(arg) <= 128) main.workerProcesses = Number(arg);
      else c.error(d.origin, `invalid value "${arg}" in "worker_processes" directive, it must be "auto" or a number from 1 to 128`);
    },
  }),

  http: define({
    contexts: ['main'],
    args: [0, 0],
    block: true,
    apply(d, main, c) {
      const http = (main.http = { kind: 'http', seen: new Set(), access: [], servers: [] });
      c.walk(d.block ?? [], http);
      checkServerAddresses(http.servers, c);
    },
  }),

  server: define({
    contexts: ['http'],
    args: [0, 0],
    block: true,
    multiple: true,
    apply(d, http, c) {
      const server: ServerLevel = { kind: 'server', seen: new Set(), directive: d, listens: [], names: [], access: [], locations: [] };
      http.servers.push(server);
      c.walk(d.block ?? [], server);
      checkServer(server, c);
      if (server.listens.some((l) => l.admin)) checkAdminDirectives(d.block ?? [], c);
    },
  }),

  listen: define({
    contexts: ['server'],
    args: [1, 4],
    multiple: true,
    admin: true,
    apply(d, server, c) {
      const [address, ...params] = d.args;
      const parsed = parseListenAddress(address);
      if (parsed.error !== undefined) return c.error(d.origin, parsed.error);
      const bad = params.find((p) => p !== 'ssl' && p !== 'admin' && p !== 'default_server');
      if (bad !== undefined) return c.error(d.origin, `invalid parameter "${bad}"`);
      server.listens.push({
        ...parsed.value,
        ssl: params.includes('ssl'),
        admin: params.includes('admin'),
        defaultServer: params.includes('default_server'),
        origin: d.origin,
      });
    },
  }),

  server_name: define({
    contexts: ['server'],
    args: [1, Infinity],
    multiple: true,
    admin: true,
    apply(d, server, c) {
      for (const arg of d.args) {
        const checked = checkServerName(arg);
        if (checked.error !== undefined) c.error(d.origin, checked.error);
        else server.names.push(checked.value);
      }
    },
  }),

  status_zone: define({
    contexts: ['server', 'location'],
    args: [1, 1],
    apply(d, level, c) {
      const [name] = d.args;
      if (name === 'off' && level.kind === 'location') level.statusZone = false;
      else if (name === 'off') c.error(d.origin, `"status_zone off" is allowed only in a location`);
      else if (!isZoneName(name)) c.error(d.origin, `invalid zone name "${name}" in "status_zone" directive: letters, digits, "_", "-" and "." only`);
      else level.statusZone = name;
    },
  }),

  ssl_certificate: define({
    contexts: ['server'],
    args: [1, 1],
    apply(d, server, c) {
      server.sslCertificate = resolvePath(d, d.args[0]);
      checkReadable(server.sslCertificate, d, c);
    },
  }),

  ssl_certificate_key: define({
    contexts: ['server'],
    args: [1, 1],
    apply(d, server, c) {
      server.sslCertificateKey = resolvePath(d, d.args[0]);
      checkReadable(server.sslCertificateKey, d, c);
    },
  }),

  // How long a TLS handshake may take (nginx 1.25's directive, default 60s): a client that
  // stalls it is counted in `ssl.timedout`.
  ssl_handshake_timeout: define({
    contexts: ['server'],
    args: [1, 1],
    apply(d, server, c) {
      const seconds = parseTime(d.args[0], true);
      if (seconds === undefined || seconds <= 0) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
      else server.sslHandshakeTimeout = seconds * 1000;
    },
  }),

  // nginx lets a second `return` pass silently (the first one answers); zonal calls it
  // duplicate, since it can only be a mistake.
  return: define({
    contexts: ['server', 'location'],
    args: [1, 2],
    admin: true,
    apply(d, level, c) {
      const parsed = parseReturn(d.args);
      if (parsed.error !== undefined) c.error(d.origin, parsed.error);
      else level.return = { value: parsed.value, origin: d.origin };
    },
  }),

  root: define({
    contexts: inheritable,
    args: [1, 1],
    apply(d, level) {
      level.root = resolvePath(d, d.args[0]);
    },
  }),

  allow: access(true),
  deny: access(false),

  auth_basic: define({
    contexts: inheritable,
    args: [1, 1],
    admin: true,
    apply(d, level) {
      level.authBasic = { value: d.args[0] === 'off' ? false : d.args[0], origin: d.origin };
    },
  }),

  auth_basic_user_file: define({
    contexts: inheritable,
    args: [1, 1],
    admin: true,
    apply(d, level, c) {
      level.authUserFile = resolvePath(d, d.args[0]);
      checkReadable(level.authUserFile, d, c);
    },
  }),

  location: define({
    contexts: ['server', 'location'],
    args: [1, 2],
    block: true,
    multiple: true,
    admin: true,
    apply(d, parent, c) {
      const location = newLocation(d, parent, c);
      if (!location) return;
      parent.locations.push(location);
      c.walk(d.block ?? [], location);
      if (location.api && location.return) c.error(location.api.origin, `"api" and "return" cannot be in the same location`);
    },
  }),

  api: define({
    contexts: ['location'],
    args: [1, 1],
    admin: true,
    apply(d, location, c) {
      const error = checkApiPath(d.args[0]);
      if (error) c.error(d.origin, `${error} in "api" directive`);
      else location.api = { value: d.args[0], origin: d.origin };
    },
  }),

  api_config_files: define({
    contexts: ['location'],
    args: [1, 1],
    admin: true,
    apply(d, location, c) {
      const [arg] = d.args;
      if (arg === 'on' || arg === 'off') location.apiConfigFiles = arg === 'on';
      else c.error(d.origin, `invalid value "${arg}" in "api_config_files" directive, it must be "on" or "off"`);
    },
  }),
};
