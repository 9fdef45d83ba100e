// The directive table: one entry per directive with where it may be written, how many
// arguments it takes and what it does to its block. Adding a directive is adding an
// entry; walk.ts applies the generic checks for every entry. As in nginx, two directives
// of different contexts may share a name (`if` in a location and in a server, `server`
// in http and in upstream): the entry is then a list, or entries of different tables,
// and the context picks one.
import type { Checker, IfLevel, InheritableLevel, LocationLevel, ServerIfLevel, ServerLevel } from './levels.js';
import type { IfCondition } from './model.js';
import { MAX_GROUP_COUNT } from '../../metrics/zone-groups.js';
import { normaliseOrigin } from '../../api/origin.js';
import { limitDirectives } from '../limits/config.js';
import { streamDirectives } from '../stream/config.js';
import { compileRegex } from './regex.js';
import { cacheDirectives } from '../cache/config.js';
import { headerDirectives } from '../headers/config.js';
import { checkResolvers, resolverDirectives } from '../resolver/config.js';
import { probeDirectives } from '../probes/config.js';
import { dashboardDirectives } from '../dashboard/config.js';
import { histogramDirectives } from '../histograms/config.js';
import { runtimeDirectives } from '../runtime/config.js';
import { conditionVariable, parseIfCondition } from './condition.js';
import { checkServerAddresses, checkServer } from './servers.js';
import { define, type DirectiveSpec } from './spec.js';
import { checkReadable, resolvePath } from './files.js';
import { milliseconds } from './numbers.js';
import { upstreamDirectives } from '../upstream/config.js';
import { proxyDirectives } from '../proxy/config.js';
import { eachDirective, type Directive } from './syntax.js';

export type { DirectiveSpec } from './spec.js';
import {
  checkAccessAddress,
  checkApiPath,
  checkServerName,
  checkVariables,
  isZoneName,
  parseListenAddress,
  parseLocation,
  parseReturn,
  requestVariable,
} from './values.js';

const inheritable = ['http', 'server', 'location'] as const;

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
    proxySetHeaders: [],
    locations: [],
    ifs: [],
  };
}

/** The condition of an `if` directive, or undefined after its error. */
function ifCondition(d: Directive, c: Checker): IfCondition | undefined {
  const parsed = parseIfCondition(d.args);
  if (parsed.error !== undefined) return void c.error(d.origin, `${parsed.error} in "if" directive`);
  const condition = parsed.value;
  // A file test's path, as every path of the configuration, is relative to its file.
  if (condition.kind === 'file' && !condition.path.startsWith('/') && !condition.path.startsWith('$')) return { ...condition, path: resolvePath(d, condition.path) };
  return condition;
}

/** One answers a block's requests: which one would be an accident of the phases. */
function checkContent(level: LocationLevel | IfLevel, what: string, c: Checker): void {
  if (level.api && level.return) c.error(level.api.origin, `"api" and "return" cannot be in the same ${what}`);
  const proxy = level.proxyPass;
  if (proxy && level.api) c.error(proxy.origin, `"proxy_pass" and "api" cannot be in the same ${what}`);
  if (proxy && level.return) c.error(proxy.origin, `"proxy_pass" and "return" cannot be in the same ${what}`);
}

/** An admin server is served by the primary's API listener: it answers API requests,
 * redirects and access checks, and nothing that serves files or counts traffic. */
function checkAdminDirectives(block: readonly Directive[], c: Checker): void {
  eachDirective(block, (d) => {
    // Directives already wrong where they are (unknown, wrong context) are reported once.
    const spec = specsOf(d.name).find((s) => s.contexts.some((k) => k === 'server' || k === 'location'));
    if (spec && !spec.admin) c.error(d.origin, `"${d.name}" directive is not allowed in an admin server`);
    // The admin listener answers from the API's request, which has no node:http request
    // for the variables to read.
    else if (d.name === 'return' && d.args.some((a) => a.includes('$'))) c.error(d.origin, `variables in "return" are not supported in an admin server`);
  });
}

/** The modules that declare their directives beside their code. */
const modules: ReadonlyArray<Readonly<Record<string, DirectiveSpec>>> = [
  limitDirectives,
  upstreamDirectives,
  proxyDirectives,
  streamDirectives,
  cacheDirectives,
  headerDirectives,
  resolverDirectives,
  probeDirectives,
  dashboardDirectives,
  histogramDirectives,
  runtimeDirectives,
];

/** The entries of a directive's name: none when it is unknown. */
export function specsOf(name: string): readonly DirectiveSpec[] {
  const own = modules.filter((m) => Object.hasOwn(m, name)).map((m) => m[name]);
  if (!Object.hasOwn(directives, name)) return own;
  const entry: DirectiveSpec | readonly DirectiveSpec[] = directives[name];
  return [...(isList(entry) ? entry : [entry]), ...own];
}

const isList = (entry: DirectiveSpec | readonly DirectiveSpec[]): entry is readonly DirectiveSpec[] => Array.isArray(entry);

export const directives: Readonly<Record<string, DirectiveSpec | readonly DirectiveSpec[]>> = {
  include: define({
    contexts: ['main', 'http', 'server', 'location', 'upstream'],
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
      const http = (main.http = { kind: 'http', seen: new Set(), access: [], proxySetHeaders: [], servers: [], upstreams: [] });
      c.walk(d.block ?? [], http);
      checkServerAddresses(http.servers, c);
      checkResolvers(http, c);
    },
  }),

  // An upstream's `server` is the upstream module's (upstream/config.ts).
  server: define({
    contexts: ['http'],
    args: [0, 0],
    block: true,
    multiple: true,
    apply(d, http, c) {
      const server: ServerLevel = { kind: 'server', seen: new Set(), directive: d, listens: [], names: [], access: [], proxySetHeaders: [], locations: [], ifs: [] };
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

  // `status_zone <zone>`, `status_zone off`, or Angie 1.8's `status_zone <key>
  // zone=<name>[:<count>]`: each request's key names its zone, made at run time, up to
  // `count` zones of the group `<name>`; past them (and without a count) requests count in
  // `<name>` itself (metrics/zone-groups.ts).
  status_zone: define({
    contexts: ['server', 'location', 'if'],
    args: [1, 2],
    apply(d, level, c) {
      const [name, group] = d.args;
      if (group === undefined) {
        if (name === 'off' && level.kind !== 'server') level.statusZone = false;
        else if (name === 'off') c.error(d.origin, `"status_zone off" is allowed only in a location`);
        else if (name.includes('$'))
          c.error(d.origin, `"status_zone ${name}" has variables: the zone a key names needs a group, "status_zone ${name} zone=<name>:<count>"`);
        else if (!isZoneName(name)) c.error(d.origin, `invalid zone name "${name}" in "status_zone" directive: letters, digits, "_", "-" and "." only`);
        else level.statusZone = name;
        return;
      }
      const spec = /^zone=([^:]*)(?::(.*))?$/.exec(group);
      if (!spec || name === 'off') return c.error(d.origin, `invalid parameter "${name === 'off' ? name : group}"`);
      const [, zone, countArg] = spec;
      if (!isZoneName(zone)) return c.error(d.origin, `invalid zone name "${zone}" in "status_zone" directive: letters, digits, "_", "-" and "." only`);
      const count = countArg === undefined ? 0 : /^\d{1,6}$/.test(countArg) ? Number(countArg) : NaN;
      if (!(count >= (countArg === undefined ? 0 : 1) && count <= MAX_GROUP_COUNT))
        return c.error(d.origin, `invalid zone count "${countArg}" in "status_zone" directive: a whole number from 1 to ${MAX_GROUP_COUNT}`);
      // The request's variables, and in a location a regex location's captures.
      const error = checkVariables(name, (v) => requestVariable(v) || v === 'server_name' || (level.kind !== 'server' && /^[1-9]$/.test(v)));
      if (error) return c.error(d.origin, error);
      level.statusZone = zone;
      level.statusZoneKey = { key: name, count };
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
      const ms = milliseconds(d.args[0]);
      if (ms === undefined) c.error(d.origin, `invalid value "${d.args[0]}" in "${d.name}" directive`);
      else server.sslHandshakeTimeout = ms;
    },
  }),

  // nginx lets a second `return` pass silently (the first one answers); zonal calls it
  // duplicate, since it can only be a mistake.
  return: define({
    contexts: ['server', 'location', 'if', 'server_if'],
    args: [1, 2],
    admin: true,
    apply(d, level, c) {
      const parsed = parseReturn(d.args);
      if (parsed.error !== undefined) return c.error(d.origin, parsed.error);
      const text = parsed.value.text;
      const error = text === undefined ? undefined : checkVariables(text, conditionVariable);
      if (error) return c.error(d.origin, error);
      level.return = { value: parsed.value, origin: d.origin };
      // nginx runs a location's `return` and `if` blocks in the order written.
      if (level.kind === 'location' || level.kind === 'server') level.ifsBeforeReturn = level.ifs.length;
    },
  }),

  root: define({
    contexts: [...inheritable, 'if'],
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
      checkContent(location, 'location', c);
    },
  }),

  if: [
    // nginx's `if` in a location: an implicit nested location (levels.ts, IfLevel). The
    // directives allowed in it are those whose entry names the `if` context.
    define({
      contexts: ['location'],
      args: [1, Infinity],
      block: true,
      multiple: true,
      apply(d, location, c) {
        const condition = ifCondition(d, c);
        const block: IfLevel = {
          kind: 'if',
          seen: new Set(),
          origin: d.origin,
          modifier: location.modifier,
          path: location.path,
          ...(condition ? { condition } : {}),
          access: [],
          proxySetHeaders: [],
        };
        location.ifs.push(block);
        c.walk(d.block ?? [], block);
        checkContent(block, '"if" block', c);
      },
    }),
    // In a server: before locations are searched, a `return` (the context `server_if`).
    define({
      contexts: ['server'],
      args: [1, Infinity],
      block: true,
      multiple: true,
      apply(d, server, c) {
        const condition = ifCondition(d, c);
        const block: ServerIfLevel = { kind: 'server_if', seen: new Set(), origin: d.origin, ...(condition ? { condition } : {}) };
        server.ifs.push(block);
        c.walk(d.block ?? [], block);
      },
    }),
  ],

  api: define({
    contexts: ['location', 'if'],
    args: [1, 1],
    admin: true,
    apply(d, location, c) {
      const error = checkApiPath(d.args[0]);
      if (error) c.error(d.origin, `${error} in "api" directive`);
      else location.api = { value: d.args[0], origin: d.origin };
    },
  }),

  api_origins: define({
    contexts: inheritable,
    args: [1, 64],
    admin: true,
    apply(d, level, c) {
      const origins: string[] = [];
      for (const arg of d.args) {
        const origin = normaliseOrigin(arg);
        if (origin === undefined) return void c.error(d.origin, `invalid origin "${arg}" in "api_origins" directive, it must be http://<host>[:<port>] or https://<host>[:<port>]`);
        origins.push(origin);
      }
      level.apiOrigins = origins;
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
