// The HTTP core module's directives (ngx_http_core_module), composed into the loader's
// table by config/directives.ts:
//
//   http { ... }                                   main
//   server { ... }                                 http
//   listen <address> [ssl] [default_server] [proxy_protocol] [http2] [admin];   server
//   server_name <name> ...;                        server
//   location [= | ~ | ~* | ^~] <uri> { ... }       server, location
//   root <path>;                                   http, server, location, if
//   limit_except <method> ... { ... }              location
//   status_zone <zone> | off | <key> zone=<name>[:<count>];   server, location, if
import type { Checker, IfLevel, LimitExceptLevel, LocationLevel, ServerLevel } from '../config/levels.js';
import { define, type DirectiveSpec } from '../config/spec.js';
import { eachDirective, type Directive } from '../config/syntax.js';
import { checkServerName, checkVariables, isZoneName, parseListenAddress, parseLocation } from '../config/values.js';
import { knownHttpVariable } from '../config/variables.js';
import { compileRegex } from '../config/regex.js';
import { MAX_GROUP_COUNT } from '../../metrics/zone-groups.js';
import { checkResolvers } from '../resolver/config.js';
import { checkServer, checkServerAddresses, checkServerCertificates } from './server-check.js';
import { HTTP3_REFUSED, warnHttp2 } from '../http2/config.js';

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
  // A named location is the server's alone, and has none inside it (nginx's rules).
  if (modifier === '@' && parent.kind === 'location') c.error(d.origin, `named location "${uri}" can be on the server level only`);
  else if (parent.kind === 'location' && parent.modifier === '@') c.error(d.origin, `location "${uri}" could not be inside the named location "${parent.path}"`);
  else if (parent.kind === 'location') {
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
    script: [],
  };
}

/** One answers a block's requests: which one would be an accident of the phases. */
export function checkContent(level: LocationLevel | IfLevel, what: string, c: Checker): void {
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
    const spec = c.specsOf(d.name).find((s) => s.contexts.some((k) => k === 'server' || k === 'location'));
    if (spec && !spec.admin) c.error(d.origin, `"${d.name}" directive is not allowed in an admin server`);
    // The admin listener answers from the API's request, which has no node:http request
    // for the variables to read.
    else if (d.name === 'return' && d.args.some((a) => a.includes('$'))) c.error(d.origin, `variables in "return" are not supported in an admin server`);
  });
}

/** The HTTP core module's entries. `server` of an upstream is the upstream module's: the
 * loader's table lists both under the one name. */
export const httpCoreDirectives: Readonly<Record<string, DirectiveSpec>> = {
  http: define({
    contexts: ['main'],
    args: [0, 0],
    block: true,
    apply(d, main, c) {
      const http = (main.http = { kind: 'http', seen: new Set(), access: [], proxySetHeaders: [], servers: [], upstreams: [] });
      c.walk(d.block ?? [], http);
      checkServerCertificates(http, c);
      checkServerAddresses(http.servers, c);
      checkResolvers(http, c);
    },
  }),

  server: define({
    contexts: ['http'],
    args: [0, 0],
    block: true,
    multiple: true,
    apply(d, http, c) {
      const server: ServerLevel = { kind: 'server', seen: new Set(), directive: d, listens: [], names: [], access: [], proxySetHeaders: [], locations: [], ifs: [], script: [] };
      http.servers.push(server);
      c.walk(d.block ?? [], server);
      checkServer(server, c);
      if (server.listens.some((l) => l.admin)) checkAdminDirectives(d.block ?? [], c);
    },
  }),

  listen: define({
    contexts: ['server'],
    args: [1, 6],
    multiple: true,
    admin: true,
    apply(d, server, c) {
      const [address, ...params] = d.args;
      const parsed = parseListenAddress(address);
      if (parsed.error !== undefined) return c.error(d.origin, parsed.error);
      const bad = params.find((p) => p !== 'ssl' && p !== 'admin' && p !== 'default_server' && p !== 'proxy_protocol' && p !== 'http2');
      if (bad === 'quic' || bad === 'http3') return c.error(d.origin, HTTP3_REFUSED(bad));
      if (bad !== undefined) return c.error(d.origin, `invalid parameter "${bad}"`);
      if (params.includes('http2')) warnHttp2(d.origin, c);
      const proxyProtocol = params.includes('proxy_protocol');
      if (proxyProtocol && (params.includes('ssl') || params.includes('admin'))) return c.error(d.origin, `the "proxy_protocol" parameter goes with a plain HTTP listen only, not "${params.includes('ssl') ? 'ssl' : 'admin'}"`);
      // The admin listener is uWebSockets.js's, which listens on TCP only.
      if (parsed.value.port === 0 && params.includes('admin')) return c.error(d.origin, `the "admin" parameter is not allowed on "${address}": admin listens are TCP`);
      server.listens.push({
        ...parsed.value,
        ssl: params.includes('ssl'),
        admin: params.includes('admin'),
        defaultServer: params.includes('default_server'),
        ...(proxyProtocol ? { proxyProtocol } : {}),
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
      const error = checkVariables(name, knownHttpVariable);
      if (error) return c.error(d.origin, error);
      level.statusZone = zone;
      level.statusZoneKey = { key: name, count };
    },
  }),

  root: define({
    contexts: ['http', 'server', 'location', 'if'],
    args: [1, 1],
    apply(d, level, c) {
      if (level.content?.alias) return c.error(d.origin, `"root" directive is duplicate, "alias" directive was specified earlier`);
      level.root = c.path(d.args[0], 'prefix');
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

  // The methods it lists pass as the location says; any other is checked against the
  // block's own `allow`/`deny` and `auth_basic` (merged from the location's).
  limit_except: define({
    contexts: ['location'],
    args: [1, Infinity],
    block: true,
    admin: true,
    apply(d, location, c) {
      const methods = new Set<string>();
      for (const arg of d.args) {
        if (!LIMITABLE.has(arg)) return c.error(d.origin, `invalid method "${arg}"`);
        methods.add(arg);
        if (arg === 'GET') methods.add('HEAD');
      }
      const block: LimitExceptLevel = { kind: 'limit_except', seen: new Set(), origin: d.origin, methods: [...methods], access: [], proxySetHeaders: [] };
      location.limitExcept = block;
      c.walk(d.block ?? [], block);
    },
  }),
};

/** The methods `limit_except` names, as nginx's list has them. */
const LIMITABLE = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'MKCOL', 'COPY', 'MOVE', 'OPTIONS', 'PROPFIND', 'PROPPATCH', 'LOCK', 'UNLOCK', 'PATCH']);
